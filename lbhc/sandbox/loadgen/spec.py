"""LoadSpec: how much load to send, with hard bounds.

The bounds are there because the load generator runs on the same small machine as the
sandbox it loads (and as the tests): a typo such as `rate_per_sec=2000` or `duration_sec=3600`
would otherwise starve the data path under test, or run for an hour, instead of failing at
once. Each bound is checked on construction and a value outside it raises one ValueError
that names the field, its allowed range and what it means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# (field, lowest, lowest allowed itself?, highest, integer?, meaning). Highest is always
# allowed. Kept as data so the message, the check and the tests read the same numbers.
_Bound = tuple[str, float, bool, float, bool, str]
BOUNDS: tuple[_Bound, ...] = (
    ("rate_per_sec", 0, True, 200, False, "new short connections per second per target"),
    ("duration_sec", 0, False, 600, False, "seconds the load lasts"),
    ("long_lived", 0, True, 50, True, "long-lived connections per target"),
    # Not near 0: a ping loop with no pause would busy the loop thread and the backend.
    ("ping_interval_sec", 0.05, True, 60, False, "seconds between a long-lived connection's pings"),
    ("connect_timeout_sec", 0, False, 30, False, "seconds a connect may take"),
    ("response_timeout_sec", 0, False, 30, False, "seconds an answer may take"),
    # Well under a default 1024 file-descriptor limit, with room for the sandbox's own sockets.
    ("max_in_flight", 1, True, 500, True, "open connections at once, over all targets"),
)


@dataclass(frozen=True)
class LoadSpec:
    """The load per target: `rate_per_sec` new short connections each second (an open-loop
    schedule: they start on time whatever earlier ones are doing) for `duration_sec`, plus
    `long_lived` connections held open for the whole duration and pinged every
    `ping_interval_sec`. `max_in_flight` bounds the open connections over all targets: a short
    connection due while it is reached is not started and counts as skipped.

    The defaults make a readable demo: 20 connections a second and 3 held open per target,
    for 30 s, with a dead backend noticed within 2 s. `rate_per_sec=0` is allowed for a run of
    long-lived connections only; a spec with no load at all is refused."""

    rate_per_sec: float = 20.0
    duration_sec: float = 30.0
    long_lived: int = 3
    ping_interval_sec: float = 1.0
    connect_timeout_sec: float = 2.0
    response_timeout_sec: float = 2.0
    max_in_flight: int = 200

    def __post_init__(self) -> None:
        for bound in BOUNDS:
            _check(bound, getattr(self, bound[0]))
        if self.rate_per_sec == 0 and self.long_lived == 0:
            raise ValueError(
                "LoadSpec.rate_per_sec and LoadSpec.long_lived are both 0: the spec asks for "
                "no load at all; set at least one of them above 0"
            )

    @property
    def planned_per_target(self) -> int:
        """Short connections due per target over a whole run: one at each k / rate_per_sec
        seconds (k = 0, 1, ...) that is before duration_sec. The schedule iterates over
        exactly this many slots, so the two cannot disagree on a rounding."""
        if self.rate_per_sec == 0:
            return 0
        # rate * duration rounds (20 * 0.35 is 7.000000000000001): settle on the slots
        # themselves, judged by the same k / rate the schedule computes.
        count = math.ceil(self.rate_per_sec * self.duration_sec)
        while count > 0 and (count - 1) / self.rate_per_sec >= self.duration_sec:
            count -= 1
        while count / self.rate_per_sec < self.duration_sec:
            count += 1
        return count


def allowed_range(bound: _Bound) -> str:
    """The allowed range as the error message states it, e.g. `0 < duration_sec <= 600`."""
    name, low, low_included, high, _, _ = bound
    return f"{low:g} {'<=' if low_included else '<'} {name} <= {high:g}"


def _check(bound: _Bound, value: object) -> None:
    name, low, low_included, high, integer, meaning = bound
    # bool is an int to Python, but `long_lived=True` is a mistake, not a count.
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = value if isinstance(value, int) or not integer else None
    # Asked as "inside?", so that NaN, which compares false to everything, is refused.
    inside = number is not None and (low <= number if low_included else low < number)
    if not (inside and number is not None and number <= high):
        kind = "an integer" if integer else "a number"
        raise ValueError(
            f"LoadSpec.{name} must be {kind} with {allowed_range(bound)} ({meaning}); got {value!r}"
        )
