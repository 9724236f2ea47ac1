"""Pools that must behave alike, and how GCE's own health checking says they behave.

GCE's targetPools.getHealth answers for one instance per call, and a project's Compute read
quota is shared with every other client, so lbhc cannot read every pool for every node. It
does not need to: pools carrying the same check, whose probes the firewall treats the same
way, are probed alike (same port, path and sources) and form one class. A few serving nodes
read in a few of a class's pools stand for the class; a node marked for deletion is read in
one pool of each class holding it (the service controller's node sync updates every pool at
once: k8s.io/cloud-provider controllers/service/controller.go, syncNodes).

A target pool whose instances are all UNHEALTHY fails open: GCE sends new connections to
every instance ("Using target pools", failover and fallback), draining nodes included. So a
class GCE calls every sampled serving node UNHEALTHY on, while kube-proxy is healthy and for
longer than the check's drain bound (a check made moments ago starts UNHEALTHY), drains
nothing, and the drain verdicts say so."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from lbhc.model.lb_health import HealthReading, InstanceHealth, LbHealthView
from lbhc.planner.coverage import CLOUD_PROVIDER_DRAIN_BOUND_SEC
from lbhc.planner.lb_views import LbDrainView, LbKind, PoolDrainKind

# Kinds whose check is kube-proxy's /healthz: GCE's view of serving nodes says whether it
# passes; a Local check legitimately fails on nodes without endpoints, so it is not sampled.
SAMPLED_KINDS = frozenset({PoolDrainKind.HEALTHZ, PoolDrainKind.PROBE_BLOCKED})


class ClassHealth(StrEnum):
    HEALTHY = "healthy"  # every sampled serving node HEALTHY
    DEGRADED = "degraded"  # some sampled serving nodes UNHEALTHY, some HEALTHY
    FAILING_OPEN = "failing-open"  # every sampled serving node UNHEALTHY past the bound
    UNVERIFIED = "unverified"  # no fresh reading (or too fresh to judge): says why
    NOT_SAMPLED = "not-sampled"  # not a kube-proxy check: only marked nodes are read


@dataclass(frozen=True)
class PoolClass:
    kind: PoolDrainKind
    check: str  # "" for pools without a check
    reach: str  # pool_reach.Reach value, "" when not judged
    pools: tuple[str, ...]  # sorted
    bound_seconds: int  # the check's drain bound (a default where it has none)
    lb: LbKind = LbKind.TARGET_POOL
    # Backend services only: (backend service, group path) for each of their backends, since
    # their getHealth answers for one group (one zone) at a time.
    groups: tuple[tuple[str, str], ...] = ()
    members: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", frozenset(self.pools))

    @property
    def sampled(self) -> bool:
        return self.kind in SAMPLED_KINDS

    def describe(self) -> str:
        what = f"check {self.check}" if self.check else "no check"
        reach = f", probes {self.reach}" if self.reach else ""
        kind = "pool(s)" if self.lb is LbKind.TARGET_POOL else "backend service(s)"
        return f"{len(self.pools)} {kind} with {what}{reach}"


@dataclass(frozen=True)
class ClassVerdict:
    pool_class: PoolClass
    health: ClassHealth
    reason: str
    unhealthy: int = 0  # sampled serving nodes UNHEALTHY
    read: int = 0  # sampled serving nodes with a fresh reading

    def to_json(self) -> dict[str, object]:
        c = self.pool_class
        return {
            "kind": c.kind.value,
            "loadBalancerKind": c.lb.value,
            "check": c.check,
            "probeReach": c.reach,
            "pools": len(c.pools),
            "examplePool": c.pools[0] if c.pools else "",
            "health": self.health.value,
            "reason": self.reason,
            "sampledNodes": self.read,
            "unhealthyNodes": self.unhealthy,
        }


def pool_classes(
    views: Sequence[LbDrainView], groups: Mapping[str, tuple[str, ...]] | None = None
) -> tuple[PoolClass, ...]:
    """One class per (kind of load balancer, kind, check, probe reach), in a stable order.
    `groups`: each backend service's backend group paths. A target pool and a backend service
    never share a class, even where their checks share a name (the cloud provider's legacy
    and non-legacy `k8s-<id>-node`): their getHealth differ."""
    grouped: dict[tuple[LbKind, PoolDrainKind, str, str], list[LbDrainView]] = {}
    for view in views:
        grouped.setdefault((view.lb, view.kind, view.check, view.reach), []).append(view)
    groups = groups or {}
    return tuple(
        PoolClass(
            kind,
            check,
            reach,
            tuple(sorted(v.name for v in members)),
            max((v.bound_seconds or 0 for v in members), default=0)
            or CLOUD_PROVIDER_DRAIN_BOUND_SEC,
            lb,
            tuple(sorted((v.name, g) for v in members for g in groups.get(v.name, ()))),
        )
        for (lb, kind, check, reach), members in sorted(grouped.items())
    )


def fresh_readings(
    pool_class: PoolClass, nodes: Collection[str], view: LbHealthView, max_age: float
) -> list[HealthReading]:
    """The class's readings of `nodes` no older than `max_age` seconds at the view's time."""
    return [
        r
        for (pool, node), r in view.readings.items()
        if pool in pool_class.members and node in nodes and view.as_of - r.at <= max_age
    ]


def newest_by_node(
    pool_class: PoolClass, nodes: Collection[str], view: LbHealthView, max_age: float
) -> dict[str, HealthReading]:
    """Each node's newest HEALTHY or UNHEALTHY reading in the class: pools are probed alike,
    so whichever pool the rotation read it in last says how its check fares now."""
    newest: dict[str, HealthReading] = {}
    for r in fresh_readings(pool_class, nodes, view, max_age):
        judged = r.state in (InstanceHealth.HEALTHY, InstanceHealth.UNHEALTHY)
        if judged and (r.node not in newest or r.at > newest[r.node].at):
            newest[r.node] = r
    return newest


def judge_class(
    pool_class: PoolClass,
    view: LbHealthView,
    serving: Collection[str],
    kube_proxy_healthy: bool | None,
    max_age: float,
) -> ClassVerdict:
    """`serving`: nodes the load balancers should find healthy (not marked, not excluded,
    kube-proxy ready); `max_age`: how old a reading may be and still count."""
    if not pool_class.sampled:
        return ClassVerdict(pool_class, ClassHealth.NOT_SAMPLED, "not a kube-proxy /healthz check")
    if view.off:
        return ClassVerdict(pool_class, ClassHealth.UNVERIFIED, view.off)
    readings = list(newest_by_node(pool_class, serving, view, max_age).values())
    if not readings:
        return ClassVerdict(
            pool_class,
            ClassHealth.UNVERIFIED,
            f"no serving node read in the last {max_age:.0f} s (the read budget comes to it)",
        )
    unhealthy = [r for r in readings if r.state is InstanceHealth.UNHEALTHY]
    n, bad = len(readings), len(unhealthy)
    where = f"GCE's getHealth in {_pools_read(pool_class, readings)}"
    if not unhealthy:
        return ClassVerdict(
            pool_class, ClassHealth.HEALTHY, f"{where}: {n} of {n} serving node(s) HEALTHY", 0, n
        )
    if bad < n:
        return ClassVerdict(
            pool_class,
            ClassHealth.DEGRADED,
            f"{where}: {bad} of {n} serving node(s) UNHEALTHY",
            bad,
            n,
        )
    if kube_proxy_healthy is False:
        return ClassVerdict(
            pool_class,
            ClassHealth.DEGRADED,
            f"{where}: every sampled serving node ({n}) UNHEALTHY, and kube-proxy is not healthy",
            bad,
            n,
        )
    # How long every node was seen UNHEALTHY, from its run's first reading to its newest
    # (the run goes on across the class's pools: the reader carries it over). Not up to now:
    # a single old reading says nothing of the time since.
    lasting = min(r.at - (r.unhealthy_since or r.at) for r in unhealthy)
    if lasting < pool_class.bound_seconds:
        return ClassVerdict(
            pool_class,
            ClassHealth.UNVERIFIED,
            f"{where}: every sampled serving node ({n}) seen UNHEALTHY for {lasting:.0f} s, "
            f"under the check's drain bound ({pool_class.bound_seconds} s): a new check starts "
            "so (read again soon)",
            bad,
            n,
        )
    return ClassVerdict(
        pool_class,
        ClassHealth.FAILING_OPEN,
        f"{where}: every sampled serving node ({n}) seen UNHEALTHY for {lasting:.0f} s although "
        "kube-proxy is healthy: the health checkers are not reaching kube-proxy",
        bad,
        n,
    )


def with_failing_open(
    views: Sequence[LbDrainView], verdicts: Sequence[ClassVerdict]
) -> tuple[LbDrainView, ...]:
    """The views with every pool of a failing-open class marked so: it drains nothing."""
    failing = {
        pool: v.reason
        for v in verdicts
        if v.health is ClassHealth.FAILING_OPEN
        for pool in v.pool_class.pools
    }
    return tuple(
        replace(view, kind=PoolDrainKind.FAILING_OPEN, failing_open=failing[view.name])
        if view.name in failing and view.kind is PoolDrainKind.HEALTHZ
        else view
        for view in views
    )


def _pools_read(pool_class: PoolClass, readings: Sequence[HealthReading]) -> str:
    pools = sorted({r.pool for r in readings})
    more = f" and {len(pools) - 1} more" if len(pools) > 1 else ""
    return f"{pool_class.lb.value} {pools[0]}{more}"
