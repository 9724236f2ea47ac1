"""Backend-service load balancers as a node being deleted meets them: what their check does
for it (as for a target pool), and whether they still hold it at all.

Which hold a node:
- instance groups are read (the shared `k8s-ig--<id>` groups, one per zone: GceClient
  read_backends), so membership there is what GCE shows;
- GCE_VM_IP NEGs (one per zone per Service) are not read, so their membership is derived
  from ingress-gce's node selection, and says so: its candidate filters drop a node tainted
  ToBeDeletedByClusterAutoscaler from every L4 NEG, Cluster and Local, and a node labelled
  operation.gke.io/type=drain from Cluster NEGs (kubernetes/ingress-gce
  pkg/utils/zonegetter/zone_getter.go nodePredicateInternal; pkg/neg/types/types.go
  NodeFilterForEndpointCalculatorMode), and the NEG controller syncs as soon as a node's
  filter result changes (pkg/neg/controller.go nodeUpdateRequiresResync). A deletionTimestamp
  alone changes no filter: such a node stays until it is gone, and its check decides.
A backend taken out with connection draining keeps its established connections that long;
new ones stop at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from lbhc.model.backend import BackendView, is_network_endpoint_group
from lbhc.model.cloud import resource_path
from lbhc.model.cluster import Node
from lbhc.planner.backend_lbs import BackendLb
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import drain_bound_seconds, probes_kube_proxy_healthz
from lbhc.planner.lb_views import LbDrainView, LbKind, LbRemoval, PoolDrainKind
from lbhc.planner.nodes import TO_BE_DELETED_TAINT, is_gke_drain_labelled
from lbhc.planner.pool_reach import PoolReach, ReachJudge

_NEG_SELECTION = "derived from ingress-gce's node selection for its NEGs, which drops"


@dataclass(frozen=True)
class BackendDrain:
    """One backend-service load balancer of this cluster, for drain verdicts."""

    view: LbDrainView
    groups: tuple[str, ...]  # its backends' resource paths
    local: bool  # externalTrafficPolicy Local
    draining_timeout_sec: int

    @property
    def by_negs(self) -> bool:
        return any(is_network_endpoint_group(g) for g in self.groups)


def backend_reach(lbs: Mapping[str, BackendLb], judge: ReachJudge) -> dict[str, PoolReach]:
    """Service key -> what the firewall does with its load balancer's probes (readable checks
    on a known port only)."""
    return {
        key: judge.judge_backend(lb.backend, lb.check.port)
        for key, lb in lbs.items()
        if lb.check is not None and lb.check.port is not None
    }


def backend_drain_views(
    lbs: Mapping[str, BackendLb], config: PlannerConfig, reach: Mapping[str, PoolReach]
) -> tuple[BackendDrain, ...]:
    return tuple(_backend_drain(lbs[key], config, reach.get(key)) for key in sorted(lbs))


def _backend_drain(lb: BackendLb, config: PlannerConfig, probes: PoolReach | None) -> BackendDrain:
    name, key, check = lb.backend.name, lb.service.key, lb.check
    local = lb.service.spec.external_traffic_policy == "Local"
    # A regional and a global check may share a name (ingress-gce names both its external and
    # its internal shared check k8s2-<hash>-l4-shared-hc): the scope tells them apart, so
    # they never share a class.
    shown = f"{lb.check_name} ({check.region or 'global'})" if check is not None else lb.check_name
    view = LbDrainView(name, key, PoolDrainKind.OTHER, shown, lb=LbKind.BACKEND_SERVICE)
    if probes is not None:
        view = replace(view, reach=probes.reach.value)
    if probes is not None and probes.blocked and not local:
        view = replace(view, kind=PoolDrainKind.PROBE_BLOCKED, blocked=probes.explain())
    elif local:
        view = replace(view, kind=PoolDrainKind.LOCAL)
    elif not lb.check_url:
        view = replace(view, kind=PoolDrainKind.NO_CHECK)
    elif check is not None and check.type == "HTTP" and probes_kube_proxy_healthz(check, config):
        view = replace(view, kind=PoolDrainKind.HEALTHZ, bound_seconds=drain_bound_seconds(check))
    elif check is None:
        view = replace(view, check=f"health check {lb.check_name} (not readable)")
    else:
        what = f"{check.type}, port {check.port}" + (
            f", path {check.request_path}" if check.type.startswith("HTTP") else ""
        )
        view = replace(view, check=f"health check {check.name} ({what})")
    groups = tuple(resource_path(g) for g in lb.backend.backends)
    return BackendDrain(view, groups, local, lb.backend.draining_timeout_sec)


@dataclass(frozen=True)
class BackendMembership:
    held: tuple[LbDrainView, ...]  # still send it new connections unless their check fails
    taken_out: tuple[LbRemoval, ...]


def backend_membership(
    node: Node, instance: str, lbs: Sequence[BackendDrain], view: BackendView
) -> BackendMembership:
    """`instance`: the node's VM as a resource path (projects/P/zones/Z/instances/N)."""
    held: list[LbDrainView] = []
    out: list[LbRemoval] = []
    for lb in lbs:
        removal = _taken_out(node, instance, lb, view.members)
        if removal is None:
            held.append(lb.view)
        else:
            out.append(removal)
    return BackendMembership(tuple(held), tuple(out))


def _taken_out(
    node: Node, instance: str, lb: BackendDrain, members: Mapping[str, frozenset[str]]
) -> LbRemoval | None:
    timeout = lb.draining_timeout_sec
    if lb.by_negs:
        if any(t.key == TO_BE_DELETED_TAINT for t in node.spec.taints):
            how = f"{_NEG_SELECTION} nodes tainted {TO_BE_DELETED_TAINT}"
            return LbRemoval(lb.view, how, derived=True, draining_timeout_sec=timeout)
        if is_gke_drain_labelled(node) and not lb.local:
            how = f"{_NEG_SELECTION} nodes GKE labelled for a drain from Cluster NEGs"
            return LbRemoval(lb.view, how, derived=True, draining_timeout_sec=timeout)
        return None
    if not lb.groups or any(group not in members for group in lb.groups):
        return None  # a group not read: taken to hold it, so its check decides
    if any(instance in members[group] for group in lb.groups):
        return None
    return LbRemoval(lb.view, "not in its instance groups, as read", draining_timeout_sec=timeout)
