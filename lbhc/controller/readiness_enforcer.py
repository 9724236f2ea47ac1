"""readiness.policy `enforce`: send the readiness-probe patches, carefully. Every patch rolls
kube-proxy on every node of its DaemonSet, so a patch goes out only on a complete view, only
as the writer of the moment, only once the same right path has held for `settle_sec`, and at
most `max_per_hour` times per DaemonSet (so a GitOps tool reverting it cannot make lbhc
restart kube-proxy in a loop). Only a lost race (409) asks for a retry; any other refusal
(403: the opt-in Role is missing) is reported and never fails the GCE pass."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.kube.client import describe_kube_error, status_of
from lbhc.planner.readiness import ProbePatch

log = logging.getLogger(__name__)
CONFLICT = 409
HOUR = 3600.0


class DaemonSetPatcher(Protocol):
    def patch_daemonset(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        pass


class ReadinessEnforcer:
    def __init__(
        self,
        patcher: DaemonSetPatcher,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        may_write: Callable[[], bool],
        request_pass: Callable[[str], None],
        *,
        settle_sec: float = 30.0,
        max_per_hour: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._patcher, self._metrics, self._record = patcher, metrics, record
        self._may_write, self._request_pass = may_write, request_pass
        self._settle, self._max_per_hour, self._clock = settle_sec, max_per_hour, clock
        self._wanted_since: dict[tuple[str, str], float] = {}  # (daemonset, path) -> first seen
        self._sent: dict[str, deque[float]] = {}

    def enforce(self, patches: tuple[ProbePatch, ...], complete_view: bool) -> bool:
        """False only when a patch lost a race (retry with backoff)."""
        if not complete_view:
            return True  # a partial view may be what makes a path look right
        now = self._clock()
        wanted = {(f"{p.namespace}/{p.name}", p.path): p for p in patches}
        self._wanted_since = {k: self._wanted_since.get(k, now) for k in wanted}
        ok = True
        for key, patch in wanted.items():
            waited = now - self._wanted_since[key]
            if waited < self._settle:
                self._later(self._settle - waited)
                continue
            ok = self._send(key[0], patch, now) and ok
        return ok

    def _later(self, seconds: float) -> None:
        timer = threading.Timer(seconds, self._request_pass, args=("readiness path settled",))
        timer.daemon = True
        timer.start()

    def _send(self, daemonset: str, patch: ProbePatch, now: float) -> bool:
        ref = ObjectRef("DaemonSet", patch.name, patch.namespace, "apps/v1")
        what = f"container {patch.container} readinessProbe path -> {patch.path}"
        sent = self._sent.setdefault(daemonset, deque())
        while sent and now - sent[0] > HOUR:
            sent.popleft()
        if len(sent) >= self._max_per_hour:
            self._metrics.readiness_patches.labels("rate-limited").inc()
            note = f"{what}: not sent, {len(sent)} already in the last hour (reverted by hand?)"
            self._record(EventSpec(ref, "ReadinessPatchRateLimited", "Patch", note, "Warning"))
            return True
        if not self._may_write():
            return True  # the lease moved: the new leader decides
        try:
            self._patcher.patch_daemonset(patch.namespace, patch.name, patch.body())
        except Exception as exc:
            conflict = status_of(exc) == CONFLICT
            self._metrics.readiness_patches.labels("conflict" if conflict else "error").inc()
            log.warning("patching DaemonSet %s failed (%s)", daemonset, describe_kube_error(exc))
            if conflict:
                note = f"{what}: the DaemonSet changed since it was read; retrying"
                self._record(EventSpec(ref, "ReadinessPatchConflict", "Patch", note, "Warning"))
                return False
            note = f"{what}: {describe_kube_error(exc)} (does lbhc have the opt-in patch Role?)"
            self._record(EventSpec(ref, "ReadinessPatchFailed", "Patch", note, "Warning"))
            return True
        sent.append(now)
        self._metrics.readiness_patches.labels("ok").inc()
        self._record(EventSpec(ref, "ReadinessProbePatched", "Patch", what))
        return True
