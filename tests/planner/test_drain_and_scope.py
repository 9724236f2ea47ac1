"""Drain state per node from the checks the pools holding it really carry (whoever owns them),
the drain bound from those checks' own timings, and the wrong-scope guard."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from lbhc.model.cloud import ForwardingRule, HttpHealthCheck
from lbhc.model.cluster import Node, Pod, Service
from lbhc.model.plan import Action
from lbhc.planner.drain import DrainState
from lbhc.planner.planner import plan
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    MODERN_IMAGE as MODERN,
)
from tests.builders import (
    TO_BE_DELETED,
    assessed,
    check_url,
    cloud,
    cloud_provider_check,
    cluster,
    config,
    kube_proxy_pod,
    legacy_check,
    node,
    our_check,
    our_firewall,
    pool_for,
    rule_for,
    service,
)

SLOW_CP = cloud_provider_check(check_interval_sec=10, unhealthy_threshold=5)
OTHER_PORT = legacy_check("app-check", port=8080, request_path="/")
WEB, API, LEGACY = service("web"), service("api"), service("legacy")
LOCAL = service("local", policy="Local")
TAINTED = node("victim", taints=TO_BE_DELETED, taint_value="1795306688")
# GKE's mark on a node it is about to drain (kubernetes/ingress-gce pkg/utils/utils.go).
GKE_DRAIN = {"operation.gke.io/type": "drain"}
EXCLUDED = {"node.kubernetes.io/exclude-from-external-load-balancers": "true"}


@dataclass(frozen=True)
class Case:
    id: str
    services: tuple[Service, ...]
    pools: tuple[object, ...]
    state: DrainState
    bound: int | None = None
    not_draining: tuple[Service, ...] = ()  # whose pools are named as not draining it
    victim: Node = TAINTED
    image: str = MODERN
    checks: tuple[HttpHealthCheck, ...] = (CP, OTHER_PORT)  # the project's, as listed
    reason: str = ""  # a substring the reason must contain


def on(svc: Service, *checks: object) -> object:
    return pool_for(svc, health_checks=tuple(c.self_link for c in checks))  # type: ignore[attr-defined]


CASES = [
    Case(
        "in one pool with the cloud provider's check",
        (WEB,),
        (on(WEB, CP),),
        DrainState.DRAINING,
        32,
    ),
    Case(
        "the bound comes from the attached check's own timings",
        (WEB,),
        (on(WEB, SLOW_CP),),
        DrainState.DRAINING,
        60,
        checks=(SLOW_CP,),
    ),
    Case(
        "lbhc's check and the cloud provider's drain alike",
        (WEB, API),
        (on(WEB, CP), on(API, our_check())),
        DrainState.DRAINING,
        32,
        checks=(CP, our_check()),
    ),
    Case(
        "a legacy pool without a check keeps sending it traffic: partially",
        (WEB, LEGACY),
        (on(WEB, CP), on(LEGACY)),
        DrainState.PARTIALLY_DRAINING,
        32,
        (LEGACY,),
    ),
    Case(
        "a Local pool drains it only as its endpoints go: partially",
        (WEB, LOCAL),
        (on(WEB, CP), pool_for(LOCAL, health_checks=(check_url("alocal"),))),
        DrainState.PARTIALLY_DRAINING,
        32,
        (LOCAL,),
    ),
    Case(
        "only Local pools: never a not-draining alarm",
        (LOCAL,),
        (pool_for(LOCAL, health_checks=(check_url("alocal"),)),),
        DrainState.PARTIALLY_DRAINING,
        None,
        (LOCAL,),
    ),
    Case(
        "no pool carries a kube-proxy /healthz check",
        (LEGACY,),
        (on(LEGACY),),
        DrainState.NOT_DRAINING,
        None,
        (LEGACY,),
    ),
    Case(
        "a check on another port and path does not follow node deletion",
        (WEB,),
        (on(WEB, OTHER_PORT),),
        DrainState.NOT_DRAINING,
        None,
        (WEB,),
    ),
    Case(
        "kube-proxy too old to fail /healthz",
        (WEB,),
        (on(WEB, CP),),
        DrainState.NOT_DRAINING,
        None,
        (WEB,),
        image="registry.k8s.io/kube-proxy:v1.27.9",
    ),
    Case(
        "no load balancer made yet for its only Service: nothing to drain, no alarm",
        (service("rbs", annotations={"cloud.google.com/l4-rbs": "enabled"}),),
        (),
        DrainState.NOT_APPLICABLE,
    ),
    Case(
        "excluded from load balancers",
        (WEB,),
        (on(WEB, CP),),
        DrainState.EXCLUDED,
        victim=node(
            "victim",
            taints=TO_BE_DELETED,
            labels=EXCLUDED,
        ),
    ),
    Case(
        "labelled for a GKE drain: even the /healthz check keeps sending it traffic",
        (WEB, LEGACY),
        (on(WEB, CP), on(LEGACY)),
        DrainState.NOT_DRAINING,
        victim=node("victim", labels=GKE_DRAIN),
        reason="ignore that label: 2 load balancer(s) holding it keep sending it new connections "
        "until it is tainted ToBeDeletedByClusterAutoscaler or deleted",
    ),
    Case(
        "labelled for a GKE drain, held only by Local pools: drained as endpoints go",
        (LOCAL,),
        (pool_for(LOCAL, health_checks=(check_url("alocal"),)),),
        DrainState.PARTIALLY_DRAINING,
        None,
        (LOCAL,),
        victim=node("victim", labels=GKE_DRAIN),
        reason="operation.gke.io/type=drain",
    ),
    Case(
        "labelled for a GKE drain, in no target pool: nothing to drain",
        (),
        (),
        DrainState.NOT_APPLICABLE,
        victim=node("victim", labels=GKE_DRAIN),
        reason="GKE is about to drain it",
    ),
    Case(
        "labelled for a GKE drain and tainted: judged as any node marked for deletion",
        (WEB,),
        (on(WEB, CP),),
        DrainState.DRAINING,
        32,
        victim=node("victim", taints=TO_BE_DELETED, taint_value="1795306688", labels=GKE_DRAIN),
        reason="marked for deletion",
    ),
    Case(
        "labelled for a GKE drain and excluded from load balancers",
        (WEB,),
        (on(WEB, CP),),
        DrainState.EXCLUDED,
        victim=node("victim", labels={**GKE_DRAIN, **EXCLUDED}),
    ),
    Case(
        "another value of the GKE operation label is not a drain",
        (WEB,),
        (on(WEB, CP),),
        DrainState.SERVING,
        victim=node("victim", labels={"operation.gke.io/type": "upgrade"}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_drain_state_from_the_checks_each_pool_carries(case: Case) -> None:
    pods: tuple[Pod, ...] = (kube_proxy_pod("victim", image=case.image),)
    snapshot = cluster(services=case.services, nodes=(case.victim,), pods=pods)
    world = cloud(pools=case.pools, checks=case.checks)  # type: ignore[arg-type]
    report = assessed(snapshot, world)
    (victim,) = report.nodes
    assert victim.drain.state is case.state, victim.drain.reason
    assert victim.drain.bound_seconds == case.bound
    named = {p.name for p in victim.drain.not_draining}
    assert named == {pool_for(s).name for s in case.not_draining}
    assert victim.to_json()["drain"]["state"] == case.state.value
    assert case.reason in victim.drain.reason


def test_wrong_scope_is_said_and_nothing_is_removed() -> None:
    """The Services have load balancers (ingress IPs) but none is in this project and region:
    from GCE that looks like a cluster with none, which would collect lbhc's pair."""
    svcs = (service("web", ingress_ip="198.51.100.1"), service("api", ingress_ip="198.51.100.2"))
    world = cloud(check=our_check(), firewall=our_firewall())
    result = plan(cluster(services=svcs), world, config(project="proj", region="europe-west1"))
    assert result.out_of_scope == 2
    assert any(
        "none of the 2 LoadBalancer Service(s)" in w and "proj" in w and "europe-west1" in w
        for w in result.warnings
    )
    assert not any(c.action is Action.DELETE for c in result.changes)
    assert {c.action for c in result.withheld} == {Action.DELETE}


