"""One pass of today's service controller with the GCE cloud provider behind it (the
"current" profile), over the kube-apiserver fake's Services. As k8s.io/cloud-provider's
service controller does (controllers/service/controller.go: needsUpdate, addFinalizer), a
load balancer is ensured when the controller first sees its Service (at start, every
Service) and again whenever the Service changes in a way that matters, the cleanup finalizer
added first; a failure is retried on the next pass. Which code path handles which Service:
services.handler."""

from __future__ import annotations

import logging
from typing import Any

from lbhc.model.cloud import instance_url
from lbhc.model.cluster import Node
from lbhc.sandbox.cloud_provider import add_finalizer, publish_ingress_ip, release_finalizers
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.seed import LB_CLEANUP_FINALIZER

from . import names
from .netlb import ExternalLoadBalancers
from .services import Handler, ServiceView, handler

log = logging.getLogger(__name__)
_RELEASED = (LB_CLEANUP_FINALIZER, names.NETLB_FINALIZER_V1, names.NETLB_FINALIZER_V2)


class CurrentServiceController:
    def __init__(self, kube: KubeFake, lbs: ExternalLoadBalancers, project: str, zone: str) -> None:
        self._kube, self.lbs = kube, lbs
        self._project, self._zone = project, zone
        self._seen: dict[str, tuple[tuple[Any, ...], Handler]] = {}  # uid -> what was ensured

    def sync(self) -> None:
        nodes = [Node.model_validate(n) for n in self._kube.objects("Node")]
        hosts = [instance_url(n, self._project, self._zone) for n in nodes]
        for obj in self._kube.objects("Service"):
            service = ServiceView.of(obj)
            try:
                self._sync(obj, service, hosts)
            except Exception:  # retried next pass, as the controller's work queue would
                log.warning("service controller: %s failed; retrying", service.key, exc_info=True)

    def _sync(self, obj: dict[str, Any], service: ServiceView, hosts: list[str]) -> None:
        kind = handler(service)
        if kind is Handler.ELSEWHERE:
            return
        if service.deleting:
            if any(f in service.finalizers for f in _RELEASED):
                self._delete(service, kind)
                release_finalizers(self._kube, obj, _RELEASED)
            self._seen.pop(service.uid, None)
            return
        if service.type != "LoadBalancer":
            ensured = self._seen.pop(service.uid, None)
            if ensured is not None:  # no longer a LoadBalancer: EnsureLoadBalancerDeleted
                self._delete(service, ensured[1])
            return
        fingerprint = service.fingerprint()
        if self._seen.get(service.uid) == (fingerprint, kind):
            return
        if LB_CLEANUP_FINALIZER not in service.finalizers:  # k8s.io/cloud-provider addFinalizer
            add_finalizer(self._kube, obj, LB_CLEANUP_FINALIZER)
        ip = self._ensure(service, kind, hosts)
        if ip is not None and service.ingress_ips != (ip,):
            publish_ingress_ip(self._kube, service.namespace, service.name, ip)
        self._seen[service.uid] = (fingerprint, kind)

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
