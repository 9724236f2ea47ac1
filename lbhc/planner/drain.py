"""Per node: are the load balancers draining it? Judged from the check each load balancer
holding the node really carries, whoever owns it (target pools, and backend-service load
balancers, which lbhc only reads): only a check on kube-proxy's /healthz fails for a node being
deleted, and only on kube-proxy 1.30+ (kubernetes pkg/proxy/healthcheck). A load balancer that
already took the node out of its backends sends it no new connections either.

Pool membership is not listed (a pool lists every node; at 5,000 nodes that is most of the
bytes): as the cloud provider's service controller puts them there, every node not labelled
out of load balancers (k8s.io/cloud-provider controllers/service nodeIncludedPredicate) is
taken to be in every target pool of this cluster's LoadBalancer Services. For a node marked
for deletion, what GCE showed of it replaces that derivation (planner/drain_evidence), and
backend services' membership comes from their instance groups or ingress-gce's node selection
(planner/backend_drain)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from lbhc.model.cluster import Node
from lbhc.planner.capabilities import KubeProxyFacts
from lbhc.planner.lb_views import NEVER_DRAIN, LbDrainView, LbRemoval, PoolDrainKind
from lbhc.planner.listing import first_few
from lbhc.planner.nodes import (
    GKE_DRAIN_OPERATION,
    GKE_OPERATION_LABEL,
    TO_BE_DELETED_TAINT,
    is_being_deleted,
    is_excluded_from_load_balancers,
    is_gke_drain_labelled,
)
from lbhc.planner.versions import VersionSource

_MAX_POOLS_IN_REASON = 3


class DrainState(StrEnum):
    SERVING = "serving"
    # Every load balancer holding it stops sending it new connections (or took it out).
    DRAINING = "draining"
    # Some do, others keep sending: one without such a check, or a Local one while the node
    # still has ready endpoints of its Service (those go as its Pods are evicted).
    PARTIALLY_DRAINING = "partially-draining"
    # Marked for deletion, yet no load balancer will take it out; or labelled for a GKE
    # drain, which no target pool follows.
    NOT_DRAINING = "not-draining"
    NOT_APPLICABLE = "not-applicable"  # marked, but in no load balancer: nothing to drain
    EXCLUDED = "excluded"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class NodeDrain:
    state: DrainState
    reason: str
    marked_at: str = ""  # RFC 3339, when the node was marked for deletion ("" if unknown)
    # Worst case from the mark to UNHEALTHY in every load balancer that drains it (its
    # checks' own interval and thresholds); None when none drains it by its check.
    bound_seconds: int | None = None
    not_draining: tuple[LbDrainView, ...] = ()  # those that keep sending it traffic
    # False for a node only labelled for a GKE drain (or not marked at all): it has no drain
    # window to time, whatever its state.
    marked_for_deletion: bool = False
    # UNKNOWN only because kube-proxy is replaced by this (a DaemonSet's name): one
    # cluster-level alert says so, not one per node.
    replaced_by: str = ""
    # Checked against GCE (planner/drain_evidence): True when every load balancer holding it
    # was read and the reads bear the verdict out; `evidence` says what was seen, or why not.
    verified: bool = False
    evidence: str = ""
    # Load balancers that already took it out of their backends (read or derived).
    taken_out: tuple[LbRemoval, ...] = ()
    # Unix time by which every load balancer holding it sends it no new connections, as GCE
    # showed (UNHEALTHY since it was marked, or out of them all; for a class of several load
    # balancers read through one, one check interval later at most); None: not shown.
    drained_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "reason": self.reason,
            "unknownBecauseReplacedBy": self.replaced_by,
            "markedAt": self.marked_at,
            "boundSeconds": self.bound_seconds,
            "verified": self.verified,
            "evidence": self.evidence,
            "poolsNotDraining": [p.to_json() for p in self.not_draining],
            "takenOutBy": [r.to_json() for r in self.taken_out],
            "drainedAt": self.drained_at,
        }


@dataclass(frozen=True)
class Drainability:
    """Whether some load balancer holding a node would drain it were it marked for deletion:
    True (`bound_seconds`: how long the slowest of them takes), False (`reason` says why
    not), or None when the load balancers could not be read."""

    able: bool | None
    reason: str
    bound_seconds: int | None = None


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
    node: Node,
    facts: KubeProxyFacts,
    pools: Sequence[LbDrainView] | None,
    taken_out: Sequence[LbRemoval] = (),
) -> NodeDrain:
    """`pools`: every load balancer taken to hold the node (pool_drain_views, and backend
    services' from planner/backend_drain); None when the target pools could not be read, so
    nothing can be said about a marked node. `taken_out`: those that already took it out."""
    if is_excluded_from_load_balancers(node):
        return NodeDrain(DrainState.EXCLUDED, "labelled exclude-from-external-load-balancers")
    if not is_being_deleted(node):
        if is_gke_drain_labelled(node):
            return gke_drain(pools, taken_out)
        return NodeDrain(DrainState.SERVING, "not marked for deletion")
    since = marked_at(node)
    out = tuple(taken_out)
    if pools is None:
        return NodeDrain(
            DrainState.UNKNOWN,
            "marked for deletion; the target pools could not be read, so which hold it and "
            "what they carry is unknown",
            since,
            marked_for_deletion=True,
            taken_out=out,
        )
    if not pools:
        return NodeDrain(
            DrainState.NOT_APPLICABLE,
            f"marked for deletion; {_in_none(out)}, so no load balancer has connections to "
            "drain from it",
            since,
            marked_for_deletion=True,
            taken_out=out,
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
            taken_out=out,
        )
    elif replaced and facts.drain_reason:
        how = f"{how} ({facts.drain_reason})"
    too_old = bool(healthz) and caps.serves_healthz is not False and not caps.drains_when_deleted
    draining = [] if too_old else healthz
    # Those that will not take it out; Local ones do, but only as its endpoints go.
    stuck = [p for p in pools if p.kind in NEVER_DRAIN]
    stuck += healthz if too_old else []
    local = [p for p in pools if p.kind is PoolDrainKind.LOCAL]
    bound = max((p.bound_seconds or 0 for p in draining), default=0) or None
    also = f"; {_out_of(out)}" if out else ""
    if not stuck and not local:
        return NodeDrain(
            DrainState.DRAINING,
            f"marked for deletion and {how}: every load balancer holding it drains it{also}",
            since,
            bound,
            marked_for_deletion=True,
            taken_out=out,
        )
    # Local ones do not make up for one that never drains it: only they (with no other)
    # leave it partially drained rather than not at all.
    if too_old or (stuck and not draining and not out):
        why = (
            f"{version} does not fail /healthz for it: {facts.drain_reason}"
            if too_old and replaced
            else f"{version} is too old to fail /healthz for it"
            if too_old
            else f"no load balancer holding it can drain it ({_listed(stuck)})"
        )
        return NodeDrain(
            DrainState.NOT_DRAINING,
            f"marked for deletion, but {why}: the load balancers keep sending it new "
            f"connections until it is gone{also}",
            since,
            not_draining=(*stuck, *local),
            marked_for_deletion=True,
            taken_out=out,
        )
    others = (*stuck, *local)
    drained_by = (
        f"{how}, so {len(draining)} load balancer(s) drain it"
        if draining
        else "none still holding it drains it by itself"
    )
    return NodeDrain(
        DrainState.PARTIALLY_DRAINING,
        f"marked for deletion; {drained_by}{also}; {len(others)} do not (yet): {_listed(others)}",
        since,
        bound,
        others,
        marked_for_deletion=True,
        taken_out=out,
    )


def gke_drain(
    pools: Sequence[LbDrainView] | None, taken_out: Sequence[LbRemoval] = ()
) -> NodeDrain:
    """A node GKE labelled for draining and nothing marked for deletion: the label makes
    neither kube-proxy fail /healthz nor the service controller take it out of the pools
    (see is_gke_drain_labelled), so every load balancer still holding it, whatever check it
    carries, keeps sending it new connections until it is tainted or deleted (a Local one,
    once the drain has evicted its endpoints). ingress-gce's do take it out (`taken_out`)."""
    label = f"labelled {GKE_OPERATION_LABEL}={GKE_DRAIN_OPERATION}: GKE is about to drain it"
    out = tuple(taken_out)
    if pools is None:
        return NodeDrain(
            DrainState.UNKNOWN,
            f"{label}; the target pools could not be read, so whether any holds it (and keeps "
            "sending it new connections, since none follows that label) is unknown",
            taken_out=out,
        )
    if not pools:
        return NodeDrain(
            DrainState.NOT_APPLICABLE,
            f"{label}; {_in_none(out)}, so no load balancer has connections to drain from it",
            taken_out=out,
        )
    also = f"; {_out_of(out)}" if out else ""
    # A Local one drains it as its endpoints go, which GKE's drain evicts; no other does.
    local = tuple(p for p in pools if p.kind is PoolDrainKind.LOCAL)
    if len(local) == len(pools):
        return NodeDrain(
            DrainState.PARTIALLY_DRAINING,
            f"{label}; only externalTrafficPolicy Local load balancers hold it, and they stop "
            f"sending it new connections only once it has no ready endpoints of their "
            f"Services{also}",
            not_draining=local,
            taken_out=out,
        )
    return NodeDrain(
        DrainState.NOT_DRAINING,
        f"{label}, but kube-proxy and target pools ignore that label: "
        f"{len(pools) - len(local)} load balancer(s) holding it keep sending it new "
        f"connections until it is tainted {TO_BE_DELETED_TAINT} or deleted{also}",
        taken_out=out,
    )


def _in_none(taken_out: tuple[LbRemoval, ...]) -> str:
    if not taken_out:
        return "it is in no load balancer"
    return f"no load balancer holds it any more: {_out_of(taken_out)}"


def _out_of(taken_out: Sequence[LbRemoval]) -> str:
    return first_few([r.describe() for r in taken_out], _MAX_POOLS_IN_REASON, "; ")


def _listed(pools: Sequence[LbDrainView]) -> str:
    return first_few([p.describe() for p in pools], _MAX_POOLS_IN_REASON, "; ")
