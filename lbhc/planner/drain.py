"""Per node: are the load balancers draining it? Judged from the check each target pool holding
the node really carries, whoever owns it: only a check on kube-proxy's /healthz fails for a
node being deleted, and only on kube-proxy 1.30+ (kubernetes pkg/proxy/healthcheck).

Pool membership is not listed (a pool lists every node; at 5,000 nodes that is most of the
bytes): as the cloud provider's service controller puts them there, every node not labelled
out of load balancers (k8s.io/cloud-provider controllers/service nodeIncludedPredicate) is
taken to be in every target pool of this cluster's LoadBalancer Services. For a node marked
for deletion, what GCE showed of it replaces that derivation (planner/drain_evidence)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from lbhc.model.cluster import Node
from lbhc.planner.capabilities import KubeProxyFacts
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
from lbhc.planner.listing import first_few
from lbhc.planner.nodes import (
    GKE_DRAIN_OPERATION,
    GKE_OPERATION_LABEL,
    TO_BE_DELETED_TAINT,
    is_being_deleted,
    is_excluded_from_load_balancers,
    is_gke_drain_labelled,
)
from lbhc.planner.pool_reach import PoolReach
from lbhc.planner.versions import VersionSource

_MAX_POOLS_IN_REASON = 3


class DrainState(StrEnum):
    SERVING = "serving"
    DRAINING = "draining"  # every pool holding it stops sending it new connections
    # Some pools do, others keep sending: a pool without such a check, or a Local pool while
    # the node still has ready endpoints of its Service (those go as its Pods are evicted).
    PARTIALLY_DRAINING = "partially-draining"
    # Marked for deletion, yet no pool will take it out; or labelled for a GKE drain, which
    # no pool follows at all.
    NOT_DRAINING = "not-draining"
    NOT_APPLICABLE = "not-applicable"  # marked, but in no target pool: nothing to drain
    EXCLUDED = "excluded"
    UNKNOWN = "unknown"


class PoolDrainKind(StrEnum):
    HEALTHZ = "healthz"  # a check on kube-proxy's /healthz: drains if kube-proxy fails it
    LOCAL = "local"  # a per-Service check: drains once the node has no ready endpoints
    NO_CHECK = "no-check"
    OTHER = "other"  # probes something that does not follow node deletion
    # A kube-proxy /healthz check whose probes the firewall drops: every instance reads
    # UNHEALTHY and the pool fails open, sending new connections to every node.
    PROBE_BLOCKED = "probe-blocked"
    # A kube-proxy /healthz check GCE calls every sampled serving node UNHEALTHY on, for
    # longer than its drain bound: the pool fails open (planner/pool_classes).
    FAILING_OPEN = "failing-open"


_NEVER_DRAIN = frozenset(
    {
        PoolDrainKind.NO_CHECK,
        PoolDrainKind.OTHER,
        PoolDrainKind.PROBE_BLOCKED,
        PoolDrainKind.FAILING_OPEN,
    }
)


@dataclass(frozen=True, slots=True)
class PoolDrainView:
    """One target pool as a node being deleted meets it."""

    pool: str
    service: str
    kind: PoolDrainKind
    check: str = ""  # what it carries, for humans
    bound_seconds: int | None = None  # with HEALTHZ: interval x (unhealthy threshold + 1)
    blocked: str = ""  # with PROBE_BLOCKED: what the firewall does with its probes
    reach: str = ""  # what the firewall does with its probes (pool_reach.Reach), "" if unjudged
    failing_open: str = ""  # with FAILING_OPEN: what GCE's getHealth showed

    def why_not(self) -> str:
        """Why this pool keeps sending the node new connections (not for HEALTHZ)."""
        if self.kind is PoolDrainKind.NO_CHECK:
            return "no health check"
        if self.kind is PoolDrainKind.PROBE_BLOCKED:
            return f"{self.check}: {self.blocked}, so it fails open"
        if self.kind is PoolDrainKind.FAILING_OPEN:
            return f"{self.check}: {self.failing_open}, so it fails open"
        if self.kind is PoolDrainKind.LOCAL:
            return "externalTrafficPolicy Local: drains it only once it has no ready endpoints"
        return f"{self.check} does not follow node deletion"


def pool_drain_views(
    pool_claims: Mapping[str, PoolClaim],
    coverage: Mapping[str, PoolCoverage],
    config: PlannerConfig,
    reach: Mapping[str, PoolReach] | None = None,
) -> tuple[PoolDrainView, ...]:
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
) -> PoolDrainView:
    if probes is not None and probes.blocked and cover.kind is not Coverage.LOCAL:
        return PoolDrainView(
            name, service, PoolDrainKind.PROBE_BLOCKED, cover.check_name, blocked=probes.explain()
        )
    if cover.kind is Coverage.LOCAL:
        return PoolDrainView(name, service, PoolDrainKind.LOCAL, cover.check_name)
    if cover.kind is Coverage.NONE:
        return PoolDrainView(name, service, PoolDrainKind.NO_CHECK)
    if cover.check is not None and probes_kube_proxy_healthz(cover.check, config):
        bound = drain_bound_seconds(cover.check)
        return PoolDrainView(name, service, PoolDrainKind.HEALTHZ, cover.check_name, bound)
    if cover.kind is Coverage.CLOUD_PROVIDER:  # by name; its check could not be read
        bound = CLOUD_PROVIDER_DRAIN_BOUND_SEC
        return PoolDrainView(name, service, PoolDrainKind.HEALTHZ, cover.check_name, bound)
    return PoolDrainView(name, service, PoolDrainKind.OTHER, describe_check(cover))


@dataclass(frozen=True)
class NodeDrain:
    state: DrainState
    reason: str
    marked_at: str = ""  # RFC 3339, when the node was marked for deletion ("" if unknown)
    # Worst case from the mark to UNHEALTHY in every pool that drains it (its checks' own
    # interval and thresholds); None when no pool drains it.
    bound_seconds: int | None = None
    not_draining: tuple[PoolDrainView, ...] = ()  # the pools that keep sending it traffic
    # False for a node only labelled for a GKE drain (or not marked at all): it has no drain
    # window to time, whatever its state.
    marked_for_deletion: bool = False
    # UNKNOWN only because kube-proxy is replaced by this (a DaemonSet's name): one
    # cluster-level alert says so, not one per node.
    replaced_by: str = ""
    # Checked against GCE (planner/drain_evidence): True when every pool holding it was read
    # and the reads bear the verdict out; `evidence` says what was seen, or why not verified.
    verified: bool = False
    evidence: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "reason": self.reason,
            "unknownBecauseReplacedBy": self.replaced_by,
            "markedAt": self.marked_at,
            "boundSeconds": self.bound_seconds,
            "verified": self.verified,
            "evidence": self.evidence,
            "poolsNotDraining": [
                {"targetPool": p.pool, "service": p.service, "why": p.why_not()}
                for p in self.not_draining
            ],
        }


def marked_epoch(rfc3339: str) -> float | None:
    """`marked_at`'s time as Unix seconds (None when unknown or not a time)."""
    if not rfc3339:
        return None
    try:
        return datetime.fromisoformat(rfc3339).timestamp()
    except ValueError:
        return None


