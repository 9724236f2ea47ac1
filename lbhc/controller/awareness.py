"""What each pass tells operators about kube-proxy, beyond the plan: metrics and Events for
drain states, the kube-proxy health condition and the readiness review (the patches of
`enforce` mode are readiness_enforcer.py's).

Events fire on transitions, not every pass, so a steady cluster stays quiet."""

from __future__ import annotations

from collections.abc import Callable

from lbhc.controller.drain_timing import DrainTimer
from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.planner.coverage import Coverage
from lbhc.planner.drain import DrainState
from lbhc.planner.readiness import FindingKind
from lbhc.planner.status import StatusReport

PROBES_BLOCKED = "ProbesBlocked"

# Warnings only for real problems: a node no pool drains, or one lbhc cannot judge. A node in
# no target pool (not-applicable) has nothing to drain and gets no Event at all.
_DRAIN_EVENTS = {
    DrainState.DRAINING: ("Draining", "Normal"),
    DrainState.PARTIALLY_DRAINING: ("PartiallyDraining", "Normal"),
    DrainState.NOT_DRAINING: ("NotDraining", "Warning"),
    DrainState.UNKNOWN: ("DrainUnknown", "Warning"),
}


class KubeProxyReporter:
    def __init__(
        self, metrics: Metrics, record: Callable[[EventSpec], None], lease: ObjectRef
    ) -> None:
        self._metrics = metrics
        self._record = record
        self._lease = lease
        self._drain: dict[str, DrainState] = {}
        self._healthy: bool | None = None
        self._findings: set[tuple[str, str, FindingKind]] = set()
        self._timer = DrainTimer(metrics, record)
        self._blocked: set[str] = set()  # Services whose pool's probes are blocked
        self._coverage_series: set[tuple[str, str]] = set()

    def reset(self) -> None:
        """On losing the lease: this replica stops assessing, so its gauges must not keep
        saying (and alerting on) what was true when it last did."""
        for gauge in (
            self._metrics.pool_coverage,
            self._metrics.node_drain,
            self._metrics.kube_proxy_pods,
            self._metrics.kube_proxy_condition,
            self._metrics.readiness_findings,
            self._metrics.kube_proxy_replacement,
        ):
            gauge.clear()
        self._metrics.fallback_nodes.set(0)
        self._metrics.node_drain_unknown_replaced.set(0)
        self._metrics.out_of_scope.set(0)
        self._drain, self._healthy, self._findings = {}, None, set()
        self._blocked = set()
        self._coverage_series = set()
        self._timer.reset()

    def observe(self, report: StatusReport) -> None:
        self._export(report)
        self._probe_events(report)
        self._drain_events(report)
        self._timer.observe(report)
        self._health_events(report)
        self._readiness_events(report)

    def _export(self, report: StatusReport) -> None:
        m = self._metrics
        exported: set[tuple[str, str]] = set()
        for lb, counts in report.coverage_by_load_balancer().items():
            for kind, count in counts.items():
                m.pool_coverage.labels(kind, lb).set(count)
                exported.add((kind, lb))
        for gone in self._coverage_series - exported:  # a kind of load balancer no longer seen
            m.pool_coverage.remove(*gone)
        self._coverage_series = exported
        m.out_of_scope.set(report.out_of_scope)
        for state, count in report.drain_counts().items():
            m.node_drain.labels(state).set(count)
        m.node_drain_unknown_replaced.set(sum(1 for n in report.nodes if n.drain.replaced_by))
        m.kube_proxy_replacement.clear()  # one series: the replacement found on this pass
        if report.kube_proxy_replacement:
            m.kube_proxy_replacement.labels(report.kube_proxy_replacement).set(1)
        for state, count in report.kube_proxy.counts().items():
            m.kube_proxy_pods.labels(state).set(count)
        condition = {True: "True", False: "False", None: "Unknown"}[report.kube_proxy.healthy]
        for status in ("True", "False", "Unknown"):
            m.kube_proxy_condition.labels(status).set(1 if status == condition else 0)
        kinds = [f.kind for f in report.readiness.findings]
        for kind in FindingKind:
            m.readiness_findings.labels(kind.value).set(kinds.count(kind))
        m.fallback_nodes.set(len(report.fallback.nodes) if report.fallback else 0)

    def _probe_events(self, report: StatusReport) -> None:
        """A Warning on a Service when its pool's probes become blocked, naming the rule."""
        blocked = {
            s.service: s.probe_reach_reason
            for s in report.services
            if s.coverage is Coverage.PROBE_BLOCKED
        }
        for key, why in blocked.items():
            if key in self._blocked:
                continue
            namespace, _, name = key.partition("/")
            self._record(
                EventSpec(
                    ObjectRef("Service", name, namespace),
                    PROBES_BLOCKED,
                    "Assess",
                    f"{why}: the load balancer's instances read UNHEALTHY and it fails open, "
                    "draining nothing",
                    "Warning",
                )
            )
        self._blocked = set(blocked)

    def _drain_events(self, report: StatusReport) -> None:
        current: dict[str, DrainState] = {}
        for node in report.nodes:
            state = node.drain.state
            current[node.node] = state
            event = _DRAIN_EVENTS.get(state)
            if event is None or self._drain.get(node.node) is state:
                continue
            reason, type_ = event
            if node.drain.replaced_by:  # said once for the cluster (KubeProxyReplaced)
                type_ = "Normal"
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
                    self._lease,
                    "KubeProxyUnhealthy",
                    "Assess",
                    report.kube_proxy.message,
                    "Warning",
                )
            )
        elif healthy is True and previous is False:
            self._record(
                EventSpec(self._lease, "KubeProxyHealthy", "Assess", report.kube_proxy.message)
            )

    def _readiness_events(self, report: StatusReport) -> None:
        seen = set()
        for finding in report.readiness.findings:
            key = (finding.daemonset, finding.container, finding.kind)
            seen.add(key)
            if key in self._findings:
                continue
            namespace, _, name = finding.daemonset.partition("/")
            api_version = "apps/v1" if finding.subject_kind == "DaemonSet" else "v1"
            reason = "".join(part.capitalize() for part in finding.kind.value.split("-"))
            self._record(
                EventSpec(
                    ObjectRef(finding.subject_kind, name, namespace, api_version),
                    reason,
                    "Audit",
                    f"container {finding.container}: {finding.message}",
                    "Warning",
                )
            )
        self._findings = seen
