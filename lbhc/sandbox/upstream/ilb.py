"""The cloud provider's own internal passthrough load balancer, after
kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer_internal.go (gates:
AlphaFeatureILBSubsets, AlphaFeatureSkipIGsManagement, gce_alpha.go):
ensureInternalLoadBalancer (with ensureInternalInstanceGroups, ensureInternalHealthCheck,
ensureInternalBackendService, ensureInternalForwardingRule, ensureInternalFirewalls),
updateInternalLoadBalancer (the node sync: instance groups and the backend service's
groups) and ensureInternalLoadBalancerDeleted.

What it makes for a Service: the shared instance groups k8s-ig--<cluster id> (one per zone
of the nodes the service controller passes, its stableNodeSetPredicates set; under
SkipIGsManagement, which goes with RBS, it only links the groups ingress-gce keeps), a GLOBAL
non-legacy HTTP check k8s-<cluster id>-node for externalTrafficPolicy Cluster (the legacy
target-pool check's name, another resource type) or one named like the load balancer on the
healthCheckNodePort for Local, its firewall k8s-<cluster id>-node-hc (no destination
ranges), a regional INTERNAL backend service named like the load balancer ("a" + UID) and
described with the Service's name, without connection draining, a forwarding rule of that
name, and the traffic firewall k8s-fw-<lb> pinned to the rule's IP.

Left out: shared backend services (the backend-share annotation), clearing a previous
backend service or check (clearPreviousInternalResources), global access and custom
subnets, static address reservation (the `addresses` book stands in), XPN events, the
legacy-name traffic firewall (only deleted, as upstream deletes it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake

from . import names
from .addresses import AddressBook
from .checks import HealthChecks, Timings, http_check
from .compute import ComputeRequestError, ComputeWriter
from .groups import COMPUTE, InstanceGroups, group_url
from .netlb import Project
from .nodes import NodeView
from .services import ServiceView
from .shapes import port_ranges

Body = dict[str, Any]
MAX_PORTS = 5  # maxL4ILBPorts: more take allPorts
_TIMINGS = Timings(
    names.CHECK_INTERVAL_SEC, names.TIMEOUT_SEC, names.HEALTHY_THRESHOLD, names.UNHEALTHY_THRESHOLD
)


def handles(service: ServiceView, where: Project, rule_exists: bool) -> bool:
    """ensureInternalLoadBalancer's opening test: a Service with neither the rule nor the v1
    finalizer nor the legacy internal class is another controller's when it has another
    class, when GKE subsetting is on (AlphaFeatureILBSubsets) or when it has ingress-gce's
    v2 finalizer."""
    legacy_class = service.load_balancer_class == names.LEGACY_INTERNAL_CLASS
    if rule_exists or names.ILB_FINALIZER_V1 in service.finalizers or legacy_class:
        return True
    if service.load_balancer_class is not None or where.ilb_subsetting:
        return False
    return names.ILB_FINALIZER_V2 not in service.finalizers


def handles_existing(service: ServiceView, where: Project) -> bool:
    """updateInternalLoadBalancer's and ensureInternalLoadBalancerDeleted's test."""
    legacy_class = service.load_balancer_class == names.LEGACY_INTERNAL_CLASS
    if where.ilb_subsetting and names.ILB_FINALIZER_V1 not in service.finalizers:
        return legacy_class
    return service.load_balancer_class is None or legacy_class


def firewall(
    name: str,
    description: str,
    ip: str,
    sources: Sequence[str],
    ports: Sequence[str],
    protocol: str,
    node_tags: Sequence[str],
) -> Body:
    """ensureInternalFirewall's expected rule (priority left to the API's 1000)."""
    body: Body = {
        "name": name,
        "network": "global/networks/default",
        "sourceRanges": list(sources),
        "targetTags": list(node_tags),
        "allowed": [{"IPProtocol": protocol.lower(), "ports": list(ports)}],
    }
    if description:
        body["description"] = description
    if ip:
        body["destinationRanges"] = [ip]
    return body


def firewall_equal(current: Body, wanted: Body) -> bool:
    """firewallRuleEqual."""
    have, want = current.get("allowed") or [], wanted["allowed"]
    return (
        current.get("description", "") == wanted.get("description", "")
        and len(have) == 1
        and have[0].get("IPProtocol") == want[0]["IPProtocol"]
        and set(have[0].get("ports") or []) == set(want[0]["ports"])
        and all(
            set(current.get(k) or []) == set(wanted.get(k) or [])
            for k in ("sourceRanges", "destinationRanges", "targetTags")
        )
    )


def _path(url: str) -> str:
    return url[url.find("projects/") :] if "projects/" in url else url


class InternalLoadBalancers:
    def __init__(
        self, compute: ComputeFake, writer: ComputeWriter, where: Project, addresses: AddressBook
    ) -> None:
        self._compute, self._w, self._p, self._ips = compute, writer, where, addresses
        self.groups = InstanceGroups(compute, writer, where.project)
        self._checks = HealthChecks(compute, writer, where.project, where.region)

    @property
    def where(self) -> Project:
        return self._p

    @property
    def group_name(self) -> str:
        return names.instance_group_name(self._p.cluster_id)

    def rule(self, service: ServiceView) -> Body | None:
        return self._compute.forwarding_rules(self._p.project, self._p.region).get(service.lb_name)

    def _backend_service(self, name: str) -> Body | None:
        return self._compute.backend_services(self._p.project, self._p.region).get(name)

    # -- ensureInternalLoadBalancer -----------------------------------------------------------

    def ensure(self, service: ServiceView, nodes: Sequence[NodeView]) -> str:
        """Make or repair the Service's internal load balancer; returns its IP. The caller
        has checked `handles` and added the v1 finalizer (addFinalizer)."""
        if service.protocol not in ("TCP", "UDP"):
            raise RuntimeError(
                f"Invalid protocol {service.protocol}, only TCP and UDP are supported"
            )
        lb, p = service.lb_name, self._p
        group_links = self._ensure_groups(nodes)
        shared = not service.health_check_path_port()[0]
        path, port = service.health_check_path_port()
        if shared:
            path, port = names.NODES_HEALTH_CHECK_PATH, names.NODES_HEALTH_CHECK_PORT
        check_name = names.internal_health_check_name(lb, p.cluster_id, shared)
        description = "" if shared else names.health_check_description(service.key)
        check = self._checks.ensure(
            http_check(check_name, port, path, description, _TIMINGS), regional=False
        )
        existing = self.rule(service)
        ip = self._ips.ip_for(lb, existing, service.ingress_ips)
        wanted = self._forwarding_rule(service, ip)
        deleted = False
        if existing is not None and not _rules_equal(existing, wanted):
            self._w.delete("forwardingRules", lb)
            deleted = True
        self._ensure_backend_service(service, group_links, str(check["selfLink"]))
        if deleted or existing is None:
            self._w.insert("forwardingRules", wanted)
        self._ensure_firewalls(service, ip, port, shared)
        self._ips.release(lb)
        return ip

    def _ensure_groups(self, nodes: Sequence[NodeView]) -> list[str]:
        """ensureInternalInstanceGroups: a group per zone of the nodes, holding them; nodes
        whose zone is not known are never removed. Under AlphaFeatureSkipIGsManagement, the
        groups whose name starts with the group name in those zones, as they are
        (FilterInstanceGroupsByNamePrefix): ingress-gce keeps them."""
        zoned: dict[str, list[str]] = {}
        for node in nodes:
            zoned.setdefault(node.zone, []).append(node.name)
        unknown = zoned.pop("", [])
        links = []
        for zone, members in sorted(zoned.items()):
            if self._p.skip_igs_management:
                found = self._compute.instance_groups(self._p.project, zone).values()
                names_ = sorted(g["name"] for g in found if g["name"].startswith(self.group_name))
                links += [group_url(self._p.project, zone, n) for n in names_]
                continue
            links.append(self.groups.ensure(self.group_name, zone))
            self.groups.sync(self.group_name, zone, members, unknown)
        return links

    def _forwarding_rule(self, service: ServiceView, ip: str) -> Body:
        ports = [str(port) for port in service.port_numbers]
        p = self._p
        body: Body = {
            "name": service.lb_name,
            "description": names.service_description(service.key),
            "IPAddress": ip,
            "backendService": self._backend_service_link(service.lb_name),
            "IPProtocol": service.protocol,
            "loadBalancingScheme": "INTERNAL",
            "network": "global/networks/default",
            "subnetwork": f"projects/{p.project}/regions/{p.region}/subnetworks/default",
        }
        if len(ports) > MAX_PORTS:
            body["allPorts"] = True
        else:
            body["ports"] = ports
        return body

    def _backend_service_link(self, name: str) -> str:
        return (
            f"{COMPUTE}projects/{self._p.project}/regions/{self._p.region}/backendServices/{name}"
        )

    def _ensure_backend_service(
        self, service: ServiceView, group_links: list[str], check_link: str
    ) -> None:
        """ensureInternalBackendService: created, or updated (with its fingerprint) when a
        field backendSvcEqual compares differs."""
        wanted: Body = {
            "name": service.lb_name,
            "protocol": service.protocol,
            "description": names.backend_service_description(service.key),
            "healthChecks": [check_link],
            "backends": [{"group": link} for link in group_links],
            "sessionAffinity": "NONE",
            "loadBalancingScheme": "INTERNAL",
        }
        current = self._backend_service(service.lb_name)
        if current is None:
            self._w.insert("backendServices", wanted)
        elif not _backend_services_equal(current, wanted):
            self._w.update(
                "backendServices",
                service.lb_name,
                {**wanted, "fingerprint": current["fingerprint"]},
            )

    def _ensure_firewalls(self, service: ServiceView, ip: str, port: int, shared: bool) -> None:
        """ensureInternalFirewalls: the traffic rule to the rule's IP, then the check's."""
        p, tags = self._p, self._p.node_tags
        ports = [str(n) for n in service.port_numbers]
        self._ensure_firewall(
            firewall(
                names.firewall_name(service.lb_name),
                names.firewall_description(service.key, ip),
                ip,
                service.source_ranges or ("0.0.0.0/0",),
                _port_ranges(ports),
                service.protocol,
                tags,
            )
        )
        check_firewall = names.internal_health_check_firewall_name(
            service.lb_name, p.cluster_id, shared
        )
        self._ensure_firewall(
            firewall(
                check_firewall, "", "", names.HEALTH_CHECK_SOURCE_RANGES, [str(port)], "TCP", tags
            )
        )

    def _ensure_firewall(self, wanted: Body) -> None:
        current = self._compute.firewalls(self._p.project).get(wanted["name"])
        if current is None:
            self._w.insert("firewalls", wanted)
        elif not firewall_equal(current, wanted):
            self._w.patch("firewalls", wanted["name"], wanted)

    # -- updateInternalLoadBalancer ------------------------------------------------------------

    def update(self, service: ServiceView, nodes: Sequence[NodeView]) -> None:
        """The node sync: the groups, then the backend service's groups if they differ."""
        links = self._ensure_groups(nodes)
        current = self._backend_service(service.lb_name)
        if current is None:
            raise ComputeRequestError(404, "notFound", f"backend service {service.lb_name}")
        have = {_path(b["group"]) for b in current.get("backends", [])}
        if have != {_path(link) for link in links}:
            body = {k: v for k, v in current.items() if k in _UPDATABLE}
            body["backends"] = [{"group": link} for link in links]
            self._w.update("backendServices", service.lb_name, body)

    # -- ensureInternalLoadBalancerDeleted -----------------------------------------------------

    def ensure_deleted(self, service: ServiceView) -> None:
        """Rule, backend service (in use or gone: fine), traffic firewalls, the check and its
        firewall unless another backend service uses the check, the groups unless in use."""
        lb, p = service.lb_name, self._p
        self._ips.release(lb)
        self._w.delete("forwardingRules", lb)
        try:
            self._w.delete("backendServices", lb)
        except ComputeRequestError as exc:
            if not exc.in_use:
                raise
        self._w.delete("firewalls", names.firewall_name(lb))
        self._w.delete("firewalls", lb)
        shared = not service.health_check_path_port()[0]
        check = names.internal_health_check_name(lb, p.cluster_id, shared)
        if self._checks.delete(check, regional=False):
            self._w.delete("firewalls", f"{check}-hc")  # makeHealthCheckFirewallNameFromHC
        if self._p.skip_igs_management:
            return
        for zone in sorted(self._group_zones()):
            self.groups.delete(self.group_name, zone)

    def _group_zones(self) -> set[str]:
        """The zones holding the group (upstream tries every zone of the region)."""
        found = set()
        for group in self._compute.all_resources("instanceGroups"):
            if (
                group["name"] == self.group_name
                and f"/projects/{self._p.project}/" in group["selfLink"]
            ):
                found.add(str(group["zone"]).rsplit("/", 1)[-1])
        return found