def marked_at(node: Node) -> str:
    """The autoscaler writes the taint's value as Unix seconds; a deletionTimestamp is
    already RFC 3339. The earlier of the two is when draining could start."""
    times: list[str] = []
    for taint in node.spec.taints:
        if taint.key == TO_BE_DELETED_TAINT and taint.value.isdigit():
            try:  # anyone who may taint a node may write any value: never fail on it
                at = datetime.fromtimestamp(int(taint.value), UTC)
            except (ValueError, OverflowError, OSError):
                continue
            times.append(at.strftime("%Y-%m-%dT%H:%M:%SZ"))
    if node.metadata.deletion_timestamp:
        times.append(node.metadata.deletion_timestamp)
    return min(times) if times else ""


def node_drain(
    node: Node, facts: KubeProxyFacts, pools: Sequence[PoolDrainView] | None
) -> NodeDrain:
    """`pools`: every target pool of this cluster (pool_drain_views); None when they could
    not be read, so nothing can be said about a marked node."""
    if is_excluded_from_load_balancers(node):
        return NodeDrain(DrainState.EXCLUDED, "labelled exclude-from-external-load-balancers")
    if not is_being_deleted(node):
        if is_gke_drain_labelled(node):
            return gke_drain(pools)
        return NodeDrain(DrainState.SERVING, "not marked for deletion")
    since = marked_at(node)
    if pools is None:
        return NodeDrain(
            DrainState.UNKNOWN,
            "marked for deletion; the target pools could not be read, so which hold it and "
            "what they carry is unknown",
            since,
            marked_for_deletion=True,
        )
    if not pools:
        return NodeDrain(
            DrainState.NOT_APPLICABLE,
            "marked for deletion; it is in no target pool, so no network load balancer has "
            "connections to drain from it",
            since,
            marked_for_deletion=True,
        )
    replaced = facts.source is VersionSource.REPLACEMENT
    version = (
        f"kube-proxy {facts.version.display()}"
        if replaced
        else f"kube-proxy {facts.version.display()} (from {facts.source.value})"
    )
    healthz = [p for p in pools if p.kind is PoolDrainKind.HEALTHZ]
    caps = facts.capabilities
    how = f"{version} fails /healthz"
    if healthz and caps.serves_healthz is False:
        how = f"{version} cannot answer /healthz at all"  # fallback policy `never`
    elif healthz and caps.drains_when_deleted is None:
        why = f": {facts.drain_reason}" if replaced and facts.drain_reason else ""
        return NodeDrain(
            DrainState.UNKNOWN,
            f"marked for deletion; whether {version} fails /healthz for it is unknown{why}",
            since,
            marked_for_deletion=True,
            replaced_by=facts.replacement,
        )
    elif replaced and facts.drain_reason:
        how = f"{how} ({facts.drain_reason})"
    too_old = bool(healthz) and caps.serves_healthz is not False and not caps.drains_when_deleted
    draining = [] if too_old else healthz
    # Pools that will not take it out; Local pools do, but only as its endpoints go.
    stuck = [p for p in pools if p.kind in _NEVER_DRAIN]
    stuck += healthz if too_old else []
    local = [p for p in pools if p.kind is PoolDrainKind.LOCAL]
    bound = max((p.bound_seconds or 0 for p in draining), default=0) or None
    if not stuck and not local:
        return NodeDrain(
            DrainState.DRAINING,
            f"marked for deletion and {how}: every target pool holding it drains it",
            since,
            bound,
            marked_for_deletion=True,
        )
    # Local pools do not make up for a pool that never drains it: only they (with no other)
    # leave it partially drained rather than not at all.
    if too_old or (stuck and not draining):
        why = (
            f"{version} does not fail /healthz for it: {facts.drain_reason}"
            if too_old and replaced
            else f"{version} is too old to fail /healthz for it"
            if too_old
            else f"no target pool holding it can drain it ({_listed(stuck)})"
        )
        return NodeDrain(
            DrainState.NOT_DRAINING,
            f"marked for deletion, but {why}: the load balancers keep sending it new "
            "connections until it is gone",
            since,
            not_draining=(*stuck, *local),
            marked_for_deletion=True,
        )
    others = (*stuck, *local)
    drained_by = (
        f"{how}, so {len(draining)} pool(s) drain it" if draining else "no pool drains it by itself"
    )
    return NodeDrain(
        DrainState.PARTIALLY_DRAINING,
        f"marked for deletion; {drained_by}; {len(others)} do not (yet): {_listed(others)}",
        since,
        bound,
        others,
        marked_for_deletion=True,
    )


