"""Figures for docs/reliability.md: every chaos test reports what it injected and what held.

A test calls `record(section, case, **figures)`; the figures go to the JSON-lines file named
by CHAOS_REPORT_FILE (`make chaos` sets it) and nowhere else, so the short runs inside
`make test` write nothing. `python -m tests.chaos.report FILE` summarises a file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

_lock = threading.Lock()


def record(section: str, case: str, **figures: Any) -> None:
    path = os.environ.get("CHAOS_REPORT_FILE")
    if not path:
        return
    line = json.dumps(
        {"section": section, "case": case, "at": time.time(), **figures},
        sort_keys=True,
        default=str,
    )
    with _lock, open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
