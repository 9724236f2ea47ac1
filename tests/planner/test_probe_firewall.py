"""Pools whose probes the firewall drops: what lbhc reports and when it makes its own rule.
Two Cluster Services carry the cloud provider's node check; the cloud provider's firewall
is pinned to the first one's IP, as upstream makes it (cloud-provider-gcp
gce_loadbalancer_external.go ensureHTTPHealthCheckFirewall), unless a row says otherwise."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lbhc.model.cloud import Firewall, FirewallAllowed
from lbhc.model.cluster import HealthProbe
from lbhc.model.firewall import EffectiveFirewall
from lbhc.model.lb_health import HealthReading, InstanceHealth, LbHealthView
from lbhc.model.plan import Action, FindingKind, Kind
from lbhc.planner.config import PlannerConfig
from lbhc.planner.drain import DrainState
from lbhc.planner.planner import plan
from lbhc.planner.status import assess
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    TO_BE_DELETED,
    cloud,
    cluster,
    config,
    kube_proxy_pod,
    names,
    node,
    our_firewall,
    pool_for,
    rule_for,
    service,
)
from tests.builders.gce import HC_SOURCES, effective, node_check_firewall

CLUSTER_ID, NAME, URL = names()
FIRST, SECOND = service("first"), service("second")
IP_FIRST, IP_SECOND, IP_GONE = "34.0.0.1", "34.0.0.2", "34.0.0.9"
POOLS = tuple(pool_for(s, health_checks=(CP.self_link,)) for s in (FIRST, SECOND))
RULES = (rule_for(FIRST, ip=IP_FIRST), rule_for(SECOND, ip=IP_SECOND))
PINNED = node_check_firewall(pinned_to=IP_FIRST)
HEALTHY = {10256: "GCE's getHealth: 3 of 3 sampled nodes HEALTHY in pool x"}


def deny(name: str, priority: int, destination: str = "") -> Firewall:
    return Firewall(
        name=name,
        network=PINNED.network,
        priority=priority,
        denied=(FirewallAllowed("all"),),
        source_ranges=("0.0.0.0/0",),
        target_tags=("gke-node",),
        destination_ranges=(destination,) if destination else (),
    )


HEALTHY_READ = InstanceHealth.HEALTHY


@dataclass(frozen=True)
class Case:
    desc: str
    firewall: EffectiveFirewall | None = field(default_factory=lambda: effective(PINNED))
    ours: bool = False  # lbhc's firewall exists
    evidence: dict[int, str] = field(default_factory=lambda: dict(HEALTHY))
    probes: dict[str, HealthProbe] = field(default_factory=dict)
    config: PlannerConfig = field(default_factory=config)
    # expected
    changes: frozenset[tuple[Action, Kind]] = frozenset()
    second_coverage: str = "probe-blocked"
    first_coverage: str = "cloud-provider"
    evidence_wanted: tuple[str, ...] = ()
    finding: str = ""  # a piece of a probes-blocked finding
    priority: int = 1000
    unreadable: str = ""
    lb_health: LbHealthView | None = None  # the controller's own view of GCE


CREATE = frozenset({(Action.CREATE, Kind.FIREWALL)})
CASES = [
    Case(
        "pinned to the first IP, evidence: lbhc makes its rule for the second pool",
        changes=CREATE,
        finding="no rule admits them",
    ),
    Case(
        "no evidence yet: GCE's view of the admitted pool is asked for",
        evidence={},
        evidence_wanted=(POOLS[0].name,),
        finding="once GCE's getHealth shows",
    ),
    Case(
        "no evidence, but the controller's view of GCE saw a node HEALTHY in the admitted "
        "pool: it is evidence, with no read of its own",
        evidence={},
        lb_health=LbHealthView(
            {(POOLS[0].name, "node-2"): HealthReading(POOLS[0].name, "node-2", HEALTHY_READ, 1.0)},
            as_of=1.0,
            off="",
        ),
        changes=CREATE,
    ),
    Case(
        "no evidence, the controller's view saw the node HEALTHY only in the blocked pool: "
        "that is no evidence (its probes do not get in), so GCE is asked",
        evidence={},
        lb_health=LbHealthView(
            {(POOLS[1].name, "node-2"): HealthReading(POOLS[1].name, "node-2", HEALTHY_READ, 1.0)},
            as_of=1.0,
            off="",
        ),
        evidence_wanted=(POOLS[0].name,),
        finding="once GCE's getHealth shows",
    ),
    Case(
        "no evidence, the controller's probe answered: it is evidence",
        evidence={},
        probes={"node-1": HealthProbe("10.0.0.1", livez=200, healthz=200)},
        changes=CREATE,
    ),
    Case(
        "pinned to a load balancer that is gone: no pool is admitted, nothing shows the port "
        "answers, so lbhc only reports",
        firewall=effective(node_check_firewall(pinned_to=IP_GONE)),
        evidence={},
        first_coverage="probe-blocked",
        finding="does not turn health checking on blind",
    ),
    Case(
        "report only when health_check.unblock_probes is false",
        config=config(unblock_probes=False),
        finding="unblock_probes is false",
    ),
    Case(
        "the cloud provider's rule unpinned: every pool admitted, nothing to do",
        firewall=effective(node_check_firewall()),
        second_coverage="cloud-provider",
    ),
    Case(
        "lbhc's rule exists and only it admits the second pool: it stays, no check is made",
        ours=True,
        second_coverage="cloud-provider",
    ),
    Case(
        "lbhc's rule exists and nothing needs it: collected",
        ours=True,
        firewall=effective(node_check_firewall()),
        second_coverage="cloud-provider",
        changes=frozenset({(Action.DELETE, Kind.FIREWALL)}),
    ),
    Case(
        "lbhc's rule exists and the network's firewall cannot be read: it stays",
        ours=True,
        firewall=None,
        unreadable="403 Forbidden",
        second_coverage="cloud-provider",
    ),
    Case(
        "a user's deny above any allow: reported, never overridden",
        firewall=effective(PINNED, deny("team-lockdown", 900)),
        first_coverage="probe-blocked",
        finding="lbhc never overrides another deny",
    ),
    Case(
        "the cloud provider's per-LB deny rules at 1000: lbhc's rule sits at 999 above them",
        firewall=effective(
            node_check_firewall(pinned_to=IP_FIRST, priority=999),
            deny(f"k8s-fw-{POOLS[0].name}-deny", 1000, IP_FIRST),
            deny(f"k8s-fw-{POOLS[1].name}-deny", 1000, IP_SECOND),
        ),
        changes=CREATE,
        priority=999,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.desc for c in CASES])
def test_blocked_probes(case: Case) -> None:
    marked = node("node-1", taints=TO_BE_DELETED, taint_value="1700000000")
    snapshot = cluster(
        nodes=(marked,),
        services=(FIRST, SECOND),
        pods=(kube_proxy_pod("node-1"),),
        probes=case.probes,
    )
    world = cloud(
        firewall=our_firewall() if case.ours else None,
        pools=POOLS,
        rules=RULES,
        checks=(CP,),
        network_firewall=case.firewall,
        network_firewall_unreadable=case.unreadable,
        port_evidence=case.evidence,
        lb_health=case.lb_health,
    )
    result = plan(snapshot, world, case.config)
    assert {(c.action, c.kind) for c in result.changes} == case.changes, result.warnings
    assert result.evidence_wanted == case.evidence_wanted
    blocked = [f.text for f in result.findings if f.kind is FindingKind.PROBES_BLOCKED]
    if case.finding:
        assert any(case.finding in text for text in blocked), blocked
    for change in result.changes:
        if change.action is Action.CREATE:
            created = change.desired
            assert isinstance(created, Firewall)
            assert created.priority == case.priority
            assert created.destination_ranges == () and set(created.source_ranges) <= set(
                HC_SOURCES
            )
            assert "no rule admits" in change.reason

    report = assess(snapshot, world, case.config, result)
    coverage = {s.service: s.coverage.value for s in report.services}
    assert coverage == {FIRST.key: case.first_coverage, SECOND.key: case.second_coverage}
    drain = report.nodes[0].drain
    if case.first_coverage == "probe-blocked":
        assert drain.state is DrainState.NOT_DRAINING, drain.reason
    elif case.second_coverage == "probe-blocked":
        # The second pool fails open: it keeps sending the marked node new connections.
        assert drain.state is DrainState.PARTIALLY_DRAINING, drain.reason
        assert [p.name for p in drain.not_draining] == [POOLS[1].name]
        assert "fails open" in drain.reason
    else:
        assert drain.state is DrainState.DRAINING, drain.reason


def test_every_pool_blocked_is_not_draining() -> None:
    """Pinned to a load balancer that is gone: both pools fail open, none drains the node."""
    marked = node("node-1", taints=TO_BE_DELETED, taint_value="1700000000")
    snapshot = cluster(nodes=(marked,), services=(FIRST, SECOND), pods=(kube_proxy_pod("node-1"),))
    world = cloud(
        pools=POOLS,
        rules=RULES,
        checks=(CP,),
        network_firewall=effective(node_check_firewall(pinned_to=IP_GONE)),
    )
    report = assess(snapshot, world, config(), plan(snapshot, world, config()))
    drain = report.nodes[0].drain
    assert drain.state is DrainState.NOT_DRAINING, drain.reason
    assert {p.name for p in drain.not_draining} == {p.name for p in POOLS}
    assert IP_GONE in drain.reason  # the near miss: the rule admits only that destination
    counts = report.coverage_counts()
    assert counts["probe-blocked"] == 2 and counts["cloud-provider"] == 0


def test_a_blocked_pool_is_a_metric_and_one_warning_on_its_service() -> None:
    """lbhc_pool_coverage counts it; its Service gets a ProbesBlocked Warning once, naming
    the reason, and again only after it was admitted in between."""
    from lbhc.controller.awareness import PROBES_BLOCKED, KubeProxyReporter
    from lbhc.controller.events import EventSpec, ObjectRef
    from lbhc.controller.metrics import Metrics

    snapshot = cluster(services=(FIRST, SECOND), pods=(kube_proxy_pod("node-1"),))
    pinned = cloud(pools=POOLS, rules=RULES, checks=(CP,), network_firewall=effective(PINNED))
    admitted = cloud(pools=POOLS, rules=RULES, checks=(CP,))
    metrics, events = Metrics(), list[EventSpec]()
    reporter = KubeProxyReporter(metrics, events.append, ObjectRef("Lease", "lbhc", "lbhc-system"))
    for world in (pinned, pinned, admitted, pinned):
        reporter.observe(assess(snapshot, world, config(), plan(snapshot, world, config())))
    warned = [e for e in events if e.reason == PROBES_BLOCKED]
    assert [(e.regarding.name, e.type) for e in warned] == [("second", "Warning")] * 2
    assert IP_SECOND in warned[0].note and "implied deny" in warned[0].note
    value = metrics.registry.get_sample_value
    assert (
        value("lbhc_pool_coverage", {"coverage": "probe-blocked", "load_balancer": "target-pool"})
        == 1
    )


def test_the_pass_that_makes_lbhcs_rule_judges_the_pool_admitted() -> None:
    """The controller judges drain from the cloud as its pass left it (planner/applied): the
    pool lbhc's new rule admits is no longer probe-blocked, nor its Service warned about,
    until a resync reads the rule back."""
    from lbhc.planner.applied import cloud_after

    snapshot = cluster(services=(FIRST, SECOND), pods=(kube_proxy_pod("node-1"),))
    world = cloud(
        pools=POOLS,
        rules=RULES,
        checks=(CP,),
        network_firewall=effective(PINNED),
        port_evidence=dict(HEALTHY),
    )
    result = plan(snapshot, world, config())
    assert {(c.action, c.kind) for c in result.changes} == CREATE
    after = assess(snapshot, cloud_after(world, result.changes), config(), result)
    assert {s.service: s.coverage.value for s in after.services} == {
        FIRST.key: "cloud-provider",
        SECOND.key: "cloud-provider",
    }