def gke_drain(pools: Sequence[PoolDrainView] | None) -> NodeDrain:
    """A node GKE labelled for draining and nothing marked for deletion: the label makes
    neither kube-proxy fail /healthz nor the service controller take it out of the pools
    (see is_gke_drain_labelled), so every pool holding it, whatever check it carries, keeps
    sending it new connections until it is tainted or deleted (a Local pool, once the
    drain has evicted its endpoints)."""
    label = f"labelled {GKE_OPERATION_LABEL}={GKE_DRAIN_OPERATION}: GKE is about to drain it"
    if pools is None:
        return NodeDrain(
            DrainState.UNKNOWN,
            f"{label}; the target pools could not be read, so whether any holds it (and keeps "
            "sending it new connections, since none follows that label) is unknown",
        )
    if not pools:
        return NodeDrain(
            DrainState.NOT_APPLICABLE,
            f"{label}; it is in no target pool, so no network load balancer has connections "
            "to drain from it",
        )
    # A Local pool drains it as its endpoints go, which GKE's drain evicts; no other does.
    local = tuple(p for p in pools if p.kind is PoolDrainKind.LOCAL)
    if len(local) == len(pools):
        return NodeDrain(
            DrainState.PARTIALLY_DRAINING,
            f"{label}; only externalTrafficPolicy Local pools hold it, and they stop sending "
            "it new connections only once it has no ready endpoints of their Services",
            not_draining=local,
        )
    return NodeDrain(
        DrainState.NOT_DRAINING,
        f"{label}, but kube-proxy and target pools ignore that label: "
        f"{len(pools) - len(local)} target pool(s) holding it keep sending it new connections "
        f"until it is tainted {TO_BE_DELETED_TAINT} or deleted",
    )


def _listed(pools: Sequence[PoolDrainView]) -> str:
    described = [f"{p.pool} (Service {p.service}: {p.why_not()})" for p in pools]
    return first_few(described, _MAX_POOLS_IN_REASON, "; ")
