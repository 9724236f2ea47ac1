"""Node predicates, one question each."""

from __future__ import annotations

from lbhc.model.cluster import Node

TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
EXCLUDE_FROM_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
# What GKE's control plane labels a node it is about to drain for an upgrade or resize
# (kubernetes/ingress-gce pkg/utils/utils.go: GKECurrentOperationLabel, NodeDrain).
GKE_OPERATION_LABEL, GKE_DRAIN_OPERATION = "operation.gke.io/type", "drain"


def is_being_deleted(node: Node) -> bool:
    """What makes kube-proxy >= 1.30 fail /healthz: a deletionTimestamp or the autoscaler's
    taint, whatever its value or effect."""
    if node.metadata.deletion_timestamp:
        return True
    return any(taint.key == TO_BE_DELETED_TAINT for taint in node.spec.taints)


def is_gke_drain_labelled(node: Node) -> bool:
    """GKE is about to drain the node (ingress-gce's zone getter compares the value exactly,
    pkg/utils/zonegetter/zone_getter.go). Nothing that feeds a target pool reads the label:
    kube-proxy's /healthz fails only for the autoscaler's taint or a deletionTimestamp
    (kubernetes pkg/proxy/healthcheck/proxy_health.go), and the service controller keeps the
    node in the pools (k8s.io/cloud-provider controllers/service/controller.go,
    stableNodeSetPredicates)."""
    return node.metadata.labels.get(GKE_OPERATION_LABEL) == GKE_DRAIN_OPERATION


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


def is_serving(node: Node, kube_proxy_pod: str) -> bool:
    """A node every load balancer should find healthy: not marked, not excluded, not about
    to be drained by GKE, and its kube-proxy Pod ready (or not judged: "")."""
    return (
        not is_being_deleted(node)
        and not is_excluded_from_load_balancers(node)
        and not is_gke_drain_labelled(node)
        and kube_proxy_pod in ("", "ready")
    )


def is_leaving(node: Node) -> bool:
    """Marked for deletion, or labelled for a GKE drain: a node whose load balancers'
    membership matters now."""
    return is_being_deleted(node) or is_gke_drain_labelled(node)
