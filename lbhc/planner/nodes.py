"""Node predicates, one question each."""

from __future__ import annotations

from lbhc.model.cluster import Node

TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
EXCLUDE_FROM_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"


def is_being_deleted(node: Node) -> bool:
    """What makes kube-proxy >= 1.30 fail /healthz: a deletionTimestamp or the autoscaler's
    taint, whatever its value or effect."""
    if node.metadata.deletion_timestamp:
        return True
    return any(taint.key == TO_BE_DELETED_TAINT for taint in node.spec.taints)


def is_excluded_from_load_balancers(node: Node) -> bool:
    """The label's presence excludes the node, whatever its value (as the service controller)."""
    return EXCLUDE_FROM_LB_LABEL in node.metadata.labels


def can_receive_lb_traffic(node: Node) -> bool:
    """Readiness is deliberately not consulted: the service controller does not (KEP-3458)."""
    return not is_excluded_from_load_balancers(node)
