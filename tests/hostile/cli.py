"""Run the real CLI entry point in-process, in a worker thread so a command that wrongly
starts (and would block for ever) fails the test instead of hanging it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from lbhc.cli import main


@dataclass(frozen=True)
class Outcome:
    code: int | str | None  # None: still running after the timeout
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_cli(
    capsys: pytest.CaptureFixture[str], argv: Sequence[str], timeout: float = 60.0
) -> Outcome:
    result: dict[str, int | str | None] = {"code": None}

    def target() -> None:
        try:
            result["code"] = main(list(argv))
        except SystemExit as exc:  # argparse's exits
            result["code"] = exc.code
        except BaseException as exc:  # a traceback: recorded, so the test says which
            result["code"] = f"raised {type(exc).__name__}: {exc}"

    thread = threading.Thread(target=target, name="lbhc-cli", daemon=True)
    thread.start()
    thread.join(timeout)
    out, err = capsys.readouterr()
    return Outcome(None if thread.is_alive() else result["code"], out, err)
