"""A read budget that holds over every minute: at most N reads in any 60 s window.

Compute quotas are counted per minute (Compute Engine rate quotas: per-minute windows, 403
rateLimitExceeded past them), and a token bucket lets a burst plus a minute's refill through
in one window. A sliding window of the last minute's reads never does, and still lets a
scale-down's marked nodes be read at once when the minute has room."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

WINDOW_SEC = 60.0


class ReadBudget:
    def __init__(self, per_minute: int, clock: Callable[[], float]) -> None:
        if per_minute <= 0:
            raise ValueError(f"a read budget must be > 0 reads a minute, got {per_minute}")
        self.per_minute = per_minute
        self._clock = clock
        self._taken: deque[float] = deque()
        self._lock = threading.Lock()

    def try_take(self) -> bool:
        """One read, if the last minute has room for it; never waits."""
        with self._lock:
            now = self._clock()
            while self._taken and now - self._taken[0] >= WINDOW_SEC:
                self._taken.popleft()
            if len(self._taken) >= self.per_minute:
                return False
            self._taken.append(now)
            return True
