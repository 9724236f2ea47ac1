"""A marked node's drain verdict across every kind of load balancer holding it: target pools
and backend services (instance groups as read, NEGs derived from ingress-gce's node
selection), with connection draining, Local policies and blocked probes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lbhc.model.backend import INTERNAL, BackendService
from lbhc.model.cloud import ForwardingRule, TargetPool
from lbhc.model.cluster import Node, Service
from lbhc.planner.coverage import Coverage
from lbhc.planner.drain import DrainState
from tests.builders import (
    CLOUD_PROVIDER_CHECK,
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    kube_proxy_pod,
    node,
    pool_for,
    service,
)
from tests.builders.backend import (
    INTERNAL_HC,
    SHARED_GROUP,
    SHARED_HC,
    TCP_HC,
    annotated,
    backend,
    backend_view,
    neg,
    rule_to,
)
from tests.builders.gce import effective, node_check_firewall

TAINTED = node("victim", taints=TO_BE_DELETED, taint_value="1795306688")
BEING_DELETED = node("victim", deleting=True)
GKE_DRAIN = node("victim", labels={"operation.gke.io/type": "drain"})

RBS = annotated("rbs", "k8s2-rbs")
ILB = annotated("ilb", "k8s2-ilb")
LOCAL = annotated("local", "k8s2-local", "Local")
WEB = service("web")  # its target pool carries the cloud provider's legacy node check


def on_group(name: str, check: object = SHARED_HC, **fields: object) -> BackendService:
    return backend(name, check, backends=(SHARED_GROUP,), draining_timeout_sec=30, **fields)  # type: ignore[arg-type]


def on_neg(name: str, check: object = SHARED_HC, **fields: object) -> BackendService:
    return backend(name, check, backends=(neg(f"{name}-neg"),), draining_timeout_sec=30, **fields)  # type: ignore[arg-type]


# The cloud provider's own internal load balancer: a<uid>, described with the Service's name,
# its global non-legacy check named like the legacy node check, no connection draining.
CP_ILB_SERVICE = service("cp-ilb")
CP_ILB = backend(
    f"a{CP_ILB_SERVICE.metadata.uid.replace('-', '')}"[:32],
    INTERNAL_HC,
    scheme=INTERNAL,
    backends=(SHARED_GROUP,),
    description='{"kubernetes.io/service-name":"default/cp-ilb"}',
)
# Admits only the external load balancers' probe ranges: internal ones' 130.211.0.0/22 drops.
EXTERNAL_ONLY = effective(
    node_check_firewall(source_ranges=("35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"))
)


@dataclass(frozen=True)
class Case:
    id: str
    services: tuple[Service, ...]
    backends: tuple[BackendService, ...]
    state: DrainState
    in_group: bool = True  # the victim is a member of the shared instance group, as read
    victim: Node = TAINTED
    pools: tuple[TargetPool, ...] = ()
    bound: int | None = None
    verified: bool = False
    reason: str = ""  # a phrase the verdict must say
    not_draining: tuple[str, ...] = ()  # load balancers named as still sending it traffic
    taken_out: tuple[str, ...] = ()  # load balancers named as not holding it
    firewall: object = None  # the effective firewall, when not the admitting default
    extra: dict[str, object] = field(default_factory=dict)


INTERNAL_RBS = on_group("k8s2-ilb", INTERNAL_HC, scheme=INTERNAL)
CASES = [
    Case(
        "instance group member, ingress-gce's shared check: draining by its check",
        (RBS,),
        (on_group("k8s2-rbs"),),
        DrainState.DRAINING,
        bound=32,
        reason="every load balancer holding it drains it",
    ),
    Case(
        "taken out of the instance group, as read: nothing holds it, with connection draining",
        (RBS,),
        (on_group("k8s2-rbs"),),
        DrainState.NOT_APPLICABLE,
        in_group=False,
        verified=True,
        reason="connection draining lets established connections run up to 30 s",
        taken_out=("k8s2-rbs",),
    ),
    Case(
        "a NEG subset: ingress-gce drops a tainted node, derived, so not verified",
        (ILB,),
        (on_neg("k8s2-ilb", scheme=INTERNAL),),
        DrainState.NOT_APPLICABLE,
        reason="derived from ingress-gce's node selection",
        taken_out=("k8s2-ilb",),
    ),
    Case(
        "a NEG keeps a node only being deleted (no taint): its check drains it",
        (ILB,),
        (on_neg("k8s2-ilb", scheme=INTERNAL),),
        DrainState.DRAINING,
        victim=BEING_DELETED,
        bound=32,
    ),
    Case(
        "GKE's drain label: Cluster NEGs drop the node, target pools keep it",
        (ILB, WEB),
        (on_neg("k8s2-ilb", scheme=INTERNAL),),
        DrainState.NOT_DRAINING,
        victim=GKE_DRAIN,
        pools=(pool_for(WEB, health_checks=(CLOUD_PROVIDER_CHECK.self_link,)),),
        taken_out=("k8s2-ilb",),
    ),
    Case(
        "the cloud provider's internal load balancer: its global k8s-<id>-node check drains it",
        (CP_ILB_SERVICE, WEB),
        (CP_ILB,),
        DrainState.DRAINING,
        pools=(pool_for(WEB, health_checks=(CLOUD_PROVIDER_CHECK.self_link,)),),
        bound=32,
    ),
    Case(
        "Local: drains only as its endpoints go",
        (LOCAL,),
        (on_group("k8s2-local"),),
        DrainState.PARTIALLY_DRAINING,
        not_draining=("k8s2-local",),
    ),
    Case(
        "a TCP check does not follow node deletion",
        (RBS,),
        (on_group("k8s2-rbs", TCP_HC),),
        DrainState.NOT_DRAINING,
        not_draining=("k8s2-rbs",),
    ),
    Case(
        "an internal load balancer's probes partly dropped: it fails open",
        (ILB,),
        (INTERNAL_RBS,),
        DrainState.NOT_DRAINING,
        firewall=EXTERNAL_ONLY,
        reason="fails open",
        not_draining=("k8s2-ilb",),
    ),
    Case(
        "the same firewall admits every probe of an external one",
        (RBS,),
        (on_group("k8s2-rbs"),),
        DrainState.DRAINING,
        firewall=EXTERNAL_ONLY,
        bound=32,
    ),
    Case(
        "a target pool drains it, a backend service took it out: draining",
        (WEB, RBS),
        (on_group("k8s2-rbs"),),
        DrainState.DRAINING,
        in_group=False,
        pools=(pool_for(WEB, health_checks=(CLOUD_PROVIDER_CHECK.self_link,)),),
        bound=32,
        taken_out=("k8s2-rbs",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_marked_nodes_verdict_weighs_every_load_balancer_holding_it(case: Case) -> None:
    members = {SHARED_GROUP: ("victim", "other") if case.in_group else ("other",)}
    ips = iter(f"10.128.0.{i}" for i in range(10, 99))
    rules: list[ForwardingRule] = [rule_to(b, next(ips)) for b in case.backends]
    rules += [ForwardingRule(p.name, target=p.self_link, ip_address=next(ips)) for p in case.pools]
    firewall = case.firewall or effective(node_check_firewall())
    world = cloud(
        pools=case.pools,
        rules=tuple(rules),
        checks=(CLOUD_PROVIDER_CHECK,),
        backends=backend_view(case.backends, members),
        network_firewall=firewall,  # type: ignore[arg-type]
    )
    snapshot = cluster(
        services=case.services, nodes=(case.victim,), pods=(kube_proxy_pod("victim"),)
    )
    drain = assessed(snapshot, world).nodes[0].drain
    assert drain.state is case.state, drain.reason
    assert drain.bound_seconds == case.bound, drain.reason
    assert case.reason in drain.reason, drain.reason
    assert [p.name for p in drain.not_draining] == list(case.not_draining), drain.reason
    assert [r.view.name for r in drain.taken_out] == list(case.taken_out), drain.reason
    if drain.marked_for_deletion:
        assert drain.verified is case.verified, drain.evidence


def test_backend_services_unread_make_a_node_in_no_pool_unknown_not_applicable() -> None:
    world = cloud(backends=backend_view(()).__class__(unreadable="403 Forbidden"))
    snapshot = cluster(services=(RBS,), nodes=(TAINTED,), pods=(kube_proxy_pod("victim"),))
    drain = assessed(snapshot, world).nodes[0].drain
    assert drain.state is DrainState.UNKNOWN
    assert "backend services could not be read (403 Forbidden)" in drain.reason


def test_status_shows_an_internal_load_balancer_whose_probes_are_dropped_as_probe_blocked() -> None:
    world = cloud(
        rules=(rule_to(INTERNAL_RBS, "10.128.0.9"),),
        backends=backend_view((INTERNAL_RBS,), {SHARED_GROUP: ("victim",)}),
        network_firewall=EXTERNAL_ONLY,
    )
    status = assessed(cluster(services=(ILB,)), world).services[0]
    assert status.coverage is Coverage.PROBE_BLOCKED, status.reason
    assert status.carried is Coverage.BACKEND_SERVICE
    assert status.probe_reach == "partly-blocked"
    assert "130.211.0.0/22" in status.probe_reach_reason
