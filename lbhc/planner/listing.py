"""Lists in one line for people: the first few items, then how many more. Reasons, Events
and warnings name nodes and pools this way so a line stays readable at thousands."""

from __future__ import annotations

from collections.abc import Sequence


def first_few(items: Sequence[str], limit: int, separator: str = ", ") -> str:
    """`a, b, c and 7 more`; with "; " (items that hold commas), `a; b; c; and 7 more`."""
    shown = separator.join(items[:limit])
    more = len(items) - limit
    if more <= 0:
        return shown
    before = "" if separator == ", " else separator.rstrip()
    return f"{shown}{before} and {more} more"