_UPDATABLE = (
    "name",
    "protocol",
    "description",
    "healthChecks",
    "backends",
    "sessionAffinity",
    "loadBalancingScheme",
    "fingerprint",
    "connectionDraining",
    "timeoutSec",
)


def _port_ranges(ports: Sequence[str]) -> list[str]:
    """getPortsAndProtocol's portRanges (getPortRanges)."""
    return port_ranges(int(p) for p in ports)


def _rules_equal(current: Body, wanted: Body) -> bool:
    """forwardingRulesEqual."""
    return (
        current.get("IPAddress") == wanted["IPAddress"]
        and current.get("IPProtocol") == wanted["IPProtocol"]
        and current.get("loadBalancingScheme") == wanted["loadBalancingScheme"]
        and set(current.get("ports") or []) == set(wanted.get("ports") or [])
        and bool(current.get("allPorts")) == bool(wanted.get("allPorts"))
        and _path(str(current.get("backendService"))) == _path(wanted["backendService"])
        and _path(str(current.get("subnetwork", ""))) == _path(wanted["subnetwork"])
    )


def _backend_services_equal(current: Body, wanted: Body) -> bool:
    """backendSvcEqual."""
    return (
        all(current.get(k) == wanted[k] for k in ("protocol", "sessionAffinity"))
        and current.get("description", "") == wanted["description"]
        and current.get("loadBalancingScheme") == wanted["loadBalancingScheme"]
        and {_path(c) for c in current.get("healthChecks", [])}
        == {_path(c) for c in wanted["healthChecks"]}
        and {_path(b["group"]) for b in current.get("backends", [])}
        == {_path(b["group"]) for b in wanted["backends"]}
    )
