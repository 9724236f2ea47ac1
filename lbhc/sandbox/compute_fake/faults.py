"""Fault injection: failing requests, failing operations, stalled operations, rate limiting,
latency (global or for one request), and actions run as a request arrives.

Every fault that takes `times` counts down and then stops. Faults keep their own lock and never
call back into the store, so checking them while the store lock is held cannot deadlock; the
sleeps and actions run with no lock held, so a slow request never stalls the others.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
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
        return _matches(self.method, self.path_contains, method, path)


@dataclass
class _OperationRule:
    remaining: int
    error: ComputeError
    operation_type: str | None


@dataclass
class _StallRule:
    remaining: int
    seconds: float
    operation_type: str | None


@dataclass
class _SlowRule:
    remaining: int
    seconds: float
    method: str | None
    path_contains: str | None
    after_apply: bool

    def matches(self, method: str, path: str) -> bool:
        return _matches(self.method, self.path_contains, method, path)


@dataclass
class _Action:
    remaining: int
    run: Callable[[], None]
    method: str | None
    path_contains: str | None

    def matches(self, method: str, path: str) -> bool:
        return _matches(self.method, self.path_contains, method, path)


def _matches(want_method: str | None, want_path: str | None, method: str, path: str) -> bool:
    if want_method is not None and want_method != method:
        return False
    return want_path is None or want_path in path


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
        self._stalls: list[_StallRule] = []
        self._slow: list[_SlowRule] = []
        self._actions: list[_Action] = []
        self._injected: Counter[str] = Counter()
        self._ended = 0.0

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

    def stall_operations(
        self, times: int = 1, seconds: float = math.inf, operation_type: str | None = None
    ) -> None:
        """Keep the next `times` matching operations RUNNING `seconds` longer than the
        operation latency (for ever by default): a stuck backend. The effect, if any, is
        applied when the stall ends; `wait` keeps answering RUNNING until then."""
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        with self._lock:
            self._stalls.append(_StallRule(times, seconds, operation_type))

    def slow_requests(
        self,
        seconds: float,
        times: int = 1,
        method: str | None = None,
        path_contains: str | None = None,
        after_apply: bool = False,
    ) -> None:
        """Hold the next `times` matching requests `seconds` of real time: before serving them
        (the request is late), or with `after_apply=True` after serving them, before the
        answer (the mutation landed; a client whose timeout is shorter never hears of it)."""
        rule = _SlowRule(
            times, seconds, method.upper() if method else None, path_contains, after_apply
        )
        with self._lock:
            self._slow.append(rule)

    def on_request(
        self,
        action: Callable[[], None],
        times: int = 1,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> None:
        """Run `action()` when a matching request arrives, before it is served: something
        else changes the world at that instant (a pool deleted just as it is attached).
        It runs on the serving thread with no lock held, so it may call the fake."""
        with self._lock:
            self._actions.append(
                _Action(times, action, method.upper() if method else None, path_contains)
            )

    def injected(self) -> dict[str, int]:
        """How many faults of each kind took effect so far (kept across `clear`):
        request_error, lost_response, rate_limited, operation_error, operation_stall,
        slow_request, slow_response, action, latency (requests slowed)."""
        with self._lock:
            return {kind: count for kind, count in self._injected.items() if count}

    def last_ended(self) -> float:
        """When the latest fault to take effect stopped acting, on the fake's clock: an error
        answered, a hold or a finite stall over (an endless stall counts from its start);
        0 when none has. What "time to converge after the fault" is measured from."""
        with self._lock:
            return self._ended

    def _count(self, kind: str, lasting: float = 0.0) -> None:
        """Caller holds the lock."""
        self._injected[kind] += 1
        now = self._clock()
        self._ended = max(self._ended, now + lasting if math.isfinite(lasting) else now)

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
            self._stalls.clear()
            self._slow.clear()
            self._actions.clear()

    # -- used by the fake --------------------------------------------------------------------

    def extra_latency(self) -> float:
        """The latency to add to the request being served (counted as one "latency" fault)."""
        with self._lock:
            if self._latency:
                self._count("latency", self._latency)
            return self._latency

    def check_request(self, method: str, path: str, mutating: bool) -> ComputeError | None:
        """The error to answer instead of serving this request, consuming one fault; first
        runs any action due for it and holds a slow request (both with no lock held)."""
        with self._lock:
            actions = self._take_matching(self._actions, method, path)
            for _ in actions:
                self._count("action")
        for action in actions:
            action.run()
        with self._lock:
            if self._rate_limited(mutating):
                self._count("rate_limited")
                return fault(403, "rateLimitExceeded")
            error = self._take(method, path, after_apply=False)
            if error is not None:
                self._count("request_error")
                return error
            delay = self._take_delay(method, path, after_apply=False)
        if delay:
            time.sleep(delay)
        return None

    def check_response(self, method: str, path: str) -> ComputeError | None:
        """The error to answer after serving this request (a lost response), if any; or
        hold a slow answer first."""
        with self._lock:
            error = self._take(method, path, after_apply=True)
            if error is not None:
                self._count("lost_response")
                return error
            delay = self._take_delay(method, path, after_apply=True)
        if delay:
            time.sleep(delay)
        return None

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

    def _take_delay(self, method: str, path: str, *, after_apply: bool) -> float:
        for rule in self._slow:
            if (
                rule.remaining > 0
                and rule.after_apply == after_apply
                and rule.matches(method, path)
            ):
                rule.remaining -= 1
                self._count("slow_response" if after_apply else "slow_request", rule.seconds)
                return rule.seconds
        return 0.0

    @staticmethod
    def _take_matching(actions: list[_Action], method: str, path: str) -> list[_Action]:
        due = [a for a in actions if a.remaining > 0 and a.matches(method, path)]
        for action in due:
            action.remaining -= 1
        return due

    def take_operation_failure(self, operation_type: str) -> ComputeError | None:
        with self._lock:
            for rule in self._operations:
                if rule.remaining > 0 and rule.operation_type in (None, operation_type):
                    rule.remaining -= 1
                    self._count("operation_error")
                    return rule.error
            return None

    def take_operation_stall(self, operation_type: str) -> float:
        """Extra seconds the new operation stays RUNNING (0: none)."""
        with self._lock:
            for rule in self._stalls:
                if rule.remaining > 0 and rule.operation_type in (None, operation_type):
                    rule.remaining -= 1
                    self._count("operation_stall", rule.seconds)
                    return rule.seconds
            return 0.0

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
