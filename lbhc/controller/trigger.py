"""The work queue of a controller whose only work item is "the cluster": handlers just fire
it; any number of fires while a pass runs coalesce into one more pass over the current
cache (level-based, so no event is ever needed for its content)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Trigger:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._cond = threading.Condition()
        self._pending: list[str] = []
        self._not_before = 0.0  # set by a failed pass: backoff before the retry
        self._closed = False
        self._clock = clock

    def close(self) -> None:
        """Ends any wait at once, backoff included: shutdown must not wait out a retry."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def fire(self, reason: str) -> None:
        with self._cond:
            if len(self._pending) < 100:  # reasons are for logs; the count need not grow
                self._pending.append(reason)
            self._cond.notify_all()

    def delay_until(self, when: float) -> None:
        with self._cond:
            self._not_before = max(self._not_before, when)

    def wait(self, timeout: float, coalesce: float = 0.05) -> list[str]:
        """Block until fired (or `timeout` passes: returns []), then give a burst `coalesce`
        seconds to finish arriving, honour any backoff, and take every pending reason."""
        deadline = self._clock() + timeout
        with self._cond:
            while not self._pending and not self._closed:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    return []
                self._cond.wait(remaining)
            hold = max(coalesce, self._not_before - self._clock())
            if hold > 0:
                self._cond.wait_for(lambda: self._closed, hold)
            reasons, self._pending = self._pending, []
            self._not_before = 0.0
            return reasons
