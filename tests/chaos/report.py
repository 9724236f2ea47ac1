"""Summarise a chaos results file (JSON lines from tests.chaos.record) as markdown tables,
one per section, one row per record: `python -m tests.chaos.report chaos-results.jsonl`."""

from __future__ import annotations

import json
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


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.chaos.report RESULTS.jsonl", file=sys.stderr)
        return 2
    path = Path(argv[0])
    if not path.is_file():
        print(f"{path}: no such results file (make chaos writes it)", file=sys.stderr)
        return 2
    print(markdown(load(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
