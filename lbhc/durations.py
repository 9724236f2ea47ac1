"""Values as Kubernetes components write them, for flags and settings alike: durations
(`30s`, `5m`, `1h30m`, `250ms`), booleans (`--flag`, `--flag=true`, `--flag=false`) and
listen addresses (`HOST:PORT`)."""

from __future__ import annotations

import argparse
import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)?$")
_MAX_PORT = 65535
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


def duration_text(seconds: float) -> str:
    """A duration as a person writes it: 300.0 -> 5m, 2.0 -> 2s, 0.25 -> 250ms."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 3600:g}h" if seconds % 3600 == 0 else f"{seconds / 60:g}m"
    return f"{seconds:g}s" if seconds >= 1 else f"{seconds * 1000:g}ms"


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}: expected true or false")


def positive_duration(text: str) -> float:
    seconds = parse_duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: expected more than zero, like 30s, 5m or 1h30m"
        )
    return seconds


def http_address(text: str) -> str:
    """HOST:PORT (port 0 picks a free one), checked before anything starts."""
    host, colon, port = text.rpartition(":")
    if not colon or not _HOST.match(host) or not port.isdigit() or int(port) > _MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"invalid address {text!r}: expected HOST:PORT such as 0.0.0.0:10258 "
            "or 127.0.0.1:0 (port 0 picks a free one)"
        )
    return text
