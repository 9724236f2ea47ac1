"""What each pass tells operators about kube-proxy, beyond the plan: metrics and Events for
drain states, the kube-proxy health condition and the readiness review, and (only in the
readiness policy's `enforce` mode, only as leader) the readiness-probe patches.

Events fire on transitions, not every pass, so a steady cluster stays quiet."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.kube.client import describe, status_of
from lbhc.planner.drain import DrainState
from lbhc.planner.readiness import FindingKind, ProbePatch
from lbhc.planner.status import StatusReport

log = logging.getLogger(__name__)
CONFLICT = 409

_DRAIN_EVENTS = {
    DrainState.DRAINING: ("Draining", "Normal"),
    DrainState.NOT_DRAINING: ("NotDraining", "Warning"),
    DrainState.UNKNOWN: ("DrainUnknown", "Warning"),
}


class DaemonSetPatcher(Protocol):
    def patch_daemonset(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        pass


class KubeProxyReporter:
    def __init__(
        self,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        controller_ref: ObjectRef,
        patcher: DaemonSetPatcher | None,
    ) -> None:
        self._metrics = metrics
        self._record = record
        self._controller_ref = controller_ref
        self._patcher = patcher
        self._drain: dict[str, DrainState] = {}
        self._healthy: bool | None = None
        self._findings: set[tuple[str, str, FindingKind]] = set()

    def observe(self, report: StatusReport) -> None:
        self._export(report)
        self._drain_events(report)
        self._health_events(report)
        self._readiness_events(report)

    def _export(self, report: StatusReport) -> None:
        m = self._metrics
        for state, count in report.drain_counts().items():
            m.node_drain.labels(state).set(count)
        for state, count in report.kube_proxy.counts().items():
            m.kube_proxy_pods.labels(state).set(count)
        condition = {True: "True", False: "False", None: "Unknown"}[report.kube_proxy.healthy]
        for status in ("True", "False", "Unknown"):
            m.kube_proxy_condition.labels(status).set(1 if status == condition else 0)
        kinds = [f.kind for f in report.readiness.findings]
        for kind in FindingKind:
            m.readiness_findings.labels(kind.value).set(kinds.count(kind))
        m.fallback_nodes.set(len(report.fallback.nodes) if report.fallback else 0)

    def _drain_events(self, report: StatusReport) -> None:
        current: dict[str, DrainState] = {}
        for node in report.nodes:
            state = node.drain.state
            current[node.node] = state
            event = _DRAIN_EVENTS.get(state)
            if event is None or self._drain.get(node.node) is state:
                continue
            reason, type_ = event
            self._record(
                EventSpec(ObjectRef("Node", node.node), reason, "Drain", node.drain.reason, type_)
            )
        self._drain = current

    def _health_events(self, report: StatusReport) -> None:
        """Unhealthy when it becomes so (or is at start-up); healthy only as a recovery."""
        healthy, previous = report.kube_proxy.healthy, self._healthy
        self._healthy = healthy
        if healthy is False and previous is not False:
            self._record(
                EventSpec(
                    self._controller_ref,
                    "KubeProxyUnhealthy",
                    "Assess",
                    report.kube_proxy.message,
                    "Warning",
                )
            )
        elif healthy is True and previous is False:
            self._record(
                EventSpec(
                    self._controller_ref, "KubeProxyHealthy", "Assess", report.kube_proxy.message
                )
            )

    def _readiness_events(self, report: StatusReport) -> None:
        seen = set()
        for finding in report.readiness.findings:
            key = (finding.daemonset, finding.container, finding.kind)
            seen.add(key)
            if key in self._findings:
                continue
            namespace, _, name = finding.daemonset.partition("/")
            reason = "".join(part.capitalize() for part in finding.kind.value.split("-"))
            self._record(
                EventSpec(
                    ObjectRef("DaemonSet", name, namespace, "apps/v1"),
                    reason,
                    "Audit",
                    f"container {finding.container}: {finding.message}",
                    "Warning",
                )
            )
        self._findings = seen

    def enforce(self, patches: tuple[ProbePatch, ...], dry_run: bool) -> bool:
        """Send the readiness patches; False when one lost a race (the next pass, on the
        DaemonSet's watch event, tries again from the new version)."""
        ok = True
        for patch in patches:
            ref = ObjectRef("DaemonSet", patch.name, patch.namespace, "apps/v1")
            what = f"container {patch.container} readinessProbe path -> {patch.path}"
            if dry_run or self._patcher is None:
                log.info(
                    "dry run: would patch DaemonSet %s/%s: %s", patch.namespace, patch.name, what
                )
                continue
            try:
                self._patcher.patch_daemonset(patch.namespace, patch.name, patch.body())
            except Exception as exc:
                ok = False
                result = "conflict" if status_of(exc) == CONFLICT else "error"
                self._metrics.readiness_patches.labels(result).inc()
                log.warning(
                    "patching DaemonSet %s/%s failed (%s); retrying on the next pass",
                    patch.namespace,
                    patch.name,
                    describe(exc),
                )
                if result == "conflict":
                    note = f"{what}: the DaemonSet changed since it was read; retrying"
                    self._record(EventSpec(ref, "ReadinessPatchConflict", "Patch", note, "Warning"))
                continue
            self._metrics.readiness_patches.labels("ok").inc()
            self._record(EventSpec(ref, "ReadinessProbePatched", "Patch", what))
        return ok
