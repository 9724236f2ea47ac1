"""Classes of pools probed alike, what GCE's getHealth readings make of each, and how that
and a marked node's own readings (membership, UNHEALTHY) turn into its drain verdict."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lbhc.model.lb_health import HealthReading, InstanceHealth, LbHealthView
from lbhc.planner.drain import DrainState, NodeDrain
from lbhc.planner.lb_views import PoolDrainKind
from lbhc.planner.pool_classes import ClassHealth, PoolClass, judge_class
from lbhc.planner.status import StatusReport
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    MODERN_IMAGE,
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    kube_proxy_pod,
    node,
    pool_for,
    rule_for,
    service,
)

NOW = 10_000.0
BOUND = 32  # the cloud provider's check: 8 s x (3 + 1)
HEALTHZ = PoolClass(PoolDrainKind.HEALTHZ, CP.name, "admitted", ("a1", "a2"), BOUND)
H, U, OUT = InstanceHealth.HEALTHY, InstanceHealth.UNHEALTHY, InstanceHealth.NOT_MEMBER


def reading(
    pool: str, node_name: str, state: InstanceHealth, age: float = 0, unhealthy_for: float = 0
) -> HealthReading:
    since = NOW - unhealthy_for if state is U else None
    return HealthReading(pool, node_name, state, NOW - age, since)


def view(*readings: HealthReading, max_age: float = 180) -> LbHealthView:
    return LbHealthView({(r.pool, r.node): r for r in readings}, NOW, max_age, off="")


@dataclass(frozen=True)
class ClassCase:
    name: str
    readings: tuple[HealthReading, ...]
    health: ClassHealth
    kube_proxy_healthy: bool | None = True


CLASS_CASES = [
    ClassCase("all healthy", (reading("a1", "s1", H), reading("a2", "s2", H)), ClassHealth.HEALTHY),
    ClassCase(
        "some unhealthy", (reading("a1", "s1", H), reading("a1", "s2", U)), ClassHealth.DEGRADED
    ),
    ClassCase(
        "all unhealthy past the bound",
        (reading("a1", "s1", U, unhealthy_for=40), reading("a2", "s2", U, unhealthy_for=33)),
        ClassHealth.FAILING_OPEN,
    ),
    # A check made moments ago starts UNHEALTHY: not failing open before its bound.
    ClassCase(
        "all unhealthy under the bound",
        (reading("a1", "s1", U, unhealthy_for=40), reading("a2", "s2", U, unhealthy_for=10)),
        ClassHealth.UNVERIFIED,
    ),
    # Read once, 100 s ago: nothing is known of the 100 s since (a new check turns HEALTHY).
    ClassCase(
        "one old reading",
        (reading("a1", "s1", U, age=100, unhealthy_for=100),),
        ClassHealth.UNVERIFIED,
    ),
    ClassCase(
        "kube-proxy itself unhealthy",
        (reading("a1", "s1", U, unhealthy_for=99),),
        ClassHealth.DEGRADED,
        kube_proxy_healthy=False,
    ),
    ClassCase("nothing read", (), ClassHealth.UNVERIFIED),
    ClassCase("only stale readings", (reading("a1", "s1", H, age=500),), ClassHealth.UNVERIFIED),
    # A marked node's UNHEALTHY is what it should be: only serving nodes judge the class.
    ClassCase(
        "marked node ignored",
        (reading("a1", "s1", H), reading("a1", "marked", U, unhealthy_for=99)),
        ClassHealth.HEALTHY,
    ),
    ClassCase(
        "another class's pool ignored", (reading("b1", "s1", U, 0, 99),), ClassHealth.UNVERIFIED
    ),
]


@pytest.mark.parametrize("case", CLASS_CASES, ids=[c.name for c in CLASS_CASES])
def test_a_class_is_judged_from_its_serving_nodes_fresh_readings(case: ClassCase) -> None:
    verdict = judge_class(
        HEALTHZ, view(*case.readings), {"s1", "s2"}, case.kube_proxy_healthy, max_age=180
    )
    assert verdict.health is case.health, verdict.reason


def test_with_reading_off_a_class_is_unverified_and_says_why() -> None:
    verdict = judge_class(HEALTHZ, LbHealthView(), {"s1"}, True, 180)
    assert verdict.health is ClassHealth.UNVERIFIED
    assert "not read" in verdict.reason


def test_a_class_without_a_kube_proxy_check_is_not_sampled() -> None:
    local = PoolClass(PoolDrainKind.LOCAL, "k8s-web", "admitted", ("l1",), BOUND)
    assert judge_class(local, view(reading("l1", "s1", U)), {"s1"}, True, 180).health is (
        ClassHealth.NOT_SAMPLED
    )


# ---- through `lbhc status`: classes, membership and verification of a marked node -----------


def report(*readings: HealthReading, marked_at: str = "") -> StatusReport:
    """Two Services on the cloud provider's check; serving nodes s1, s2; node m marked."""
    web, api = service("web"), service("api")
    nodes = (
        node("s1"),
        node("s2"),
        node("m", taints=TO_BE_DELETED, taint_value=marked_at),
    )
    pods = tuple(kube_proxy_pod(n.name, image=MODERN_IMAGE) for n in nodes)
    pools = tuple(pool_for(s, health_checks=(CP.self_link,)) for s in (web, api))
    rules = (rule_for(web, ip="34.0.0.1"), rule_for(api, ip="34.0.0.2"))
    world = cloud(pools=pools, rules=rules, checks=(CP,), lb_health=view(*readings))
    return assessed(cluster(services=(web, api), nodes=nodes, pods=pods), world)


