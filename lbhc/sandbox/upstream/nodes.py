"""The service controller's view of Nodes, after k8s.io/cloud-provider
controllers/service/controller.go: which nodes a load balancer is given
(stableNodeSetPredicates), which node changes make it sync the nodes into every load balancer
(the node informer's handlers in New, with shouldSyncUpdatedNode), and when that sync changes a
load balancer (nodesSufficientlyEqual).

Written from upstream, not imported from lbhc.planner.nodes: the emulator is an independent
check on lbhc's reading of the same predicates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# controller.go ToBeDeletedTaint; k8s.io/api core/v1 LabelNodeExcludeBalancers.
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
EXCLUDE_BALANCERS_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
# Go's strconv.ParseBool: these read false, its true values true, anything else is an error.
_PARSE_BOOL_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_COMPUTE = "https://www.googleapis.com/compute/v1/"


@dataclass(frozen=True)
class NodeView:
    """The fields of a Node the service controller (and ingress-gce's zonegetter) reads,
    from the raw API object."""

    name: str
    uid: str
    provider_id: str
    labels: tuple[tuple[str, str], ...]
    taint_keys: tuple[str, ...]
    deleting: bool
    ready: bool | None = True  # no Ready condition other than True; None: no conditions at all
    unschedulable: bool = False
    pod_cidr: str = ""
    internal_ip: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> NodeView:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        status = obj.get("status") or {}
        conditions = status.get("conditions") or []
        unready = any(c.get("type") == "Ready" and c.get("status") != "True" for c in conditions)
        addresses = [a for a in status.get("addresses") or [] if a.get("type") == "InternalIP"]
        return cls(
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            provider_id=str(spec.get("providerID") or ""),
            labels=tuple(sorted((meta.get("labels") or {}).items())),
            taint_keys=tuple(str(t.get("key") or "") for t in spec.get("taints") or ()),
            deleting=bool(meta.get("deletionTimestamp")),
            ready=(not unready) if conditions else None,
            unschedulable=bool(spec.get("unschedulable")),
            pod_cidr=str(spec.get("podCIDR") or ""),
            internal_ip=str(addresses[0].get("address") or "") if addresses else "",
        )

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)

    @property
    def zone(self) -> str:
        """The zone of a providerID gce://PROJECT/ZONE/NAME; "" without one (zonegetter's
        getZone, which skips such a node)."""
        parts = self.provider_id.removeprefix("gce://").split("/")
        return parts[1] if self.provider_id.startswith("gce://") and len(parts) == 3 else ""


def is_included(node: NodeView) -> bool:
    """nodeIncludedPredicate: not labelled out of load balancers. The label's value is parsed
    as a bool: "false" keeps the node in; "true", or a value that does not parse, takes it
    out."""
    value = node.label(EXCLUDE_BALANCERS_LABEL)
    return value is None or value in _PARSE_BOOL_FALSE


def is_untainted(node: NodeView) -> bool:
    """nodeUnTaintedPredicate: no ToBeDeletedByClusterAutoscaler taint (any value, effect)."""
    return TO_BE_DELETED_TAINT not in node.taint_keys


def is_not_deleted(node: NodeView) -> bool:
    """nodeNotDeletedPredicate: no deletionTimestamp."""
    return not node.deleting


# stableNodeSetPredicates, in upstream's order. Readiness is not among them (KEP-3458).
STABLE_NODE_SET: tuple[Callable[[NodeView], bool], ...] = (
    is_not_deleted,
    is_included,
    is_untainted,
)


def stable_node_set(nodes: Iterable[NodeView]) -> list[NodeView]:
    """filterWithPredicates(nodes, stableNodeSetPredicates...): the nodes a load balancer gets,
    both when its Service is synced (ensureLoadBalancer) and on a node sync
    (nodeSyncService)."""
    return [node for node in nodes if all(p(node) for p in STABLE_NODE_SET)]


def should_sync_updated_node(old: NodeView, new: NodeView) -> bool:
    """shouldSyncUpdatedNode: an update starts a node sync only if the exclusion label's
    verdict flips or the providerID changes. A new taint or a deletionTimestamp does not:
    the node leaves the pools only when something else starts a sync."""
    return is_included(old) != is_included(new) or old.provider_id != new.provider_id


def node_sync_triggered(
    previous: Mapping[str, NodeView] | None, current: Mapping[str, NodeView]
) -> bool:
    """Whether the node informer's handlers would have enqueued a node sync between two looks
    at the Nodes (by name): an Add or a Delete (a new uid under a known name is both), or an
    Update shouldSyncUpdatedNode passes. The first look stands for the informer's initial
    list, every node an Add."""
    if previous is None:
        return True
    if previous.keys() != current.keys():
        return True
    for name, new in current.items():
        old = previous[name]
        if old.uid != new.uid or should_sync_updated_node(old, new):
            return True
    return False


def nodes_sufficiently_equal(old: Sequence[NodeView], new: Sequence[NodeView]) -> bool:
    """nodesSufficientlyEqual: the same names with the same providerIDs."""
    if len(old) != len(new):
        return False
    return {n.name: n.provider_id for n in old} == {n.name: n.provider_id for n in new}


def host_url(node: NodeView, project: str, default_zone: str) -> str:
    """The node's VM as the cloud provider finds it: by the node's name (getInstancesByNames
    searches the managed zones for it). The fake holds no VMs for the nodes, so the zone comes
    from the providerID (gce://PROJECT/ZONE/NAME), else `default_zone`."""
    parts = node.provider_id.removeprefix("gce://").split("/")
    zone = parts[1] if len(parts) == 3 else default_zone
    return f"{_COMPUTE}projects/{project}/zones/{zone}/instances/{node.name}"
