"""Per node: is the load balancer draining it? The truth an operator needs during scale-down
(reference.md 1: only /healthz on kube-proxy >= 1.30 fails for a node being deleted)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from lbhc.model.cluster import Node
from lbhc.planner.capabilities import KubeProxyFacts
from lbhc.planner.nodes import (
    TO_BE_DELETED_TAINT,
    is_being_deleted,
    is_excluded_from_load_balancers,
)


class DrainState(StrEnum):
    SERVING = "serving"
    DRAINING = "draining"
    NOT_DRAINING = "not-draining"  # marked for deletion, yet the LB keeps sending it traffic
    EXCLUDED = "excluded"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class NodeDrain:
    state: DrainState
    reason: str
    marked_at: str = ""  # RFC 3339, when the node was marked for deletion ("" if unknown)

    def to_json(self) -> dict[str, str]:
        return {"state": self.state.value, "reason": self.reason, "markedAt": self.marked_at}


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


def node_drain(node: Node, facts: KubeProxyFacts, check_in_use: bool) -> NodeDrain:
    """`check_in_use`: the shared check is attached to the pools (no fallback): without it
    nothing but the cloud provider's next sync takes a node out of the load balancers."""
    if is_excluded_from_load_balancers(node):
        return NodeDrain(DrainState.EXCLUDED, "labelled exclude-from-external-load-balancers")
    if not is_being_deleted(node):
        return NodeDrain(DrainState.SERVING, "not marked for deletion")
    since = marked_at(node)
    version = f"kube-proxy {facts.version.display()} (from {facts.source.value})"
    drains = facts.capabilities.drains_when_deleted
    if not check_in_use:
        return NodeDrain(
            DrainState.NOT_DRAINING,
            "marked for deletion, but no health check is attached: the load balancer keeps "
            "sending it new connections until the cloud provider removes it from the pools",
            since,
        )
    if facts.capabilities.serves_healthz is False:  # fallback policy `never`
        return NodeDrain(
            DrainState.DRAINING,
            f"marked for deletion; {version} cannot answer the check at all, so the load "
            "balancer sends it no new connections anyway",
            since,
        )
    if drains is None:
        return NodeDrain(
            DrainState.UNKNOWN,
            f"marked for deletion; whether {version} fails /healthz for it is unknown",
            since,
        )
    if drains:
        return NodeDrain(
            DrainState.DRAINING, f"marked for deletion and {version} fails /healthz", since
        )
    return NodeDrain(
        DrainState.NOT_DRAINING,
        f"marked for deletion, but {version} is too old to fail /healthz for it: the load "
        "balancer keeps sending it new connections until the node is gone",
        since,
    )
