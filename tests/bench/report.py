"""How every benchmark reports: a two-column table on stdout, the same figures as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(figures: dict[str, Any], json_path: Path | None) -> int:
    for key, value in figures.items():
        print(f"{key:36} {value}")
    if json_path is not None:
        json_path.write_text(json.dumps(figures, indent=2))
    return 0
