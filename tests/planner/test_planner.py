"""Table-driven planner tests: one row per planner rule, named for the rule."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Action, Kind, Plan
from lbhc.planner.config import HealthCheckMode, PlannerConfig, UnknownVersionPolicy
from lbhc.planner.planner import PlanningError, plan
from tests.builders import (
    cloud,
    cluster,
    config,
    kube_proxy_pod,
    names,
    node,
    our_check,
    our_firewall,
    pool_for,
    rule_for,
    service,
)

CLUSTER_ID, NAME, URL = names()
FOREIGN_URL = (
    "https://www.googleapis.com/compute/v1/projects/proj/global/httpHealthChecks/someone-elses"
)

WEB = service("web")
API = service("api", namespace="prod")
LOCAL = service("local", policy="Local")


@dataclass(frozen=True)
class Case:
    id: str
    cluster: ClusterSnapshot
    cloud: object
    expect: set[tuple[Action, Kind, str]]
    config: PlannerConfig = field(default_factory=config)
    warning: str | None = None  # a substring some warning must contain
    fallback: bool = False
    withheld: int = 0


def converged(*svcs: object, extra_pools: tuple[object, ...] = ()) -> object:
    pools = tuple(pool_for(s, health_checks=(URL,)) for s in svcs)  # type: ignore[arg-type]
    return cloud(check=our_check(), firewall=our_firewall(), pools=pools + extra_pools)  # type: ignore[arg-type]


CASES = [
    Case(
        "from nothing: create both shared resources, attach the Cluster pool",
        cluster(services=(WEB,)),
        cloud(pools=(pool_for(WEB),)),
        {
            (Action.CREATE, Kind.FIREWALL, NAME),
            (Action.CREATE, Kind.HTTP_HEALTH_CHECK, NAME),
            (Action.ATTACH, Kind.TARGET_POOL, pool_for(WEB).name),
        },
    ),
    Case("converged: nothing to do", cluster(services=(WEB, API)), converged(WEB, API), set()),
    Case(
        "externalTrafficPolicy omitted means Cluster",
        cluster(services=(service("web", policy=None),)),
        cloud(
            check=our_check(),
            firewall=our_firewall(),
            pools=(pool_for(service("web", policy=None)),),
        ),
        {(Action.ATTACH, Kind.TARGET_POOL, pool_for(WEB).name)},
    ),
    Case(
        "Local pool never gets ours",
        cluster(services=(WEB, LOCAL)),
        cloud(
            check=our_check(),
            firewall=our_firewall(),
            pools=(pool_for(WEB, health_checks=(URL,)), pool_for(LOCAL)),
        ),
        set(),
    ),
    Case(
        "Service flipped to Local: ours is detached",
        cluster(services=(WEB, LOCAL)),
        converged(WEB, LOCAL),
        {(Action.DETACH, Kind.TARGET_POOL, pool_for(LOCAL).name)},
    ),
    Case(
        "backfill: an existing pool without a check is attached",
        cluster(services=(WEB, API)),
        cloud(
            check=our_check(),
            firewall=our_firewall(),
            pools=(pool_for(WEB, health_checks=(URL,)), pool_for(API)),
        ),
        {(Action.ATTACH, Kind.TARGET_POOL, pool_for(API).name)},
    ),
    Case(
        "a pool with another check is left alone and reported; lbhc's pair is not kept for it",
        cluster(services=(WEB,)),
        cloud(
            check=our_check(),
            firewall=our_firewall(),
            pools=(pool_for(WEB, health_checks=(FOREIGN_URL,)),),
        ),
        # Nothing needs lbhc's check any more: the pair is collected, check first.
        {(Action.DELETE, Kind.HTTP_HEALTH_CHECK, NAME), (Action.DELETE, Kind.FIREWALL, NAME)},
        warning="does not probe kube-proxy's /healthz",
    ),
    Case(
        "takeover replaces it, after recording it in the ledger (an update of our check)",
        cluster(services=(WEB,)),
        cloud(
            check=our_check(),
            firewall=our_firewall(),
            pools=(pool_for(WEB, health_checks=(FOREIGN_URL,)),),
        ),
        {
            (Action.UPDATE, Kind.HTTP_HEALTH_CHECK, NAME),
            (Action.ATTACH, Kind.TARGET_POOL, pool_for(WEB).name),
        },
        config=config(health_check_mode=HealthCheckMode.TAKEOVER),
    ),
    Case(
        "Service without a pool yet: nothing to do and nothing created",
        cluster(services=(WEB,)),
        cloud(),
        set(),
    ),
    Case(
        "ClusterIP Service is ignored",
        cluster(services=(service("c", type_="ClusterIP"),)),
        cloud(),
        set(),
    ),
    Case(
        "foreign loadBalancerClass is not ours",
        cluster(services=(service("web", lb_class="example.com/lb"),)),
        cloud(pools=(pool_for(WEB),)),
        set(),
    ),
    Case(
        "a loadBalancerClass configured as ours is eligible",
        cluster(services=(service("web", lb_class="example.com/lb"),)),
        cloud(check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB),)),
        {(Action.ATTACH, Kind.TARGET_POOL, pool_for(WEB).name)},
        config=config(load_balancer_classes=("example.com/lb",)),
    ),
    Case(
        "opt-out annotation detaches ours",
        cluster(services=(service("web", annotations={"lbhc.dev/ignore": "true"}), API)),
        converged(WEB, API),
        {(Action.DETACH, Kind.TARGET_POOL, pool_for(WEB).name)},
    ),
    Case(
        "a Service being deleted (cleanup finalizer pending) has ours detached",
        cluster(services=(service("web", deleting=True), API)),
        converged(WEB, API),
        {(Action.DETACH, Kind.TARGET_POOL, pool_for(WEB).name)},
    ),
    Case(
        "the last Service being deleted: detach, then the shared pair is collected",
        cluster(services=(service("web", deleting=True),)),
        converged(WEB),
        {
            (Action.DETACH, Kind.TARGET_POOL, pool_for(WEB).name),
            (Action.DELETE, Kind.HTTP_HEALTH_CHECK, NAME),
            (Action.DELETE, Kind.FIREWALL, NAME),
        },
    ),
    Case(
        "pool description naming another Service is not touched",
        cluster(services=(WEB, API)),
        converged(API, extra_pools=(pool_for(WEB, claim="other/svc"),)),
        set(),
        warning="claims other/svc",
    ),
    Case(
        "pool confirmed by its forwarding rule when the pool has no description",
        cluster(services=(WEB,)),
        cloud(
            check=our_check(),
            firewall=our_firewall(),
            pools=(pool_for(WEB, described=False),),
            rules=(rule_for(WEB),),
        ),
        {(Action.ATTACH, Kind.TARGET_POOL, pool_for(WEB).name)},
    ),
    Case(
        "unconfirmable pool is left alone",
        cluster(services=(WEB, API)),
        converged(API, extra_pools=(pool_for(WEB, described=False),)),
        set(),
        warning="has no kubernetes.io/service-name",
    ),
    Case(
        "drifted check is updated",
        cluster(services=(WEB,)),
        cloud(
            check=our_check(request_path="/", check_interval_sec=2),
            firewall=our_firewall(),
            pools=(pool_for(WEB, health_checks=(URL,)),),
        ),
        {(Action.UPDATE, Kind.HTTP_HEALTH_CHECK, NAME)},
    ),
    Case(
        "firewall pinned to one IP is unpinned",
        cluster(services=(WEB,)),
        cloud(
            check=our_check(),
            firewall=our_firewall(destination_ranges=("1.2.3.4/32",)),
            pools=(pool_for(WEB, health_checks=(URL,)),),
        ),
        {(Action.UPDATE, Kind.FIREWALL, NAME)},
    ),
    Case(
        "firewall widened by hand (source tags, service accounts) is narrowed again",
        cluster(services=(WEB,)),
        cloud(
            check=our_check(),
            firewall=our_firewall(source_tags=("any",), target_service_accounts=("sa@x",)),
            pools=(pool_for(WEB, health_checks=(URL,)),),
        ),
        {(Action.UPDATE, Kind.FIREWALL, NAME)},
    ),
    Case(
        "same-named check not owned: conflict, never modified, nothing attached",
        cluster(services=(WEB,)),
        cloud(check=our_check(description="hand made"), pools=(pool_for(WEB),)),
        {(Action.CREATE, Kind.FIREWALL, NAME)},
        warning="conflict: HttpHealthCheck",
    ),
    Case(
        "same-named firewall not owned: conflict, attaches frozen",
        cluster(services=(WEB, API)),
        cloud(
            check=our_check(),
            firewall=our_firewall(description="{}"),
            pools=(pool_for(WEB, health_checks=(URL,)), pool_for(API)),
        ),
        set(),
        warning="conflict: Firewall",
    ),
    Case(
        "firewall on another network is reported, not rewritten",
        cluster(services=(WEB,)),
        cloud(
            check=our_check(),
            firewall=our_firewall(network="projects/proj/global/networks/x"),
            pools=(pool_for(WEB),),
        ),
        set(),
        warning="is on network",
    ),
    Case(
        "GC: last Service flipped to Local: detach, then delete check, then firewall",
        cluster(services=(LOCAL,)),
        converged(LOCAL),
        {
            (Action.DETACH, Kind.TARGET_POOL, pool_for(LOCAL).name),
            (Action.DELETE, Kind.HTTP_HEALTH_CHECK, NAME),
            (Action.DELETE, Kind.FIREWALL, NAME),
        },
    ),
    Case(
        "GC waits while a pool no Service claims (a deleted Service's) still carries the check",
        cluster(services=()),
        converged(WEB),
        set(),
        warning="garbage collection waits",
    ),
    Case(
        "GC once the deleted Service's pool is gone",
        cluster(services=()),
        cloud(check=our_check(), firewall=our_firewall()),
        {(Action.DELETE, Kind.HTTP_HEALTH_CHECK, NAME), (Action.DELETE, Kind.FIREWALL, NAME)},
    ),
    Case(
        "GC when the only LoadBalancer Service has no target pool (e.g. backend-service LB)",
        cluster(services=(WEB,)),
        cloud(check=our_check(), firewall=our_firewall()),
        {(Action.DELETE, Kind.HTTP_HEALTH_CHECK, NAME), (Action.DELETE, Kind.FIREWALL, NAME)},
    ),
    Case(
        "GC never deletes what it does not own",
        cluster(services=()),
        cloud(check=our_check(description="x"), firewall=our_firewall(description="y")),
        set(),
        warning="conflict",
    ),
    Case(
        "fallback: an old kube-proxy detaches ours everywhere",
        cluster(
            services=(WEB, API),
            nodes=(node("new"), node("old")),
            pods=(kube_proxy_pod("old", image="registry.k8s.io/kube-proxy:v1.6.4"),),
        ),
        converged(WEB, API),
        {
            (Action.DETACH, Kind.TARGET_POOL, pool_for(WEB).name),
            (Action.DETACH, Kind.TARGET_POOL, pool_for(API).name),
        },
        fallback=True,
    ),
    Case(
        "fallback: nothing created while in fallback",
        cluster(services=(WEB,), nodes=(node("old", kubelet="v1.7.1"),)),
        cloud(pools=(pool_for(WEB),)),
        set(),
        fallback=True,
    ),
    Case(
        "old node excluded from load balancers does not trigger fallback",
        cluster(
            services=(WEB,),
            nodes=(
                node("new"),
                node(
                    "old",
                    kubelet="v1.6.0",
                    labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""},
                ),
            ),
        ),
        converged(WEB),
        set(),
    ),
    Case(
        "unknown version falls back by default",
        cluster(services=(WEB,), nodes=(node("weird", kubelet="custom-build"),)),
        converged(WEB),
        {(Action.DETACH, Kind.TARGET_POOL, pool_for(WEB).name)},
        fallback=True,
    ),
    Case(
        "unknown version can be assumed to serve /healthz",
        cluster(services=(WEB,), nodes=(node("weird", kubelet="custom-build"),)),
        converged(WEB),
        set(),
        config=config(unknown_version_policy=UnknownVersionPolicy.ASSUME_SUPPORTED),
    ),
    Case(
        "the pod image outranks the node's kubelet version",
        cluster(
            services=(WEB,),
            nodes=(node("n", kubelet="v1.31.0"),),
            pods=(kube_proxy_pod("n", image="gcr.io/x/kube-proxy:v1.7.0"),),
        ),
        converged(WEB),
        {(Action.DETACH, Kind.TARGET_POOL, pool_for(WEB).name)},
        fallback=True,
    ),
    Case(
        "incomplete cluster view: detaches and deletes withheld, attaches still made",
        cluster(services=(API, LOCAL), gaps=("services could not be listed",)),
        converged(LOCAL, extra_pools=(pool_for(API),)),
        {(Action.ATTACH, Kind.TARGET_POOL, pool_for(API).name)},
        withheld=1,
    ),
    Case(
        "incomplete cloud view: GC withheld",
        cluster(services=()),
        cloud(
            check=our_check(), firewall=our_firewall(), gaps=("target pools could not be listed",)
        ),
        set(),
        withheld=2,
    ),
    Case(
        "an opt-out value that is neither true nor false attaches, and says so",
        cluster(services=(service("web", annotations={"lbhc.dev/ignore": "maybe"}),)),
        cloud(check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB),)),
        {(Action.ATTACH, Kind.TARGET_POOL, pool_for(WEB).name)},
        warning="lbhc.dev/ignore='maybe' is neither true nor false; read as false",
    ),
    Case(
        "a widened firewall awaiting GC is narrowed even while its delete is withheld",
        cluster(services=()),
        cloud(
            check=our_check(),
            firewall=our_firewall(source_ranges=("0.0.0.0/0",)),
            gaps=("target pools could not be listed",),
        ),
        {(Action.UPDATE, Kind.FIREWALL, NAME)},
        withheld=2,
    ),
    Case(
        "ours on a pool no Service of this cluster claims is left alone and reported",
        cluster(services=(WEB,)),
        converged(WEB, extra_pools=(pool_for(API, health_checks=(URL,)),)),
        set(),
        warning="no Service of this cluster claims it",
    ),
    Case(
        "nodes or kube-proxy Pods unread: nothing new attached or created",
        ClusterSnapshot(
            (),
            (WEB, API),
            (),
            "0b7c3c5e-1111-2222-3333-444455556666",
            ("nodes could not be listed",),
            versions_complete=False,
        ),
        cloud(pools=(pool_for(WEB), pool_for(API, health_checks=(URL,)))),
        set(),
        warning="version skew cannot be ruled out",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_plan(case: Case) -> None:
    result: Plan = plan(case.cluster, case.cloud, case.config)  # type: ignore[arg-type]
    assert {(c.action, c.kind, c.name) for c in result.changes} == case.expect
    if case.warning:
        assert any(case.warning in w for w in result.warnings), result.warnings
    assert (result.fallback is not None) == case.fallback
    assert len(result.withheld) == case.withheld
    if case.withheld:
        assert all(c.action in (Action.DETACH, Action.DELETE) for c in result.withheld)


def test_order_is_safe_for_gc_and_creation() -> None:
    result = plan(cluster(services=(LOCAL,)), converged(LOCAL), config())
    assert [c.action for c in result.changes] == [Action.DETACH, Action.DELETE, Action.DELETE]
    assert [c.kind for c in result.changes][1:] == [Kind.HTTP_HEALTH_CHECK, Kind.FIREWALL]
    created = plan(cluster(services=(WEB,)), cloud(pools=(pool_for(WEB),)), config())
    assert [c.kind for c in created.changes] == [
        Kind.FIREWALL,
        Kind.HTTP_HEALTH_CHECK,
        Kind.TARGET_POOL,
    ]


def test_fallback_reason_names_the_nodes() -> None:
    snapshot = cluster(
        services=(WEB,), nodes=(node("n-1", kubelet="v1.6.0"), node("n-2", kubelet="v1.31.0"))
    )
    result = plan(snapshot, converged(WEB), config())
    assert result.fallback is not None
    assert [n.node for n in result.fallback.nodes] == ["n-1"]
    (detach,) = result.changes
    assert "n-1" in detach.reason and "n-2" not in detach.reason


def test_cluster_id_needs_a_source() -> None:
    snapshot = ClusterSnapshot(services=(WEB,))
    with pytest.raises(PlanningError, match="cluster id unknown"):
        plan(snapshot, cloud(), config())
    assert plan(snapshot, cloud(), config(cluster_id="prod-1")).health_check_name == (
        "k8s-l4-healthcheck-prod-1"
    )


def test_created_resources_have_the_documented_shape() -> None:
    result = plan(cluster(services=(WEB,)), cloud(pools=(pool_for(WEB),)), config())
    firewall = next(c.desired for c in result.changes if c.kind is Kind.FIREWALL)
    check = next(c.desired for c in result.changes if c.kind is Kind.HTTP_HEALTH_CHECK)
    assert firewall is not None and check is not None
    assert firewall.source_ranges == ("209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16")  # type: ignore[union-attr]
    assert firewall.destination_ranges == ()  # type: ignore[union-attr]
    assert firewall.target_tags == ("gke-node",)  # type: ignore[union-attr]
    assert (check.port, check.request_path, check.host) == (10256, "/healthz", "")  # type: ignore[union-attr]
    assert (
        check.check_interval_sec,
        check.timeout_sec,
        check.healthy_threshold,  # type: ignore[union-attr]
        check.unhealthy_threshold,
    ) == (8, 1, 1, 3)  # type: ignore[union-attr]
