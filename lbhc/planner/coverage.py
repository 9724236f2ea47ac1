"""Coverage: which health check each target pool really carries, and what that means for it.

On a current GCE or GKE cluster the cloud provider attaches its own node check,
`k8s-<uid>-node` (kube-proxy's /healthz on 10256), to every externalTrafficPolicy=Cluster pool
*when it creates the pool* (kubernetes/cloud-provider-gcp providers/gce/
gce_loadbalancer_external.go, ensureExternalLoadBalancer and makeHTTPHealthCheck with
MakeNodesHealthCheckName), and never to a pool that exists already. lbhc recognises that
check, and any other check that probes kube-proxy's /healthz, as covering the pool; it
backfills only pools that carry none (or, in takeover mode, replaces what they carry).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from lbhc.model.cloud import (
    CloudSnapshot,
    HttpHealthCheck,
    TargetPool,
    resource_name,
    resource_path,
)
from lbhc.planner.claims import PoolClaim
from lbhc.planner.config import PlannerConfig
from lbhc.planner.services import uses_cluster_traffic_policy


class Coverage(StrEnum):
    LBHC = "lbhc"  # carries lbhc's own check
    CLOUD_PROVIDER = "cloud-provider"  # the cloud provider's k8s-<uid>-node
    EQUIVALENT = "equivalent"  # another check on kube-proxy's health port and path
    NONE = "none"  # no check at all: lbhc backfills its own
    OTHER_CHECK = "other-check"  # a check that does not probe kube-proxy's /healthz
    LOCAL = "local"  # externalTrafficPolicy Local: its own per-Service check
    # A backend-service load balancer (ingress-gce's, or the cloud provider's internal one)
    # whose check probes kube-proxy's /healthz: it drains, and lbhc only reads it.
    BACKEND_SERVICE = "backend-service"
    NO_POOL = "no-pool"  # no load balancer found: not made yet
    # Shown for a pool whose check's probes the firewall drops, whatever the check: its
    # instances all read UNHEALTHY and it fails open (planner/pool_reach).
    PROBE_BLOCKED = "probe-blocked"


# Coverage kinds whose check already drains a node being deleted, as lbhc's would.
KUBE_PROXY_COVERED = frozenset({Coverage.LBHC, Coverage.CLOUD_PROVIDER, Coverage.EQUIVALENT})
# Kinds whose check is not lbhc's yet that lbhc replaces in takeover mode.
TAKEOVER_REPLACES = frozenset({Coverage.CLOUD_PROVIDER, Coverage.EQUIVALENT, Coverage.OTHER_CHECK})


@dataclass(frozen=True, slots=True)
class PoolCoverage:
    kind: Coverage
    check_url: str = ""  # what the pool carries ("" for none)
    check: HttpHealthCheck | None = None  # that check as read (None: none, or unreadable)

    @property
    def check_name(self) -> str:
        return resource_name(self.check_url) if self.check_url else ""


def cloud_provider_check_name(uid: str) -> str:
    """The cloud provider's shared node check (MakeNodesHealthCheckName)."""
    return f"k8s-{uid}-node"


class ProbedPath(Protocol):
    """What a check probes: a legacy HttpHealthCheck or a non-legacy HTTP HealthCheck."""

    @property
    def port(self) -> int | None: ...

    @property
    def request_path(self) -> str: ...


def probes_kube_proxy_healthz(check: ProbedPath, config: PlannerConfig) -> bool:
    """A check on kube-proxy's health port and path fails for a node being deleted (kube-proxy
    1.30+), whoever owns it. Timings do not matter for *whether* it drains, only how fast."""
    return check.port == config.port and check.request_path == config.request_path


# The cloud provider's node check as makeHTTPHealthCheck makes it (gce_healthchecks.go:
# interval 8 s, unhealthy threshold 3): its bound when the check itself cannot be read.
CLOUD_PROVIDER_DRAIN_BOUND_SEC = 8 * (3 + 1)


class CheckTimings(Protocol):
    """How often a check probes, and how many failures make an instance UNHEALTHY."""

    @property
    def check_interval_sec(self) -> int: ...

    @property
    def unhealthy_threshold(self) -> int: ...


def drain_bound_seconds(check: CheckTimings) -> int:
    """Worst case from a node being marked until the check calls it unhealthy: the probe just
    before the mark passed, then `unhealthyThreshold` failures one interval apart."""
    return check.check_interval_sec * (check.unhealthy_threshold + 1)


def classify(
    pool: TargetPool,
    claim: PoolClaim,
    cloud: CloudSnapshot,
    our_url: str,
    cloud_provider_uid: str | None,
    config: PlannerConfig,
) -> PoolCoverage:
    carried = pool.health_checks[0] if pool.health_checks else ""
    check = cloud.check_at(carried) if carried else None
    if not uses_cluster_traffic_policy(claim.service):
        return PoolCoverage(Coverage.LOCAL, carried, check)
    if not carried:
        return PoolCoverage(Coverage.NONE)
    if resource_path(carried) == resource_path(our_url):
        return PoolCoverage(Coverage.LBHC, carried, check)
    name = resource_name(carried)
    if cloud_provider_uid and name == cloud_provider_check_name(cloud_provider_uid):
        return PoolCoverage(Coverage.CLOUD_PROVIDER, carried, check)
    if check is not None and probes_kube_proxy_healthz(check, config):
        return PoolCoverage(Coverage.EQUIVALENT, carried, check)
    return PoolCoverage(Coverage.OTHER_CHECK, carried, check)


def coverage_by_pool(
    pool_claims: Mapping[str, PoolClaim],
    cloud: CloudSnapshot,
    our_url: str,
    cloud_provider_uid: str | None,
    config: PlannerConfig,
) -> dict[str, PoolCoverage]:
    """Pool name -> coverage, for every pool a Service of this cluster provably owns."""
    return {
        name: classify(claim.pool, claim, cloud, our_url, cloud_provider_uid, config)
        for name, claim in pool_claims.items()
    }


def describe_check(coverage: PoolCoverage) -> str:
    """For humans: which check, and on what port and path when that is the point."""
    if coverage.kind is Coverage.NONE:
        return "no health check"
    name = coverage.check_name
    if coverage.check is None:
        return f"health check {name} (not readable)"
    return f"health check {name} (port {coverage.check.port}, path {coverage.check.request_path})"
