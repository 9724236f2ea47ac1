"""Kubernetes-style durations and booleans for flags: `30s`, `5m`, `1h30m`, `250ms`;
`--flag`, `--flag=true`, `--flag=false`."""

from __future__ import annotations

import argparse
import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds. A bare number is refused: units are what make a duration unambiguous."""
    value = text.strip()
    parts = _PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: expected a number with a unit, like 30s, 5m or 1h30m"
        )
    return sum(float(number) * _UNIT[unit] for number, unit in parts)


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}: expected true or false")
