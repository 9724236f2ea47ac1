"""Fault injection: failing requests (watches included), expiring continue tokens and
cutting open watch streams.

Every request fault counts down and then stops, so a test states exactly how many requests it
breaks; drop_watches() cuts the streams open when it is called, not later ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from .status import REASONS


@dataclass
class _FailRule:
    remaining: int
    status: int
    path_contains: str | None
    message: str | None


@dataclass(frozen=True)
class Failure:
    status: int
    message: str | None  # None: the fake words it like the apiserver would for the request


class Faults:
    """Thread-safe fault plan, consulted by the fake for every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[_FailRule] = []
        self._expire_continue = 0
        self._watch_epoch = 0
        self._on_drop: list[Callable[[], None]] = []

    def fail_requests(
        self,
        times: int = 1,
        status: int = 500,
        path_contains: str | None = None,
        message: str | None = None,
    ) -> None:
        """The next `times` requests whose path contains `path_contains` (any, if None) get a
        Status error with code `status` and the reason the apiserver uses for it."""
        if times < 1:
            raise ValueError("times must be >= 1")
        if status not in REASONS or status < 400:
            raise ValueError(f"status {status} is not an apiserver error code: {sorted(REASONS)}")
        with self._lock:
            self._rules.append(_FailRule(times, status, path_contains, message))

    def expire_continue_tokens(self, times: int = 1) -> None:
        """The next `times` requests carrying a `continue` token get 410 Expired, as when etcd
        has compacted past the token's resourceVersion."""
        if times < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._expire_continue += times

    def drop_watches(self) -> None:
        """Cut every open watch stream now, abruptly: the connection closes without the
        terminating chunk, as when a load balancer or the apiserver drops it mid-stream."""
        with self._lock:
            self._watch_epoch += 1
            listeners = list(self._on_drop)
        for listener in listeners:
            listener()

    @property
    def watch_epoch(self) -> int:
        """Bumped by drop_watches(): a watch opened at another epoch must end."""
        with self._lock:
            return self._watch_epoch

    def on_drop_watches(self, listener: Callable[[], None]) -> None:
        """Call `listener` on drop_watches(), e.g. to wake the watchers so they notice."""
        with self._lock:
            self._on_drop.append(listener)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._expire_continue = 0

    def take_failure(self, path: str) -> Failure | None:
        with self._lock:
            for rule in self._rules:
                if rule.path_contains is None or rule.path_contains in path:
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self._rules.remove(rule)
                    return Failure(rule.status, rule.message)
        return None

    def take_continue_expiry(self) -> bool:
        with self._lock:
            if self._expire_continue == 0:
                return False
            self._expire_continue -= 1
            return True
