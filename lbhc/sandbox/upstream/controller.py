"""One pass of today's service controller with the GCE cloud provider behind it (the
"current" profile), over the kube-apiserver fake's Services and Nodes. As k8s.io/cloud-provider's
service controller does (controllers/service/controller.go):

- a load balancer is ensured when the controller first sees its Service (at start, every
  Service) and again whenever the Service changes in a way that matters (needsUpdate), the
  cleanup finalizer added first (addFinalizer), with the nodes stableNodeSetPredicates passes
  (ensureLoadBalancer), which it remembers as the Service's last synced nodes;
- a node sync runs when a node is added or deleted, or its exclusion label's verdict or its
  providerID changes (the node informer's handlers): each target-pool Service whose stable node
  set differs from its last synced nodes gets its pool updated (nodeSyncService,
  UpdateLoadBalancer). A node tainted ToBeDeletedByClusterAutoscaler or given a
  deletionTimestamp therefore stays in the pools until something else starts a sync.

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

from . import names
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
_RELEASED = (LB_CLEANUP_FINALIZER, names.NETLB_FINALIZER_V1, names.NETLB_FINALIZER_V2)


class CurrentServiceController:
    def __init__(self, kube: KubeFake, lbs: ExternalLoadBalancers, project: str, zone: str) -> None:
        self._kube, self.lbs = kube, lbs
        self._project, self._zone = project, zone
        self._seen: dict[str, tuple[tuple[Any, ...], Handler]] = {}  # uid -> what was ensured
        # uid -> a target-pool Service and its last synced nodes (lastSyncedNodes).
        self._synced: dict[str, tuple[ServiceView, tuple[NodeView, ...]]] = {}
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
        if kind is Handler.TARGET_POOL:  # stored before the ensure, as storeLastSyncedNodes is
            self._synced[service.uid] = (service, tuple(stable))
        else:
            self._synced.pop(service.uid, None)
        ip = self._ensure(service, kind, self._hosts(stable))
        if ip is not None and service.ingress_ips != (ip,):
            publish_ingress_ip(self._kube, service.namespace, service.name, ip)
        self._seen[service.uid] = (fingerprint, kind)

    def _forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
        self._synced.pop(uid, None)

    def _sync_nodes(self, stable: list[NodeView]) -> None:
        """syncNodes over the target-pool Services ensured so far (an RBS Service's
        UpdateLoadBalancer is ImplementedElsewhere; internal ones are not modelled)."""
        for uid, (service, last) in list(self._synced.items()):
            old = stable_node_set(last)
            self._synced[uid] = (service, tuple(stable))
            if nodes_sufficiently_equal(old, stable):
                continue
            try:
                self.lbs.update(service, self._hosts(stable))
            except Exception:  # servicesToRetry: the Service is synced (ensured) again
                log.warning(
                    "service controller: node sync of %s failed", service.key, exc_info=True
                )
                self._seen.pop(uid, None)

    def _ensure(self, service: ServiceView, kind: Handler, hosts: list[str]) -> str | None:
        if kind is Handler.TARGET_POOL:
            return self.lbs.ensure(service, hosts)
        if kind is Handler.RBS:
            return self.lbs.ensure_rbs(service)
        return None  # internal load balancers are not modelled

    def _delete(self, service: ServiceView, kind: Handler) -> None:
        if kind is Handler.TARGET_POOL:
            self.lbs.ensure_deleted(service)
        elif kind is Handler.RBS:
            self.lbs.delete_rbs(service)