def pools() -> tuple[str, str]:
    return pool_for(service("web")).name, pool_for(service("api")).name


def drain_of(r: StatusReport, name: str = "m") -> NodeDrain:
    return next(n.drain for n in r.nodes if n.node == name)


def test_pools_probed_alike_form_one_class() -> None:
    r = report()
    assert len(r.pool_classes) == 1
    assert set(r.pool_classes[0].pool_class.pools) == set(pools())


def test_a_failing_open_class_drains_nothing_and_the_verdict_says_so() -> None:
    web, _ = pools()
    r = report(reading(web, "s1", U, unhealthy_for=60), reading(web, "s2", U, unhealthy_for=60))
    assert r.pool_classes[0].health is ClassHealth.FAILING_OPEN
    failing = [v for v in r.pool_classes if v.health is ClassHealth.FAILING_OPEN]
    assert sum(len(v.pool_class.pools) for v in failing) == 2
    drain = drain_of(r)
    assert drain.state is DrainState.NOT_DRAINING
    assert "fails open" in drain.reason


def test_a_marked_node_unhealthy_in_a_healthy_admitted_class_is_verified_draining() -> None:
    web, api = pools()
    r = report(reading(web, "s1", H), reading(api, "s2", H), reading(web, "m", U, unhealthy_for=5))
    drain = drain_of(r)
    assert drain.state is DrainState.DRAINING
    assert drain.verified, drain.evidence
    assert f"UNHEALTHY in target pool {web}" in drain.evidence


@pytest.mark.parametrize(
    ("readings", "missing"),
    [
        ((reading("WEB", "s1", H),), "not read yet"),  # the marked node itself not read
        ((reading("WEB", "m", U),), "unverified"),  # the class's check not seen passing
    ],
    ids=["marked-node-unread", "class-unverified"],
)
def test_a_draining_verdict_without_full_evidence_says_what_is_missing(
    readings: tuple[HealthReading, ...], missing: str
) -> None:
    web, _ = pools()
    fixed = tuple(HealthReading(web, r.node, r.state, r.at, r.unhealthy_since) for r in readings)
    drain = drain_of(report(*fixed))
    assert drain.state is DrainState.DRAINING
    assert not drain.verified
    assert drain.evidence.startswith("not verified") and missing in drain.evidence


def test_a_marked_node_gce_shows_out_of_every_class_is_not_applicable_and_verified() -> None:
    web, _ = pools()
    drain = drain_of(report(reading(web, "s1", H), reading(web, "m", OUT)))
    assert drain.state is DrainState.NOT_APPLICABLE
    assert drain.verified
    assert "took it out" in drain.reason


def test_without_any_reading_membership_is_derived_and_the_verdict_unverified() -> None:
    drain = drain_of(report())
    assert drain.state is DrainState.DRAINING
    assert not drain.verified
    assert "not verified" in drain.evidence


def test_a_serving_node_carries_no_evidence() -> None:
    assert drain_of(report(), "s1").evidence == ""
