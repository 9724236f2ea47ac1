"""Which nodes ingress-gce's L4 load balancers get, and which node changes make it look
again: kubernetes/ingress-gce pkg/utils/zonegetter/zone_getter.go (the node filters,
nodePredicateInternal), pkg/neg/types/types.go (NodeFilterForEndpointCalculatorMode),
pkg/instancegroups/controller.go (the node informer's handlers, nodeStatusChanged) and
pkg/neg/controller.go (nodeUpdateRequiresResync).

What this means for a node going away, read from those files:
- ToBeDeletedByClusterAutoscaler: out under every filter but AllNodesFilter. The NEG
  controller resyncs when a node's verdict under a filter flips, so Cluster NEGs drop it at
  once; the instance group controller resyncs only on a node added or deleted, or a change
  of spec.unschedulable, readiness or podCIDR, so a taint alone leaves the node in the
  shared instance groups until some other node event.
- operation.gke.io/type=drain: out of Cluster (and Local) NEGs; NOT out of the instance
  groups (CandidateNodesFilter does not look at it).
- a deletionTimestamp: no filter looks at it; the node leaves when its Node object is gone.
- the exclusion label node.kubernetes.io/exclude-from-external-load-balancers: out when
  present, whatever its value (the cloud provider's service controller parses it as a bool).

Left out: the default-subnet test (the sandbox has one subnet; upstream's needs
spec.podCIDR), the node topology CRD, legacy networks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum

from ..nodes import TO_BE_DELETED_TAINT, NodeView

# pkg/utils/utils.go.
MASTER_ROLE_LABEL = "node-role.kubernetes.io/master"
ALPHA_EXCLUDE_BALANCER_LABEL = "alpha.service-controller.kubernetes.io/exclude-balancer"
EXCLUDE_BALANCER_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
OPERATION_LABEL = "operation.gke.io/type"  # GKECurrentOperationLabel
DRAIN = "drain"  # NodeDrain


def _predicate(node: NodeView, include_unready: bool, exclude_upgrading: bool) -> bool:
    """nodePredicateInternal (less the default-subnet test)."""
    if TO_BE_DELETED_TAINT in node.taint_keys:
        return False
    labels = dict(node.labels)
    if any(key in labels for key in (MASTER_ROLE_LABEL, ALPHA_EXCLUDE_BALANCER_LABEL)):
        return False
    if EXCLUDE_BALANCER_LABEL in labels:
        return False
    if exclude_upgrading and labels.get(OPERATION_LABEL) == DRAIN:
        return False
    if node.ready is None:  # "If we have no info, don't accept"
        return False
    return include_unready or node.ready


class NodeFilter(Enum):
    """zonegetter's filters."""

    ALL = "AllNodesFilter"
    CANDIDATE = "CandidateNodesFilter"
    CANDIDATE_AND_UNREADY = "CandidateAndUnreadyNodesFilter"

    def selects(self, node: NodeView) -> bool:
        """IsNodeSelectedByFilter."""
        if self is NodeFilter.ALL:
            return True
        if self is NodeFilter.CANDIDATE:
            return _predicate(node, include_unready=False, exclude_upgrading=False)
        return _predicate(node, include_unready=True, exclude_upgrading=True)


# NodeFilterForEndpointCalculatorMode: both L4 modes (includeDrainNodesL4Local off).
L4_NEG_FILTER = NodeFilter.CANDIDATE_AND_UNREADY
# pkg/neg/controller.go buildNodeMembershipFilters.
NEG_MEMBERSHIP_FILTERS = (NodeFilter.CANDIDATE_AND_UNREADY, NodeFilter.CANDIDATE)


def list_nodes(nodes: Iterable[NodeView], node_filter: NodeFilter) -> list[NodeView]:
    """ListNodes: the nodes the filter selects."""
    return [node for node in nodes if node_filter.selects(node)]


def list_zones(nodes: Iterable[NodeView], node_filter: NodeFilter) -> list[str]:
    """ListZones: the zones of the selected nodes that have one, sorted."""
    return sorted({node.zone for node in list_nodes(nodes, node_filter) if node.zone})


def by_zone(nodes: Iterable[NodeView]) -> dict[str, list[NodeView]]:
    """Nodes split by zone ("" for a node without a providerID)."""
    zoned: dict[str, list[NodeView]] = {}
    for node in nodes:
        zoned.setdefault(node.zone, []).append(node)
    return zoned


def _status_changed(old: NodeView, new: NodeView) -> bool:
    """pkg/instancegroups/controller.go nodeStatusChanged."""
    return (old.unschedulable, old.ready, old.pod_cidr) != (
        new.unschedulable,
        new.ready,
        new.pod_cidr,
    )


def _membership_changed(old: NodeView, new: NodeView) -> bool:
    """pkg/neg/controller.go's update handler: a verdict under a membership filter flips,
    or the providerID changes."""
    flipped = any(f.selects(old) != f.selects(new) for f in NEG_MEMBERSHIP_FILTERS)
    return flipped or old.provider_id != new.provider_id


def _triggered(
    previous: Mapping[str, NodeView] | None,
    current: Mapping[str, NodeView],
    on_update: Callable[[NodeView, NodeView], bool],
) -> bool:
    """Whether an informer's handlers enqueued a sync between two looks at the Nodes: an
    Add or a Delete (a new uid under a known name is both), or an Update `on_update`
    passes. The first look stands for the initial list, every node an Add."""
    if previous is None or previous.keys() != current.keys():
        return True
    return any(
        previous[name].uid != node.uid or on_update(previous[name], node)
        for name, node in current.items()
    )


def instance_groups_triggered(
    previous: Mapping[str, NodeView] | None, current: Mapping[str, NodeView]
) -> bool:
    """The instance group controller's node handlers enqueued its sync."""
    return _triggered(previous, current, _status_changed)


def negs_triggered(
    previous: Mapping[str, NodeView] | None, current: Mapping[str, NodeView]
) -> bool:
    """The NEG controller's node handlers enqueued a resync of every syncer."""
    return _triggered(previous, current, _membership_changed)
