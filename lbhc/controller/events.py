"""Events (events.k8s.io/v1) about what lbhc did, sent from a background thread so a slow
API server never stalls a reconcile, and rate-limited per object so a flapping Service or
Node cannot flood the API (the same idea as client-go's event correlator)."""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lbhc.controller.leader import micro_time
from lbhc.kube.client import KubeApi, describe_kube_error

log = logging.getLogger(__name__)
CONTROLLER = "lbhc.dev/controller"


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""
    api_version: str = "v1"
    uid: str = ""

    def to_json(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        return ref


@dataclass(frozen=True)
class EventSpec:
    regarding: ObjectRef
    reason: str  # UpperCamelCase, e.g. HealthCheckAttached
    action: str  # what lbhc did, e.g. Attach
    note: str
    type: str = "Normal"


class _PerObjectLimiter:
    """Token bucket per object: `burst` events at once, then one per `refill_sec`."""

    def __init__(self, burst: int, refill_sec: float, clock: Callable[[], float]) -> None:
        self._burst, self._refill, self._clock = burst, refill_sec, clock
        self._buckets: dict[tuple[str, str, str], tuple[float, float]] = {}

    def allow(self, ref: ObjectRef) -> bool:
        key = (ref.kind, ref.namespace, ref.name)
        now = self._clock()
        tokens, updated = self._buckets.get(key, (float(self._burst), now))
        tokens = min(self._burst, tokens + (now - updated) / self._refill)
        if tokens < 1:
            self._buckets[key] = (tokens, now)
            return False
        self._buckets[key] = (tokens - 1, now)
        if len(self._buckets) > 10_000:  # forget idle objects rather than grow for ever
            self._buckets.clear()
        return True


class EventRecorder:
    def __init__(
        self,
        api: KubeApi,
        instance: str,
        *,
        burst: int = 5,
        refill_sec: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        on_dropped: Callable[[str], None] | None = None,
    ) -> None:
        self._api = api
        self._instance = instance
        self._limiter = _PerObjectLimiter(burst, refill_sec, clock)
        self._on_dropped = on_dropped or (lambda reason: None)
        self._queue: queue.Queue[EventSpec | None] = queue.Queue(maxsize=1000)
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Sends what is queued (bounded by the join timeout), then ends."""
        if self._thread.ident is None:
            return
        self._queue.put(None)
        self._thread.join(timeout=5)

    def record(self, event: EventSpec) -> None:
        with self._lock:
            allowed = self._limiter.allow(event.regarding)
        if not allowed:
            self._on_dropped("rate-limited")
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._on_dropped("queue-full")

    def _run(self) -> None:
        while (event := self._queue.get()) is not None:
            try:
                self._api.create_event(event.regarding.namespace or "default", self.body(event))
            except Exception as exc:
                log.warning(
                    "event %s on %s/%s not recorded: %s",
                    event.reason,
                    event.regarding.kind,
                    event.regarding.name,
                    describe_kube_error(exc),
                )

    def body(self, event: EventSpec) -> dict[str, Any]:
        namespace = event.regarding.namespace or "default"
        name = f"{_name_prefix(event.regarding.name)}.{uuid.uuid4().hex[:16]}"
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(),
            "reportingController": CONTROLLER,
            "reportingInstance": self._instance,
            "action": event.action,
            "reason": event.reason,
            "regarding": event.regarding.to_json(),
            "note": _cut_utf8(event.note, NOTE_MAX_BYTES),
            "type": event.type,
        }


NAME_MAX = 253  # a DNS subdomain, as every object name
NOTE_MAX_BYTES = 1024  # the API refuses a longer note (422), in bytes, not characters


def _name_prefix(regarding: str) -> str:
    """The regarding object's name, cut so that it, a dot and 16 hex digits fit in 253
    characters; what is left still ends in a letter or digit, as a name must."""
    return regarding[: NAME_MAX - 17].rstrip(".-") or "event"


def _cut_utf8(text: str, limit: int) -> str:
    return text.encode()[:limit].decode(errors="ignore")
