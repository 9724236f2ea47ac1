"""Each load balancer as a node being deleted meets it: what its check does for that node
(drains it, drains it only as its endpoints go, never), and how fast. Target pools here;
backend-service load balancers in planner/backend_drain, in the same terms, so a node's
verdict weighs every load balancer that can send it new connections, whatever its kind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from lbhc.planner.claims import PoolClaim
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import (
    CLOUD_PROVIDER_DRAIN_BOUND_SEC,
    Coverage,
    PoolCoverage,
    describe_check,
    drain_bound_seconds,
    probes_kube_proxy_healthz,
)
from lbhc.planner.pool_reach import PoolReach


class LbKind(StrEnum):
    TARGET_POOL = "target pool"
    BACKEND_SERVICE = "backend service"


class PoolDrainKind(StrEnum):
    """What a load balancer's check does for a node being deleted."""

    HEALTHZ = "healthz"  # a check on kube-proxy's /healthz: drains if kube-proxy fails it
    LOCAL = "local"  # a per-Service check: drains once the node has no ready endpoints
    NO_CHECK = "no-check"
    OTHER = "other"  # probes something that does not follow node deletion
    # A kube-proxy /healthz check whose probes the firewall drops: every instance reads
    # UNHEALTHY and the load balancer fails open, sending new connections to every node.
    PROBE_BLOCKED = "probe-blocked"
    # A kube-proxy /healthz check GCE calls every sampled serving node UNHEALTHY on, for
    # longer than its drain bound: the pool fails open (planner/pool_classes).
    FAILING_OPEN = "failing-open"


NEVER_DRAIN = frozenset(
    {
        PoolDrainKind.NO_CHECK,
        PoolDrainKind.OTHER,
        PoolDrainKind.PROBE_BLOCKED,
        PoolDrainKind.FAILING_OPEN,
    }
)


@dataclass(frozen=True, slots=True)
class LbDrainView:
    """One load balancer (a target pool, or a backend service) as a node being deleted meets
    it."""

    name: str
    service: str
    kind: PoolDrainKind
    check: str = ""  # what it carries, for humans
    bound_seconds: int | None = None  # with HEALTHZ: interval x (unhealthy threshold + 1)
    blocked: str = ""  # with PROBE_BLOCKED: what the firewall does with its probes
    reach: str = ""  # what the firewall does with its probes (pool_reach.Reach), "" if unjudged
    failing_open: str = ""  # with FAILING_OPEN: what GCE's getHealth showed
    lb: LbKind = LbKind.TARGET_POOL

    def why_not(self) -> str:
        """Why this load balancer keeps sending the node new connections (not for HEALTHZ)."""
        if self.kind is PoolDrainKind.NO_CHECK:
            return "no health check"
        if self.kind is PoolDrainKind.PROBE_BLOCKED:
            return f"{self.check}: {self.blocked}, so it fails open"
        if self.kind is PoolDrainKind.FAILING_OPEN:
            return f"{self.check}: {self.failing_open}, so it fails open"
        if self.kind is PoolDrainKind.LOCAL:
            return "externalTrafficPolicy Local: drains it only once it has no ready endpoints"
        return f"{self.check} does not follow node deletion"

    def describe(self) -> str:
        return f"{self.lb.value} {self.name} (Service {self.service}: {self.why_not()})"

    def to_json(self) -> dict[str, str]:
        pool = self.name if self.lb is LbKind.TARGET_POOL else ""
        return {
            "loadBalancer": self.name,
            "kind": self.lb.value,
            "targetPool": pool,
            "service": self.service,
            "why": self.why_not(),
        }


def pool_drain_views(
    pool_claims: Mapping[str, PoolClaim],
    coverage: Mapping[str, PoolCoverage],
    config: PlannerConfig,
    reach: Mapping[str, PoolReach] | None = None,
) -> tuple[LbDrainView, ...]:
    """Every pool of this cluster's Services, eligible for lbhc or not: a node is in all.
    `reach`: what the firewall does with each pool's probes (planner/pool_reach)."""
    views = []
    reach = reach or {}
    for name in sorted(pool_claims):
        probes = reach.get(name)
        view = _pool_drain_view(name, pool_claims[name].service.key, coverage[name], probes, config)
        views.append(replace(view, reach=probes.reach.value) if probes is not None else view)
    return tuple(views)


def _pool_drain_view(
    name: str,
    service: str,
    cover: PoolCoverage,
    probes: PoolReach | None,
    config: PlannerConfig,
) -> LbDrainView:
    if probes is not None and probes.blocked and cover.kind is not Coverage.LOCAL:
        return LbDrainView(
            name, service, PoolDrainKind.PROBE_BLOCKED, cover.check_name, blocked=probes.explain()
        )
    if cover.kind is Coverage.LOCAL:
        return LbDrainView(name, service, PoolDrainKind.LOCAL, cover.check_name)
    if cover.kind is Coverage.NONE:
        return LbDrainView(name, service, PoolDrainKind.NO_CHECK)
    if cover.check is not None and probes_kube_proxy_healthz(cover.check, config):
        bound = drain_bound_seconds(cover.check)
        return LbDrainView(name, service, PoolDrainKind.HEALTHZ, cover.check_name, bound)
    if cover.kind is Coverage.CLOUD_PROVIDER:  # by name; its check could not be read
        bound = CLOUD_PROVIDER_DRAIN_BOUND_SEC
        return LbDrainView(name, service, PoolDrainKind.HEALTHZ, cover.check_name, bound)
    return LbDrainView(name, service, PoolDrainKind.OTHER, describe_check(cover))


@dataclass(frozen=True, slots=True)
class LbRemoval:
    """A load balancer that took the node out of its backends: it sends the node no new
    connections, whatever its check does."""

    view: LbDrainView
    how: str  # how that is known: what was read, or whose node selection it is derived from
    derived: bool = False
    # connectionDraining.drainingTimeoutSec: established connections may run this long (0:
    # cut at once; target pools have none).
    draining_timeout_sec: int = 0

    def describe(self) -> str:
        seconds = self.draining_timeout_sec
        after = (
            f"connection draining lets established connections run up to {seconds} s"
            if seconds
            else "no connection draining"
        )
        return f"{self.view.lb.value} {self.view.name} does not hold it ({self.how}; {after})"

    def to_json(self) -> dict[str, object]:
        return {
            "loadBalancer": self.view.name,
            "kind": self.view.lb.value,
            "service": self.view.service,
            "how": self.how,
            "derived": self.derived,
            "connectionDrainingSeconds": self.draining_timeout_sec,
        }
