"""One pass of GKE's ingress-gce L4 controllers over the kube-apiserver fake, after
kubernetes/ingress-gce pkg/l4/controllers: the NetLB controller (l4netlbcontroller.go
syncInternal, ensureInstanceGroups, ensureBackendLinking, garbageCollectRBSNetLB) for RBS
external Services, the L4 ILB controller (l4controller.go processServiceCreateOrUpdate,
linkNEG, processServiceDeletion) for internal Services when GKE subsetting is on, the
instance group controller (pkg/instancegroups/controller.go) and the NEG controller's
syncers (pkg/neg), each through pkg/l4/resources (l4netlb.go EnsureFrontend, l4.go
EnsureInternalLoadBalancer, their Ensure...Deleted) and pkg/l4/healthchecks.

As upstream, a Service is synced when first seen and whenever it changes; the instance groups
on node adds, deletes and status changes; a Service's NEGs when it is synced and whenever a
node's membership verdict flips. A failure is retried on the next pass, as the work queues
would retry it. Which nodes, and when: `nodes`; which nodes a NEG holds: `subsets`.

Left out: dual stack, mixed protocols, deny firewalls, custom subnets and multi-networking,
strong session affinity, logging and weighted load balancing, events and metrics, and the
head start upstream gives the cloud provider on a new internal Service."""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from lbhc.sandbox.cloud_provider import (
    add_finalizer,
    clear_ingress,
    publish_ingress_ip,
    release_finalizers,
)
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake

from .. import names as cp_names
from ..addresses import AddressBook
from ..checks import HealthChecks
from ..compute import ComputeRequestError, ComputeWriter
from ..groups import COMPUTE
from ..netlb import Project
from ..nodes import NodeView
from ..services import Handler, ServiceView, handler
from . import names, shapes
from .backends import Backends
from .nodes import NodeFilter, instance_groups_triggered, list_zones, negs_triggered

log = logging.getLogger(__name__)
Body = dict[str, Any]


class Kind(enum.Enum):
    NETLB = "netlb"  # RBS external: regional EXTERNAL backend service, regional checks
    ILB = "ilb"  # internal with GKE subsetting: INTERNAL backend service, global checks


_FINALIZERS = {
    Kind.NETLB: (names.NETLB_FINALIZER_V2, names.NETLB_FINALIZER_V3),
    Kind.ILB: (names.ILB_FINALIZER_V2,),
}


def kind_of(service: ServiceView, where: Project, legacy_internal_rule: bool) -> Kind | None:
    """Which L4 controller takes the Service: NetLB for an RBS one (the class, annotation or
    finalizers: isRBSBasedService, as the cloud provider leaves it, services.handler); L4
    ILB, with subsetting on, for an internal one the cloud provider does not own
    (shouldProcessService: not the legacy class, no v1 finalizer, no INTERNAL rule named
    like the cloud provider's)."""
    if service.type != "LoadBalancer":
        return None
    if handler(service) is Handler.RBS:
        return Kind.NETLB
    if not where.ilb_subsetting:
        return None
    lb_class = service.load_balancer_class
    if lb_class is not None:
        return Kind.ILB if lb_class == names.ILB_CLASS else None
    internal = any(
        service.annotation(key) in cp_names.INTERNAL_TYPES for key in cp_names.LB_TYPE_ANNOTATIONS
    )
    if not internal or cp_names.ILB_FINALIZER_V1 in service.finalizers or legacy_internal_rule:
        return None
    return Kind.ILB


