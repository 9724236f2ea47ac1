"""Waiting on a condition with a timeout: the tests' one polling loop.

Tests wait for what they need to see, never a guessed sleep; a condition not met in time
fails naming what was awaited instead of hanging. Two contracts, each written once:
`wait_for` (the condition's first truthy value, or AssertionError) and `seconds_until`
(how long it took, or None: for callers that record the time and judge it themselves).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

Errors = tuple[type[BaseException], ...]


def wait_for(
    condition: Callable[[], T | None],
    timeout: float = 10.0,
    what: str | Callable[[], str] = "",
    every: float = 0.02,
    tolerate: Errors = (),
) -> T:
    """`condition()`'s first truthy value, looked at every `every` seconds; AssertionError
    naming `what` (or the condition) and `timeout` when it is not truthy within `timeout`.

    `what` may be a function, called only on failure: the message then says what was still
    wrong at the end (the last status seen, the log so far). An exception in `tolerate`
    counts as "not yet" (a check refused while it is still being set up); the last one is
    named if time runs out. Any other exception, an assertion included, ends the wait."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's raise
    value, _, last_error = _poll(condition, timeout, every, tolerate)
    if value:
        return value
    described = what() if callable(what) else what or _describe(condition)
    suffix = f" (last error: {last_error})" if last_error is not None else ""
    raise AssertionError(f"timed out after {timeout:g} s waiting for {described}{suffix}")


def seconds_until(
    condition: Callable[[], object], timeout: float, every: float = 0.05
) -> float | None:
    """Seconds from the call until `condition()` was truthy, or None if it was not within
    `timeout`: for measurements that are recorded even when the bound is missed."""
    value, elapsed, _ = _poll(condition, timeout, every, ())
    return elapsed if value else None


def _poll(
    condition: Callable[[], T | None], timeout: float, every: float, tolerate: Errors
) -> tuple[T | None, float, BaseException | None]:
    """The loop: (the first truthy value or the last falsy one, seconds elapsed when it was
    seen, the last tolerated error). The last look is at the deadline, not up to `every`
    after it."""
    start = time.monotonic()
    last_error: BaseException | None = None
    while True:
        value: T | None
        try:
            value = condition()
        except tolerate as exc:
            value, last_error = None, exc
        elapsed = time.monotonic() - start
        if value or elapsed >= timeout:
            return value, elapsed, last_error
        time.sleep(min(every, timeout - elapsed))


def _describe(condition: Callable[[], object]) -> str:
    """A lambda's repr says nothing useful; its source line does."""
    code = getattr(condition, "__code__", None)
    name = getattr(condition, "__qualname__", None)
    if code is None or name is None:
        return repr(condition)
    return f"{name} ({Path(code.co_filename).name}:{code.co_firstlineno})"
