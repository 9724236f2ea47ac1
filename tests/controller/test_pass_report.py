"""The pass report's gauges that alerts read: conflicts counted from the plan's findings (one
Conflict Event each), and every such gauge back to 0 when the replica loses the lease, so a
follower never keeps an alert firing on what was true at its last pass as leader."""

from __future__ import annotations

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.controller.pass_report import PassReporter
from lbhc.model.plan import Finding, FindingKind, Plan
from lbhc.planner.config import PlannerConfig

LEASE = ObjectRef("Lease", "lbhc", "lbhc-system", "coordination.k8s.io/v1")


def reporter() -> tuple[PassReporter, Metrics, list[EventSpec]]:
    metrics, events = Metrics(), list[EventSpec]()
    config = PlannerConfig(project="p", region="r", node_tags=("t",))
    return PassReporter(config, metrics, events.append, LEASE), metrics, events


def test_conflicts_are_counted_from_the_findings_kind_with_one_event_each() -> None:
    report, metrics, events = reporter()
    findings = (
        Finding(FindingKind.CONFLICT, "HttpHealthCheck lbhc-x", "conflict: check"),
        Finding(FindingKind.CONFLICT, "Firewall lbhc-x", "conflict: firewall"),
        # Text that reads like a conflict is not one: only the kind counts.
        Finding(FindingKind.UNCLEAR_OPT_OUT, "Service conflict/x", "conflict: maybe"),
    )
    report.planned(Plan("lbhc-x", findings=findings))
    assert metrics.registry.get_sample_value("lbhc_conflicts") == 2
    assert [e.reason for e in events] == ["Conflict", "Conflict"]
    report.planned(Plan("lbhc-x"))  # resolved: the next pass says so
    assert metrics.registry.get_sample_value("lbhc_conflicts") == 0


def test_losing_the_lease_zeroes_every_gauge_an_alert_reads() -> None:
    report, metrics, _ = reporter()
    gauges = {
        "lbhc_conflicts": metrics.conflicts,
        "lbhc_fallback_active": metrics.fallback,
        "lbhc_firewall_change_needed": metrics.firewall_change_needed,
        "lbhc_gc_blocked": metrics.gc_blocked,
        "lbhc_withheld_changes": metrics.withheld,
    }
    for gauge in gauges.values():
        gauge.set(1)
    report.reset()
    values = {name: metrics.registry.get_sample_value(name) for name in gauges}
    assert values == dict.fromkeys(gauges, 0.0)
