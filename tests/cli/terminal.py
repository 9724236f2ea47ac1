"""`lbhc` as a process on a pseudo-terminal, for what only a terminal shows: the question,
the live progress line, and Ctrl-C."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


class Pty:
    """`lbhc` as a process whose stdin, stdout and stderr are one pseudo-terminal."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self._master, slave = pty.openpty()
        with _ctrl_c_not_ignored():
            self.process = subprocess.Popen(
                [sys.executable, "-m", "lbhc", *argv],
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                cwd=Path(__file__).resolve().parents[2],
            )
        os.close(slave)
        self.output = ""
        self.pools: list[str] = []

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.output):
            left = deadline - time.monotonic()
            if left <= 0 or (self.process.poll() is not None and not self._read(0.1)):
                raise AssertionError(f"timed out; the terminal shows:\n{self.output}")
            self._read(min(left, 0.5))

    def type(self, text: str) -> None:
        os.write(self._master, text.encode())

    def exit_code(self, timeout: float = 60.0) -> int:
        code = self.process.wait(timeout)
        while self._read(0.1):
            pass
        return code

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self._master, 65536)
        except OSError:  # the other end closed
            return False
        self.output += chunk.decode(errors="replace")
        return bool(chunk)

    @property
    def text(self) -> str:
        """What a person reads: the live line's redraws (carriage return, erase line) and
        the terminal's CRLF removed."""
        return self.output.replace("\x1b[K", "").replace("\r\n", "\n").replace("\r", "\n")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._master)


@contextmanager
def _ctrl_c_not_ignored() -> Iterator[None]:
    """A job in the foreground of a terminal, as `lbhc` is here, gets Ctrl-C's default
    action. An ignored SIGINT stays ignored across exec, and pytest may have been started
    with it ignored (as a background job of a non-interactive shell is; pytest-xdist's
    workers inherit that): then lbhc would never see the Ctrl-C these tests send. Caught
    here while the child starts, it is reset to the default in the child at exec."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
