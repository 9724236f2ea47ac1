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


# What Go's strconv.ParseBool reads as false; its true values and anything it cannot parse
# both exclude the node.
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def is_excluded_from_load_balancers(node: Node) -> bool:
    """As the service controller's nodeIncludedPredicate (k8s.io/cloud-provider
    controllers/service/controller.go) reads the label: its value is parsed as a bool, so
    `false` keeps the node in the load balancers, and `true` or a value that does not parse
    (empty included) takes it out."""
    value = node.metadata.labels.get(EXCLUDE_FROM_LB_LABEL)
    if value is None:
        return False
    return value not in _GO_FALSE


def can_receive_lb_traffic(node: Node) -> bool:
    """Readiness is deliberately not consulted: the service controller does not (KEP-3458)."""
    return not is_excluded_from_load_balancers(node)
