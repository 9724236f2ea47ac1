"""Summarise a chaos results file (JSON lines from tests.chaos.record) as markdown tables,
one per section, one row per record: `python -m tests.chaos.report chaos-results.jsonl`.
A section whose records name a `fault_class` gets a rollup too: one row per class with the
runs, the counters summed and the convergence times' median and maximum."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any


def load(path: Path) -> dict[str, list[dict[str, Any]]]:
    sections: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise SystemExit(f"{path}:{number}: not a JSON line ({exc})") from None
        sections[str(row.pop("section", "?"))].append(row)
    return sections


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def markdown(sections: dict[str, list[dict[str, Any]]]) -> str:
    out: list[str] = []
    for section, rows in sections.items():
        columns = ["case", *sorted({k for r in rows for k in r} - {"case", "at"})]
        out += [f"### {section}", "", "| " + " | ".join(columns) + " |"]
        out.append("|" + "---|" * len(columns))
        for row in rows:
            out.append("| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |")
        out.append("")
    return "\n".join(out)


ROLLUP_SUMS = ("faults_injected", "duplicates", "foreign_touched", "mutations")


def rollup(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per fault class: runs, summed counters, worst attempts, convergence median and max."""
    classes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if "fault_class" in row:
            classes[str(row["fault_class"])].append(row)
    out = []
    for fault_class, members in classes.items():
        times = [float(r["converge_s"]) for r in members if r.get("converge_s") is not None]
        summary: dict[str, Any] = {"case": fault_class, "runs": len(members)}
        for key in ROLLUP_SUMS:
            summary[key] = sum(int(r.get(key) or 0) for r in members)
        summary["attempts_max"] = max(int(r.get("attempts_max") or 0) for r in members)
        summary["converge_s_median"] = statistics.median(times) if times else None
        summary["converge_s_max"] = max(times) if times else None
        out.append(summary)
    return out


def with_rollups(sections: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    out = dict(sections)
    for section, rows in sections.items():
        if classes := rollup(rows):
            out[f"{section}: per fault class"] = classes
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.chaos.report RESULTS.jsonl", file=sys.stderr)
        return 2
    path = Path(argv[0])
    if not path.is_file():
        print(f"{path}: no such results file (make chaos writes it)", file=sys.stderr)
        return 2
    print(markdown(with_rollups(load(path))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
