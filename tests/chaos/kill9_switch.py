"""SIGKILL an `lbhc run` process at a chosen point of its apply, decided at the HTTP boundary.

The Compute fake is served through a hook that sees every request arrive and be answered,
so the kill can land exactly: before the k-th mutation reaches the API (`unsent`), after it
was applied but before its answer is read (`landed`), while its operation is still RUNNING
and being polled (`polling`), or a random moment inside the operation's latency (`delay`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.streaming import StreamingServer
from tests.chaos.process import LbhcProcess

Moment = Literal["unsent", "landed", "polling", "delay"]
MOMENTS: tuple[Moment, ...] = ("unsent", "landed", "polling", "delay")
_CLIENT_HEADER = "x-lbhc-client-id"
_DROPPED = (503, {"Content-Type": "application/json"}, b'{"error":{"code":503}}')


def is_mutation(method: str, path: str) -> bool:
    """A write lbhc sends (operation waits and getHealth are POSTs that change nothing)."""
    if method not in ("POST", "PUT", "PATCH", "DELETE"):
        return False
    route = path.split("?", 1)[0]
    return "/operations/" not in route and not route.endswith("/getHealth")


def phase_of(method: str, path: str, body: bytes, our_check_url: str) -> str:
    """Which step of the executor a mutation belongs to."""
    route = path.split("?", 1)[0]
    if method == "DELETE":
        return "delete"
    if route.endswith("/addHealthCheck"):
        return "attach"
    if route.endswith("/removeHealthCheck"):
        # Removing someone else's check is the first half of a replacement.
        return "detach" if our_check_url.encode() in body else "replace"
    return "ensure"


class RequestHook(Protocol):
    def before(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> bool:
        """False: the request never reaches the fake (its client is dead)."""
        ...

    def after(self, method: str, path: str, headers: Mapping[str, str], status: int) -> None: ...


class HookedComputeServer(StreamingServer):
    """ComputeFakeServer with a hook around each request (the fake itself is unchanged)."""

    def __init__(self, fake: ComputeFake, hook: RequestHook) -> None:
        self.fake = fake

        def dispatch(
            method: str, path: str, headers: Mapping[str, str], body: bytes
        ) -> tuple[int, Mapping[str, str], bytes]:
            if not hook.before(method, path, headers, body):
                return _DROPPED
            status, answer_headers, payload = fake.handle(method, path, None, dict(headers), body)
            hook.after(method, path, headers, status)
            return status, answer_headers, payload

        super().__init__(dispatch, "compute-fake-hooked", "127.0.0.1", 0)


@dataclass(frozen=True)
class KillPoint:
    mutation: int  # the victim's k-th mutating request, from 1
    moment: Moment
    delay: float = 0.0  # for "delay": seconds after the k-th mutation was answered
    # The k-th mutation's operation stays in flight this long (None: the fake's latency).
    latency: float | None = None


@dataclass(frozen=True)
class Kill:
    at: float  # time.monotonic() when SIGKILL was sent
    phase: str  # executor step of the k-th mutation
    path: str  # the k-th mutation's path
    mutations_sent: int  # mutating requests the victim had sent when it died
    landed_at: float | None  # when the k-th mutation was answered (None: never sent)


class KillSwitch:
    """The RequestHook that kills one victim process at its KillPoint. An optional gate holds
    the victim's mutations until opened (a standby replica gets time to start)."""

    def __init__(self, our_check_url: str, fake: ComputeFake) -> None:
        self._url = our_check_url
        self._fake = fake
        self._base_latency = fake.operation_latency
        self._landed_at: float | None = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._victim: LbhcProcess | None = None
        self._point: KillPoint | None = None
        self._count = 0
        self._phase = ""
        self._path = ""
        self._polling = False
        self.gate = threading.Event()
        self.gate.set()
        self.kill: Kill | None = None
        self.fired = threading.Event()
        self._timers: list[threading.Timer] = []

    def arm(self, victim: LbhcProcess, point: KillPoint) -> None:
        with self._lock:
            self._victim, self._point = victim, point

    def _is_victim(self, headers: Mapping[str, str]) -> bool:
        lowered = {k.lower(): v for k, v in headers.items()}
        victim = self._victim
        return victim is not None and lowered.get(_CLIENT_HEADER) == victim.identity

    def before(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> bool:
        self._local.kth = False
        if self.fired.is_set() or not self._is_victim(headers):
            return True
        mutation = is_mutation(method, path)
        if mutation:
            self.gate.wait(timeout=60)
        with self._lock:
            point = self._point
            if point is None:
                return True
            if self._polling and "/operations/" in path:
                self._fire_locked()
                return False
            if not mutation:
                return True
            self._count += 1
            if self._count != point.mutation:
                return True
            self._phase = phase_of(method, path, body, self._url)
            self._path = path.split("?", 1)[0]
            if point.moment == "unsent":
                self._fire_locked()
                return False
            if point.latency is not None:
                self._base_latency = self._fake.operation_latency
                self._fake.operation_latency = point.latency
            self._local.kth = True
            return True

    def after(self, method: str, path: str, headers: Mapping[str, str], status: int) -> None:
        if not getattr(self._local, "kth", False):
            return
        self._local.kth = False
        with self._lock:
            point = self._point
            assert point is not None
            self._fake.operation_latency = self._base_latency
            self._landed_at = time.monotonic()
            if point.moment == "landed":
                self._fire_locked()  # before this answer is written: it is never read
            elif point.moment == "polling":
                self._polling = True
            else:
                timer = threading.Timer(point.delay, self._fire)
                timer.daemon = True
                self._timers.append(timer)
                timer.start()

    def _fire(self) -> None:
        with self._lock:
            self._fire_locked()

    def _fire_locked(self) -> None:
        if self.fired.is_set() or self._victim is None:
            return
        # Recorded first: whoever sees the victim dead can already read why.
        self.kill = Kill(time.monotonic(), self._phase, self._path, self._count, self._landed_at)
        self.fired.set()
        self._victim.kill9()

    def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self.gate.set()