class IngressGceL4:
    def __init__(
        self,
        kube: KubeFake,
        compute: ComputeFake,
        writer: ComputeWriter,
        where: Project,
        addresses: AddressBook,
    ) -> None:
        self._kube, self._compute, self._w, self._p = kube, compute, writer, where
        self._ips = addresses
        self.namer = names.L4Namer(where.kube_system_uid, where.cluster_id)
        self.backends = Backends(compute, writer, where.project, where.region, self.namer)
        self._checks = HealthChecks(compute, writer, where.project, where.region)
        self._seen: dict[str, tuple[tuple[Any, ...], Kind]] = {}  # uid -> what was ensured
        self._nodes: dict[str, NodeView] | None = None

    def sync(self) -> None:
        nodes = {n.name: n for n in map(NodeView.of, self._kube.objects("Node"))}
        groups_due = instance_groups_triggered(self._nodes, nodes)
        negs_due = negs_triggered(self._nodes, nodes)
        self._nodes = nodes
        listed = list(nodes.values())
        if groups_due:
            try:
                self.backends.sync_groups(listed)
            except Exception:  # the next pass syncs the groups again, as the queue would
                log.warning("ingress-gce: the instance group sync failed", exc_info=True)
                self._nodes = None
        for obj in self._kube.objects("Service"):
            service = ServiceView.of(obj)
            try:
                self._sync(obj, service, listed, negs_due)
            except Exception:  # retried next pass, as the work queues would
                log.warning("ingress-gce: %s failed; retrying", service.key, exc_info=True)
                self._seen.pop(service.uid, None)

    def _sync(
        self, obj: Body, service: ServiceView, nodes: Sequence[NodeView], negs_due: bool
    ) -> None:
        owned = [k for k, fins in _FINALIZERS.items() if any(f in service.finalizers for f in fins)]
        rules = self._compute.forwarding_rules(self._p.project, self._p.region)
        legacy = rules.get(service.lb_name, {}).get("loadBalancingScheme") == "INTERNAL"
        kind = None if service.deleting else kind_of(service, self._p, legacy)
        if kind is None:
            for gone in owned:
                self._delete(obj, service, gone, nodes)
            self._seen.pop(service.uid, None)
            return
        fingerprint = service.fingerprint()
        changed = self._seen.get(service.uid) != (fingerprint, kind)
        if changed or negs_due:
            self._sync_negs(service, kind, nodes)
        if changed:
            self._ensure(obj, service, kind, nodes)
            self._seen[service.uid] = (fingerprint, kind)

    def _uses_negs(self, service: ServiceView, kind: Kind) -> bool:
        """NEG backends: always for an internal LB; for an RBS one only with the v3 finalizer
        (shouldUseNEGBackends, NEGs not the default)."""
        return kind is Kind.ILB or names.NETLB_FINALIZER_V3 in service.finalizers

    def _sync_negs(self, service: ServiceView, kind: Kind, nodes: Sequence[NodeView]) -> None:
        if self._uses_negs(service, kind):
            local = not shapes.shared(service)
            self.backends.sync_negs(service, nodes, kind is Kind.ILB, local)

    # -- syncInternal / processServiceCreateOrUpdate -------------------------------------------

    def _ensure(
        self, obj: Body, service: ServiceView, kind: Kind, nodes: Sequence[NodeView]
    ) -> None:
        negs = self._uses_negs(service, kind)
        finalizer = _FINALIZERS[kind][1 if kind is Kind.NETLB and negs else 0]
        if finalizer not in service.finalizers:  # EnsureServiceFinalizer
            add_finalizer(self._kube, obj, finalizer)
        if kind is Kind.NETLB and not negs:
            self.backends.ensure_groups(nodes)
        regional = kind is Kind.NETLB
        lb_type = names.XLB if regional else names.ILB
        tags = self._p.node_tags  # GetNodeTags of the candidate nodes: every VM carries them
        annotations: dict[str, str] = {}
        wanted_check = shapes.health_check(self.namer, service, lb_type)
        check = self._checks.ensure(wanted_check, regional)
        port = int(wanted_check["httpHealthCheck"]["port"])
        check_firewall = shapes.health_check_firewall(self.namer, service, port, tags)
        self._ensure_firewall(check_firewall, skip_description=shapes.shared(service))
        annotations[names.HEALTHCHECK_KEY] = wanted_check["name"]
        annotations[names.FIREWALL_FOR_HC_KEY] = check_firewall["name"]
        backend = self._ensure_backend_service(service, kind, str(check["selfLink"]))
        annotations[names.BACKEND_SERVICE_KEY] = backend
        rule = self._ensure_rule(service, kind, backend)
        key = (
            names.TCP_FORWARDING_RULE_KEY
            if service.protocol == "TCP"
            else names.UDP_FORWARDING_RULE_KEY
        )
        annotations[key] = rule["name"]
        ip = str(rule["IPAddress"])
        self._ensure_firewall(shapes.nodes_firewall(self.namer, service, ip, tags), False)
        annotations[names.FIREWALL_KEY] = backend
        if negs:  # external: ListZones(Candidate); internal: ...(CandidateAndUnready)
            linked = NodeFilter.CANDIDATE if regional else NodeFilter.CANDIDATE_AND_UNREADY
            self.backends.link_negs(backend, list_zones(nodes, linked))
        else:
            self.backends.link_groups(backend, list_zones(nodes, NodeFilter.ALL))
        if service.ingress_ips != (ip,):
            publish_ingress_ip(self._kube, service.namespace, service.name, ip)
        self._annotate(service, annotations)

    def _ensure_backend_service(self, service: ServiceView, kind: Kind, check_link: str) -> str:
        scheme = "EXTERNAL" if kind is Kind.NETLB else "INTERNAL"
        wanted = shapes.backend_service(self.namer, service, scheme, check_link)
        current = self._backend_service(wanted["name"])
        if current is None:
            self._w.insert("backendServices", wanted)
        elif not shapes.backend_service_equal(wanted, current):
            draining = (current.get("connectionDraining") or {}).get("drainingTimeoutSec", 0)
            if draining and service.protocol == "TCP":  # a raised timeout is kept
                wanted["connectionDraining"] = {"drainingTimeoutSec": draining}
            body = {**wanted, "fingerprint": current["fingerprint"]}
            body["backends"] = current.get("backends", [])  # the linkers' business
            self._w.update("backendServices", wanted["name"], body)
        return str(wanted["name"])

    def _backend_service(self, name: str) -> Body | None:
        return self._compute.backend_services(self._p.project, self._p.region).get(name)

    def _ensure_rule(self, service: ServiceView, kind: Kind, backend: str) -> Body:
        """The forwarding rule, made again (deleted first) when it differs."""
        p = self._p
        link = f"{COMPUTE}projects/{p.project}/regions/{p.region}/backendServices/{backend}"
        if kind is Kind.NETLB:
            name = service.lb_name
        else:
            name = self.namer.forwarding_rule(service.namespace, service.name, service.protocol)
        rules = self._compute.forwarding_rules(p.project, p.region)
        existing = rules.get(name)
        ip = self._ips.ip_for(name, existing, service.ingress_ips)
        if kind is Kind.NETLB:
            wanted = shapes.external_forwarding_rule(service, ip, link)
        else:
            wanted = shapes.internal_forwarding_rule(
                self.namer, service, ip, link, p.project, p.region
            )
        if existing is not None and not shapes.forwarding_rule_equal(existing, wanted):
            self._w.delete("forwardingRules", name)
            existing = None
        if existing is None:
            self._w.insert("forwardingRules", wanted)
        self._ips.release(name)
        made = self._compute.forwarding_rules(p.project, p.region).get(name)
        if made is None:
            raise RuntimeError(f"forwarding rule {name} vanished after it was ensured")
        return made

    def _ensure_firewall(self, wanted: Body, skip_description: bool) -> None:
        current = self._compute.firewalls(self._p.project).get(wanted["name"])
        if current is None:
            self._w.insert("firewalls", wanted)
        elif not shapes.firewall_equal(wanted, current, skip_description):
            self._w.patch("firewalls", wanted["name"], wanted)

    def _annotate(self, service: ServiceView, wanted: Mapping[str, str]) -> None:
        """updateL4ResourcesAnnotations: the L4 keys replaced by the new set."""
        current = dict(service.annotations)
        merged = {k: v for k, v in current.items() if k not in names.RESOURCE_ANNOTATION_KEYS}
        merged.update(wanted)
        if merged == current:
            return
        patch: dict[str, str | None] = {k: None for k in current if k not in merged}
        patch.update(merged)
        self._kube.patch(
            "Service", service.namespace, service.name, {"metadata": {"annotations": patch}}
        )

    # -- garbageCollectRBSNetLB / processServiceDeletion ---------------------------------------

    def _delete(
        self, obj: Body, service: ServiceView, kind: Kind, nodes: Sequence[NodeView]
    ) -> None:
        """Rule, nodes firewall, backend service, both checks and their firewalls, then the
        backends (the groups unless in use; the NEGs), the status, the annotations, and the
        finalizers."""
        if kind is Kind.NETLB:
            rule = service.lb_name
        else:
            rule = self.namer.forwarding_rule(service.namespace, service.name, service.protocol)
        self._w.delete("forwardingRules", rule)
        self._ips.release(rule)
        backend = self.namer.backend(service.namespace, service.name)
        self._w.delete("firewalls", backend)
        try:
            self._w.delete("backendServices", backend)
        except ComputeRequestError as exc:
            if not exc.in_use:
                raise
        regional = kind is Kind.NETLB
        for shared in (True, False):
            self._delete_check(service, shared, regional)
        if kind is Kind.NETLB and names.NETLB_FINALIZER_V3 not in service.finalizers:
            self.backends.delete_groups(nodes)
        else:
            self.backends.delete_negs(service)
        if service.ingress_ips:
            clear_ingress(self._kube, service.namespace, service.name)
        self._annotate(service, {})
        release_finalizers(self._kube, obj, _FINALIZERS[kind])

    def _delete_check(self, service: ServiceView, shared: bool, regional: bool) -> None:
        """deleteHealthCheckWithDualStackFirewalls: the check unless in use; then its
        firewall, which a shared one may delete only once the other scope's shared check
        (internal: regional; external: global) is gone too."""
        name = self.namer.health_check(service.namespace, service.name, shared)
        if not self._checks.delete(name, regional):
            return
        if shared and self._checks.get(name, not regional) is not None:
            return
        firewall = self.namer.health_check_firewall(service.namespace, service.name, shared)
        self._w.delete("firewalls", firewall)
