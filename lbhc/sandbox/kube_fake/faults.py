"""Fault injection: failing, slow, empty and unanswered requests (watches included), outages,
expiring continue tokens, short list pages, and watch streams that are cut (between events or
in the middle of one) or stall.

Most faults count down and then stop, so a test states exactly how many requests it breaks;
an outage and a page-size limit last until lifted; drop_watches() cuts the streams open when
it is called, not later ones. A rule may be narrowed to paths containing a string and to one
named server (KubeFakeServer(name=...)), e.g. the apiserver front one replica talks to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .status import REASONS


@dataclass
class _Rule:
    """Which requests a fault applies to, and how many more it takes (None: until lifted)."""

    remaining: int | None
    path_contains: str | None
    server: str | None
    watch: bool | None = None  # True: watches only; False: everything but watches

    def matches(self, path: str, server: str, watch: bool) -> bool:
        if self.server is not None and self.server != server:
            return False
        if self.watch is not None and self.watch != watch:
            return False
        return self.path_contains is None or self.path_contains in path


@dataclass(kw_only=True)
class _FailRule(_Rule):
    status: int
    message: str | None


@dataclass(kw_only=True)
class _DelayRule(_Rule):
    seconds: float


@dataclass(kw_only=True)
class _EmptyRule(_Rule):
    body: bytes


@dataclass(kw_only=True)
class _CutRule(_Rule):
    clean_end: bool


@dataclass(kw_only=True)
class _OutageRule(_Rule):
    status: int | None  # None: connections are closed without an answer


@dataclass(kw_only=True)
class _StallRule(_Rule):
    until: float  # monotonic


R = TypeVar("R", bound=_Rule)


@dataclass(frozen=True)
class Failure:
    status: int
    message: str | None  # None: the fake words it like the apiserver would for the request


@dataclass(frozen=True)
class Outage:
    status: int | None  # None: close the connection unanswered (a reset, a dead backend)


@dataclass(frozen=True)
class Cut:
    clean_end: bool  # True: the response ends properly after half an event (a truncating proxy)


def _check_times(times: int) -> None:
    if times < 1:
        raise ValueError("times must be >= 1")


def _check_status(status: int) -> None:
    if status not in REASONS or status < 400:
        raise ValueError(f"status {status} is not an apiserver error code: {sorted(REASONS)}")


class Faults:
    """Thread-safe fault plan, consulted by the fake for every request."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._rules: list[_FailRule] = []
        self._delays: list[_DelayRule] = []
        self._empties: list[_EmptyRule] = []
        self._cuts: list[_CutRule] = []
        self._stalls: list[_StallRule] = []
        self._outage: _OutageRule | None = None
        self._page_limit: int | None = None
        self._expire_continue = 0
        self._watch_epoch = 0
        self._on_drop: list[Callable[[], None]] = []

    # -- requests that fail -------------------------------------------------------------------

    def fail_requests(
        self,
        times: int = 1,
        status: int = 500,
        path_contains: str | None = None,
        message: str | None = None,
        server: str | None = None,
        watch: bool | None = None,
    ) -> None:
        """The next `times` requests whose path contains `path_contains` (any, if None) get a
        Status error with code `status` and the reason the apiserver uses for it. `watch`
        True or False narrows the fault to watches or to everything else."""
        _check_times(times)
        _check_status(status)
        rule = _FailRule(times, path_contains, server, watch, status=status, message=message)
        with self._lock:
            self._rules.append(rule)

    def start_outage(
        self,
        status: int | None = 503,
        path_contains: str | None = None,
        server: str | None = None,
    ) -> None:
        """Until end_outage(), every matching request fails with `status`, or with status
        None gets its connection closed unanswered; open matching watch streams are cut (an
        apiserver going away takes its watches with it). One outage at a time."""
        if status is not None:
            _check_status(status)
        with self._lock:
            self._outage = _OutageRule(None, path_contains, server, status=status)
            listeners = list(self._on_drop)
        for listener in listeners:
            listener()  # wakes the streams, which check for an outage on every tick

    def end_outage(self) -> None:
        with self._lock:
            self._outage = None

    def expire_continue_tokens(self, times: int = 1) -> None:
        """The next `times` requests carrying a `continue` token get 410 Expired, as when etcd
        has compacted past the token's resourceVersion."""
        _check_times(times)
        with self._lock:
            self._expire_continue += times

    # -- requests that succeed badly ----------------------------------------------------------

    def delay_requests(
        self,
        seconds: float,
        times: int = 1,
        path_contains: str | None = None,
        server: str | None = None,
        watch: bool | None = None,
    ) -> None:
        """Answer the next `times` matching requests only after `seconds`. A list is read
        before the wait, so it arrives stale; a watch sends no headers until then. `watch`
        True or False narrows the fault to watches or to everything else."""
        _check_times(times)
        if seconds <= 0:
            raise ValueError("seconds must be > 0")
        with self._lock:
            self._delays.append(_DelayRule(times, path_contains, server, watch, seconds=seconds))

    def answer_empty(
        self,
        times: int = 1,
        path_contains: str | None = None,
        body: bytes = b"",
        server: str | None = None,
        watch: bool | None = None,
    ) -> None:
        """The next `times` matching requests get 200 with `body` (by default nothing) in place
        of their answer: a list that is no list, a watch that ends at once without an event.
        `watch` True or False narrows the fault to watches or to everything else."""
        _check_times(times)
        with self._lock:
            self._empties.append(_EmptyRule(times, path_contains, server, watch, body=body))

    def limit_page_size(self, items: int | None) -> None:
        """Lists return at most `items` per page (None: as many as asked), as the apiserver
        may return fewer than `limit`: more pages, so continue tokens come into play."""
        if items is not None and items < 1:
            raise ValueError("items must be >= 1 (or None)")
        with self._lock:
            self._page_limit = items

    # -- watch streams ------------------------------------------------------------------------

    def drop_watches(self) -> None:
        """Cut every open watch stream now, abruptly: the connection closes without the
        terminating chunk, as when a load balancer or the apiserver drops it mid-stream."""
        with self._lock:
            self._watch_epoch += 1
            listeners = list(self._on_drop)
        for listener in listeners:
            listener()

    def cut_watch_events(
        self, times: int = 1, path_contains: str | None = None, clean_end: bool = False
    ) -> None:
        """The next `times` object events (not bookmarks) sent on matching watches stop in the
        middle of their JSON line and the stream ends there: abruptly (no terminating chunk),
        or with `clean_end` as if the response were complete, as a truncating proxy does."""
        _check_times(times)
        with self._lock:
            self._cuts.append(_CutRule(times, path_contains, None, clean_end=clean_end))

    def stall_watches(self, seconds: float, path_contains: str | None = None) -> None:
        """Matching watch streams, open or new, send nothing at all (no event, no bookmark)
        for `seconds` from now, then carry on where they were: to the client, a half-open
        connection. Changes made meanwhile are sent after the stall, if anyone still listens."""
        if seconds <= 0:
            raise ValueError("seconds must be > 0")
        with self._lock:
            until = self._clock() + seconds
            self._stalls.append(_StallRule(None, path_contains, None, until=until))

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
        """Lift every fault (an outage and a page-size limit included)."""
        with self._lock:
            self._rules.clear()
            self._delays.clear()
            self._empties.clear()
            self._cuts.clear()
            self._stalls.clear()
            self._outage = None
            self._page_limit = None
            self._expire_continue = 0

    # -- what the fake asks -------------------------------------------------------------------

    def take_failure(self, path: str, server: str = "", watch: bool = False) -> Failure | None:
        with self._lock:
            rule = self._take(self._rules, path, server, watch)
        return None if rule is None else Failure(rule.status, rule.message)

    def outage(self, path: str, server: str = "") -> Outage | None:
        with self._lock:
            rule = self._outage
        matched = rule is not None and rule.matches(path, server, False)
        return Outage(rule.status) if rule is not None and matched else None

    def take_delay(self, path: str, server: str = "", watch: bool = False) -> float:
        with self._lock:
            rule = self._take(self._delays, path, server, watch)
        return 0.0 if rule is None else rule.seconds

    def take_empty(self, path: str, server: str = "", watch: bool = False) -> bytes | None:
        with self._lock:
            rule = self._take(self._empties, path, server, watch)
        return None if rule is None else rule.body

    def take_cut(self, path: str) -> Cut | None:
        with self._lock:
            rule = self._take(self._cuts, path, "", True)
        return None if rule is None else Cut(rule.clean_end)

    def stalled(self, path: str) -> bool:
        with self._lock:
            now = self._clock()
            self._stalls = [rule for rule in self._stalls if rule.until > now]
            return any(rule.matches(path, "", True) for rule in self._stalls)

    @property
    def page_limit(self) -> int | None:
        with self._lock:
            return self._page_limit

    def take_continue_expiry(self) -> bool:
        with self._lock:
            if self._expire_continue == 0:
                return False
            self._expire_continue -= 1
            return True

    @staticmethod
    def _take(rules: list[R], path: str, server: str, watch: bool) -> R | None:
        """The first matching rule, counted down (and dropped when spent). Lock held."""
        for rule in rules:
            if rule.matches(path, server, watch):
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        rules.remove(rule)
                return rule
        return None
