"""How every benchmark reports: a two-column table on stdout, the same figures as JSON, the
targets it judged (met / missed, measured against what), and, given the last results file,
what changed since then.

Figures are nested dicts; the table and the comparison flatten them to dotted keys.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

TARGETS = "targets"


def add_output_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="PATH",
        help="the last results file: print what changed (read before --json is written)",
    )


def target(
    key: str, what: str, measured: Any, goal: str, met: bool, why: str = ""
) -> dict[str, Any]:
    """One judged target. `key` is stable across runs (comparisons match on it)."""
    return {
        "key": key,
        "target": what,
        "measured": measured,
        "goal": goal,
        "status": "met" if met else "missed",
        "why": why,
    }


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}; lists of targets are left out (shown on their own)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if key == TARGETS:
                continue
            out.update(flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def collect_targets(figures: Any) -> list[dict[str, Any]]:
    """Every target anywhere in the figures, in order."""
    found: list[dict[str, Any]] = []
    if isinstance(figures, dict):
        for key, inner in figures.items():
            if key == TARGETS and isinstance(inner, list):
                found.extend(t for t in inner if isinstance(t, dict) and "key" in t)
            else:
                found.extend(collect_targets(inner))
    return found


def print_table(figures: dict[str, Any], width: int = 52) -> None:
    for key, value in flatten(figures).items():
        shown = json.dumps(value) if isinstance(value, list | dict) else value
        print(f"{key:{width}} {shown}")


def print_targets(targets: list[dict[str, Any]]) -> None:
    if not targets:
        return
    print()
    print(f"{'target':58} {'measured':>14}  {'goal':22} status")
    for t in targets:
        measured = t["measured"]
        shown = f"{measured:.3g}" if isinstance(measured, float) else str(measured)
        print(f"{t['target'][:58]:58} {shown:>14}  {t['goal'][:22]:22} {t['status'].upper()}")
        if t["status"] != "met" and t.get("why"):
            print(f"{'':4}why: {t['why']}")


def load(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def compare(old: dict[str, Any], new: dict[str, Any], threshold: float = 0.10) -> list[str]:
    """Lines describing what changed: every numeric figure present in both runs, flagged
    `!` when it moved by more than `threshold`; figures that appeared or went; targets that
    changed status (REGRESSED / NOW MET)."""
    lines: list[str] = []
    before, after = flatten(old), flatten(new)
    for key, value in after.items():
        if key not in before:
            continue
        was = before[key]
        if not _number(value) or not _number(was) or value == was:
            continue
        delta = value - was
        relative = delta / abs(was) if was else math.inf
        flag = "!" if abs(relative) > threshold else " "
        pct = f"{relative:+.0%}" if math.isfinite(relative) else "new"
        lines.append(f"{flag} {key:60} {_fmt(was):>12} -> {_fmt(value):>12}  ({pct})")
    appeared = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    if appeared:
        lines.append(f"  figures new since the last run: {', '.join(appeared[:20])}")
    if gone:
        lines.append(f"  figures no longer reported: {', '.join(gone[:20])}")
    old_targets = {t["key"]: t for t in collect_targets(old)}
    for t in collect_targets(new):
        previous = old_targets.get(t["key"])
        if previous is None or previous["status"] == t["status"]:
            continue
        word = "REGRESSED" if t["status"] == "missed" else "NOW MET"
        lines.append(
            f"{word}: {t['target']} (was {previous['measured']}, now {t['measured']}; "
            f"goal {t['goal']})"
        )
    return lines


def print_comparison(old_path: Path, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
    print()
    if old is None:
        print(f"compare: no previous results at {old_path}; nothing to compare")
        return
    lines = compare(old, new)
    print(f"compared with {old_path} ({len(lines)} change(s); ! = moved more than 10%):")
    for line in lines or ["  no figure changed"]:
        print(line)


def emit(figures: dict[str, Any], json_path: Path | None, compare_path: Path | None = None) -> int:
    """Table, targets, JSON, comparison. The old file is read before the new one is
    written, so --json and --compare may name the same path."""
    previous = load(compare_path)
    print_table(figures)
    print_targets(collect_targets(figures))
    if json_path is not None:
        json_path.write_text(json.dumps(figures, indent=2) + "\n")
    if compare_path is not None:
        print_comparison(compare_path, previous, figures)
    return 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
