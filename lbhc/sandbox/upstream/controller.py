"""One pass of today's service controller with the GCE cloud provider behind it (the
"current" profile), over the kube-apiserver fake's Services and Nodes: target pools (`netlb`)
and its own internal load balancers (`ilb`); RBS Services and, under GKE subsetting, new
internal ones are ImplementedElsewhere (ingress-gce's, `ingress_gce`). As
k8s.io/cloud-provider's service controller does (controllers/service/controller.go):

- a load balancer is ensured when the controller first sees its Service (at start, every
  Service) and again whenever the Service changes in a way that matters (needsUpdate), the
  cleanup finalizer added first (addFinalizer), with the nodes stableNodeSetPredicates passes
  (ensureLoadBalancer), which it remembers as the Service's last synced nodes;
- a node sync runs when a node is added or deleted, or its exclusion label's verdict or its
  providerID changes (the node informer's handlers): each Service whose stable node set differs
  from its last synced nodes gets its load balancer updated (nodeSyncService,
  UpdateLoadBalancer: a pool's instances, an internal LB's instance groups). A node tainted
  ToBeDeletedByClusterAutoscaler or given a deletionTimestamp therefore stays in the pools
  and groups until something else starts a sync.

A failure is retried on the next pass, as the work queues would; a failed node sync of a
Service, as upstream, by ensuring that Service again. Which code path handles which Service:
services.handler; which nodes and when: nodes."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from lbhc.sandbox.cloud_provider import add_finalizer, publish_ingress_ip, release_finalizers
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.seed import LB_CLEANUP_FINALIZER

from . import ilb, names
from .ilb import InternalLoadBalancers
from .netlb import ExternalLoadBalancers
from .nodes import (
    NodeView,
    host_url,
    node_sync_triggered,
    nodes_sufficiently_equal,
    stable_node_set,
)
from .services import Handler, ServiceView, handler

log = logging.getLogger(__name__)
# The finalizers the cloud provider's side releases: the service controller's own, and those
# its NetLB and internal LB code add (ingress-gce releases its own).
_RELEASED = (LB_CLEANUP_FINALIZER, names.NETLB_FINALIZER_V1, names.ILB_FINALIZER_V1)


class CurrentServiceController:
    def __init__(
        self,
        kube: KubeFake,
        lbs: ExternalLoadBalancers,
        ilbs: InternalLoadBalancers,
        project: str,
        zone: str,
    ) -> None:
        self._kube, self.lbs, self.ilbs = kube, lbs, ilbs
        self._project, self._zone = project, zone
        self._seen: dict[str, tuple[tuple[Any, ...], Handler]] = {}  # uid -> what was ensured
        # uid -> a Service whose load balancer is this provider's, its last synced nodes
        # (lastSyncedNodes).
        self._synced: dict[str, tuple[ServiceView, Handler, tuple[NodeView, ...]]] = {}
        self._nodes: dict[str, NodeView] | None = None  # the previous pass's, by name

    def sync(self) -> None:
        nodes = {n.name: n for n in map(NodeView.of, self._kube.objects("Node"))}
        triggered = node_sync_triggered(self._nodes, nodes)
        self._nodes = nodes
        stable = stable_node_set(nodes.values())
        for obj in self._kube.objects("Service"):
            service = ServiceView.of(obj)
            try:
                self._sync(obj, service, stable)
            except Exception:  # retried next pass, as the controller's work queue would
                log.warning("service controller: %s failed; retrying", service.key, exc_info=True)
        if triggered:
            self._sync_nodes(stable)

    def _hosts(self, nodes: Iterable[NodeView]) -> list[str]:
        return [host_url(n, self._project, self._zone) for n in nodes]

    def _sync(self, obj: dict[str, Any], service: ServiceView, stable: list[NodeView]) -> None:
        kind = handler(service)
        if kind is Handler.ELSEWHERE:
            return
        if service.deleting:
            if any(f in service.finalizers for f in _RELEASED):
                self._delete(service, kind)
                release_finalizers(self._kube, obj, _RELEASED)
            self._forget(service.uid)
            return
        if service.type != "LoadBalancer":
            ensured = self._seen.get(service.uid)
            self._forget(service.uid)
            if ensured is not None:  # no longer a LoadBalancer: EnsureLoadBalancerDeleted
                self._delete(service, ensured[1])
            return
        fingerprint = service.fingerprint()
        if self._seen.get(service.uid) == (fingerprint, kind):
            return
        if LB_CLEANUP_FINALIZER not in service.finalizers:  # k8s.io/cloud-provider addFinalizer
            add_finalizer(self._kube, obj, LB_CLEANUP_FINALIZER)
        if self._owned(service, kind):  # stored before the ensure, as storeLastSyncedNodes is
            self._synced[service.uid] = (service, kind, tuple(stable))
        else:
            self._synced.pop(service.uid, None)
        ip = self._ensure(obj, service, kind, stable)
        if ip is not None and service.ingress_ips != (ip,):
            publish_ingress_ip(self._kube, service.namespace, service.name, ip)
        self._seen[service.uid] = (fingerprint, kind)

    def _forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
        self._synced.pop(uid, None)

    def _owned(self, service: ServiceView, kind: Handler) -> bool:
        """The cloud provider makes this Service's load balancer (the others'
        EnsureLoadBalancer and UpdateLoadBalancer are ImplementedElsewhere)."""
        if kind is Handler.INTERNAL:
            rule = self.ilbs.rule(service) is not None
            return ilb.handles(service, self.ilbs.where, rule)
        return kind is Handler.TARGET_POOL

    def _sync_nodes(self, stable: list[NodeView]) -> None:
        """syncNodes over the Services this provider ensured so far."""
        for uid, (service, kind, last) in list(self._synced.items()):
            old = stable_node_set(last)
            self._synced[uid] = (service, kind, tuple(stable))
            if nodes_sufficiently_equal(old, stable):
                continue
            try:
                if kind is Handler.INTERNAL:
                    self.ilbs.update(service, stable)
                else:
                    self.lbs.update(service, self._hosts(stable))
            except Exception:  # servicesToRetry: the Service is synced (ensured) again
                log.warning(
                    "service controller: node sync of %s failed", service.key, exc_info=True
                )
                self._seen.pop(uid, None)

    def _ensure(
        self, obj: dict[str, Any], service: ServiceView, kind: Handler, stable: list[NodeView]
    ) -> str | None:
        if kind is Handler.TARGET_POOL:
            return self.lbs.ensure(service, self._hosts(stable))
        if not self._owned(service, kind):
            return None  # ImplementedElsewhere: ingress-gce's
        if names.ILB_FINALIZER_V1 not in service.finalizers:  # ensureInternalLoadBalancer's
            add_finalizer(self._kube, obj, names.ILB_FINALIZER_V1)
        return self.ilbs.ensure(service, stable)

    def _delete(self, service: ServiceView, kind: Handler) -> None:
        if kind is Handler.TARGET_POOL:
            self.lbs.ensure_deleted(service)
        elif kind is Handler.INTERNAL and ilb.handles_existing(service, self.ilbs.where):
            self.ilbs.ensure_deleted(service)