@pytest.mark.parametrize(
    "world",
    [
        cloud(pools=(pool_for(WEB),)),  # one pool found
        cloud(rules=(rule_for(API, ip="198.51.100.2"),)),  # a rule with one of the IPs
    ],
    ids=["a-pool-found", "a-forwarding-rule-ip-found"],
)
def test_one_load_balancer_found_is_enough_to_trust_the_scope(world: object) -> None:
    svcs = (service("web", ingress_ip="198.51.100.1"), service("api", ingress_ip="198.51.100.2"))
    result = plan(cluster(services=svcs), world, config())  # type: ignore[arg-type]
    assert result.out_of_scope == 0


BACKEND_LB_SERVICES = (
    service("rbs", annotations={"cloud.google.com/l4-rbs": "enabled"}, ingress_ip="1.2.3.4"),
    service(
        "ilb",
        annotations={"networking.gke.io/load-balancer-type": "Internal"},
        ingress_ip="10.0.0.5",
    ),
    service("class", lb_class="networking.gke.io/l4-regional-external", ingress_ip="1.2.3.5"),
)


@pytest.mark.parametrize(
    ("rules", "out_of_scope"),
    [
        # Their forwarding rules point at backend services, internal and external: in scope.
        (
            (
                ForwardingRule("r1", ip_address="1.2.3.4", backend_service="bs1"),
                ForwardingRule("r2", ip_address="10.0.0.5", backend_service="bs2"),
            ),
            0,
        ),
        ((), 3),  # none of their rules is in this region: the scope is wrong
    ],
    ids=["their-rules-found", "none-found"],
)
def test_backend_service_load_balancers_count_for_the_scope_by_their_rules(
    rules: tuple[ForwardingRule, ...], out_of_scope: int
) -> None:
    snapshot = cluster(services=BACKEND_LB_SERVICES)
    assert plan(snapshot, cloud(rules=rules), config()).out_of_scope == out_of_scope


def test_a_node_on_the_cloud_providers_check_still_drains_when_checks_cannot_be_listed() -> None:
    """Recognised by name (k8s-<uid>-node), its shape is the cloud provider's own: without
    the listing it is still a /healthz check, not a check that never drains."""
    snapshot = cluster(
        services=(WEB,), nodes=(TAINTED,), pods=(kube_proxy_pod("victim", image=MODERN),)
    )
    world = cloud(pools=(on(WEB, CP),), checks=(), checks_complete=False)
    report = assessed(snapshot, world)
    assert report.nodes[0].drain.state is DrainState.DRAINING
    assert report.nodes[0].drain.bound_seconds == 32


@pytest.mark.parametrize(
    "victim", [TAINTED, node("victim", labels=GKE_DRAIN)], ids=["marked", "gke-drain-label"]
)
def test_a_marked_node_is_unknown_when_the_pools_cannot_be_read(victim: Node) -> None:
    snapshot = cluster(
        services=(WEB,), nodes=(victim,), pods=(kube_proxy_pod("victim", image=MODERN),)
    )
    world = dataclasses.replace(
        cloud(gaps=("target pools could not be listed: 503",)), pools_complete=False
    )
    report = assessed(snapshot, world)
    assert report.nodes[0].drain.state is DrainState.UNKNOWN  # never a silent not-applicable
