"""Fault injection: failing requests, failing operations, rate limiting and latency.

Every fault that takes `times` counts down and then stops. Faults keep their own lock and never
call back into the store, so checking them while the store lock is held cannot deadlock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ComputeError, fault


@dataclass
class _RequestRule:
    remaining: int
    error: ComputeError
    method: str | None
    path_contains: str | None
    after_apply: bool = False

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method != method:
            return False
        return self.path_contains is None or self.path_contains in path


@dataclass
class _OperationRule:
    remaining: int
    error: ComputeError
    operation_type: str | None


@dataclass
class _Bucket:
    per_second: float
    burst: int
    mutating_only: bool
    tokens: float
    updated: float


class Faults:
    """Thread-safe fault plan consulted by the dispatcher and by operation creation."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._requests: list[_RequestRule] = []
        self._operations: list[_OperationRule] = []
        self._bucket: _Bucket | None = None
        self._latency = 0.0

    def fail_requests(
        self,
        times: int = 1,
        status: int = 503,
        reason: str | None = None,
        method: str | None = None,
        path_contains: str | None = None,
        message: str | None = None,
        after_apply: bool = False,
    ) -> None:
        """Fail the next `times` matching requests with `status` and the real error body.

        `after_apply=True` serves the request first and then answers the error: the
        mutation landed but its response was lost, which is what requestId exists for.

        `reason` defaults to what the real API reports for `status` (429 and 403 get
        rateLimitExceeded in domain usageLimits, 500/503 backendError).
        """
        if status == 403 and reason is None:
            reason = "rateLimitExceeded"
        rule = _RequestRule(
            remaining=times,
            error=fault(status, reason, message),
            method=method.upper() if method else None,
            path_contains=path_contains,
            after_apply=after_apply,
        )
        with self._lock:
            self._requests.append(rule)

    def fail_operations(
        self,
        times: int = 1,
        status: int = 400,
        reason: str = "resourceInUseByAnotherResource",
        message: str | None = None,
        operation_type: str | None = None,
    ) -> None:
        """Let the next `times` matching operations end DONE with an error, mutation not applied."""
        text = message or f"Injected operation failure ({reason})."
        rule = _OperationRule(times, ComputeError(status, reason, text), operation_type)
        with self._lock:
            self._operations.append(rule)

    def rate_limit(
        self, per_second: float | None = 10.0, burst: int = 10, mutating_only: bool = True
    ) -> None:
        """Token bucket on the fake's clock; beyond it requests get 403 rateLimitExceeded.

        `per_second=None` switches rate limiting off.
        """
        with self._lock:
            if per_second is None:
                self._bucket = None
                return
            self._bucket = _Bucket(per_second, burst, mutating_only, float(burst), self._clock())

    def latency(self, seconds: float) -> None:
        """Extra real-time latency added to every request (0 switches it off)."""
        with self._lock:
            self._latency = max(0.0, seconds)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._operations.clear()
            self._bucket = None
            self._latency = 0.0

    # -- used by the fake --------------------------------------------------------------------

    def extra_latency(self) -> float:
        with self._lock:
            return self._latency

    def check_request(self, method: str, path: str, mutating: bool) -> ComputeError | None:
        """The error to answer instead of serving this request, consuming one fault."""
        with self._lock:
            if self._rate_limited(mutating):
                return fault(403, "rateLimitExceeded")
            return self._take(method, path, after_apply=False)

    def check_response(self, method: str, path: str) -> ComputeError | None:
        """The error to answer after serving this request (a lost response), if any."""
        with self._lock:
            return self._take(method, path, after_apply=True)

    def _take(self, method: str, path: str, *, after_apply: bool) -> ComputeError | None:
        for rule in self._requests:
            if (
                rule.remaining > 0
                and rule.after_apply == after_apply
                and rule.matches(method, path)
            ):
                rule.remaining -= 1
                return rule.error
        self._requests = [r for r in self._requests if r.remaining > 0]
        return None

    def take_operation_failure(self, operation_type: str) -> ComputeError | None:
        with self._lock:
            for rule in self._operations:
                if rule.remaining > 0 and rule.operation_type in (None, operation_type):
                    rule.remaining -= 1
                    return rule.error
            return None

    def _rate_limited(self, mutating: bool) -> bool:
        bucket = self._bucket
        if bucket is None or (bucket.mutating_only and not mutating):
            return False
        now = self._clock()
        refill = (now - bucket.updated) * bucket.per_second
        bucket.tokens = min(float(bucket.burst), bucket.tokens + refill)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return False
        return True
