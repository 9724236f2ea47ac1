"""A file the user names (a settings file, a cluster snapshot), read as text: a failure is
one line that says which file and what it should have been, never a traceback."""

from __future__ import annotations

from pathlib import Path


def read_utf8(path: Path, where: str, expected: str, error: type[Exception]) -> str:
    """The file's text, or `error("{where}: <why>")`; `expected` says what the file should
    hold, for a file that is not text."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise error(f"{where}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start}); expected {expected}") from exc
