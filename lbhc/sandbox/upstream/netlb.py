"""What today's GCE cloud provider does for a target-pool load balancer, after
kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer_external.go:
ensureExternalLoadBalancer (with ensureTargetPoolAndHealthCheck, createTargetPoolAndHealthCheck,
ensureHTTPHealthCheck, ensureHTTPHealthCheckFirewall, ensureAllowNodeFirewall),
updateExternalLoadBalancer (the node sync's UpdateLoadBalancer: the pool's instances, through
`pool_hosts`), ensureExternalLoadBalancerDeleted and DeleteExternalTargetPoolAndChecks. RBS
Services are ingress-gce's (`ingress_gce`), internal ones `ilb`'s.

Left out: static address reservation (the IP a recreated rule must keep is held here instead),
the l4-netlb-v1 finalizer ensureExternalLoadBalancer and updateExternalLoadBalancer add (the
service controller's cleanup finalizer is modelled), the deny firewall (its flag is off by
default), network tiers, session affinity (pools get NONE), XPN events.

A Local Service's check probes its healthCheckNodePort, where nothing listens in the sandbox
(KubeProxyFleet.endpoint_for_instance answers only kube-proxy's 10256): every node reads
UNHEALTHY in such a pool, and a pool whose every instance is unhealthy fails open on GCE."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake

from . import names, shapes
from .addresses import AddressBook
from .compute import ComputeRequestError, ComputeWriter
from .pool_hosts import MAX_CREATE_INSTANCES, Cut, PoolHosts
from .services import ServiceView


@dataclass(frozen=True)
class Project:
    project: str
    region: str
    cluster_id: str  # the ingress-uid ConfigMap's uid
    kube_system_uid: str  # ingress-gce names from it
    node_tags: tuple[str, ...]
    # GKE subsetting for internal LBs (the cloud provider's AlphaFeatureILBSubsets gate, and
    # ingress-gce's L4 ILB controller): new internal Services are ingress-gce's, with NEGs.
    ilb_subsetting: bool = False
    # The cloud provider's AlphaFeatureSkipIGsManagement gate (gce_alpha.go: it "enabled L4
    # Regional Backend Services and disables instance group management in service
    # controller"): its internal LBs link the k8s-ig-- groups ingress-gce keeps.
    skip_igs_management: bool = False

    @property
    def zone(self) -> str:
        """Where a node without a providerID is taken to be."""
        return f"{self.region}-a"

    @property
    def nodes_check(self) -> str:
        return names.nodes_health_check_name(self.cluster_id)

    @property
    def nodes_check_firewall(self) -> str:
        return names.health_check_firewall_name(self.cluster_id, self.nodes_check, True)


@dataclass(frozen=True)
class Recreation:
    """A pool and forwarding rule deleted, to be made again, for a traffic policy change
    (recorded once the old pool is gone; the new rule follows within the same ensure, or
    the next pass's if a step failed)."""

    service: str  # namespace/name
    pool: str
    ip: str  # the forwarding rule's, the same before and after
    old_checks: tuple[str, ...]  # the checks the old pool carried (names)
    new_check: str  # the check the new pool carries
    traffic_policy: str


def wanted_health_check(service: ServiceView, where: Project) -> dict[str, Any]:
    """The check ensureExternalLoadBalancer wants on the Service's pool: a Local Service's
    own (named like its load balancer, on its healthCheckNodePort), else the nodes check."""
    path, port = service.health_check_path_port()
    if path:
        return shapes.http_health_check(service.lb_name, path, port)
    return shapes.http_health_check(
        where.nodes_check, names.NODES_HEALTH_CHECK_PATH, names.NODES_HEALTH_CHECK_PORT
    )


def traffic_firewall(service: ServiceView, ip: str, node_tags: tuple[str, ...]) -> dict[str, Any]:
    """ensureAllowNodeFirewall's rule: the Service's ports from its source ranges (anywhere
    by default) to its load balancer's IP."""
    return shapes.firewall(
        names.firewall_name(service.lb_name),
        names.firewall_description(service.key, ip),
        ip,
        service.source_ranges or ("0.0.0.0/0",),
        service.protocol,
        service.port_numbers,
        node_tags,
    )


def check_firewall(
    service: ServiceView, check: dict[str, Any], ip: str, where: Project
) -> dict[str, Any]:
    """ensureHTTPHealthCheckFirewall's rule for the check the Service's pool carries: the
    nodes check's shared one, or a Local Service's own."""
    return shapes.health_check_firewall(
        where.cluster_id,
        check["name"],
        check["name"] == where.nodes_check,
        service.key,
        ip,
        check["port"],
        where.node_tags,
    )


class ExternalLoadBalancers:
    def __init__(
        self,
        compute: ComputeFake,
        writer: ComputeWriter,
        where: Project,
        addresses: AddressBook | None = None,
    ) -> None:
        self._compute, self._w, self._p = compute, writer, where
        self.recreations: list[Recreation] = []
        self.deleted_pools: list[str] = []
        self._ips = addresses or AddressBook(compute, where.project, where.region)
        self._hosts = PoolHosts(compute, writer, where.project, where.region)

    @property
    def cuts(self) -> list[Cut]:
        """Nodes taken out of pools (removeInstance), in order."""
        return list(self._hosts.cuts)

    # -- reads (the fake's own state: no journal entries) ------------------------------------

    def _rules(self) -> dict[str, dict[str, Any]]:
        return self._compute.forwarding_rules(self._p.project, self._p.region)

    def _check(self, name: str) -> dict[str, Any] | None:
        return self._compute.http_health_checks(self._p.project).get(name)

    def _firewall(self, name: str) -> dict[str, Any] | None:
        return self._compute.firewalls(self._p.project).get(name)

    # -- ensureExternalLoadBalancer ---------------------------------------------------------

    def ensure(self, service: ServiceView, hosts: list[str]) -> str:
        """Make or repair the Service's load balancer; returns its IP."""
        if not hosts:
            raise RuntimeError("cannot EnsureLoadBalancer() with no hosts")
        lb = service.lb_name
        rule = self._rules().get(lb)
        pool = self._compute.target_pools(self._p.project, self._p.region).get(lb)
        port_range = shapes.load_balancer_port_range(service.port_numbers)
        rule_needs_update = rule is None or (rule.get("portRange"), rule.get("IPProtocol")) != (
            port_range,
            service.protocol,
        )
        ip = self._ips.ip_for(lb, rule, ())
        self._ensure_traffic_firewall(service, ip)

        # Which check the pool has is judged by whether one named like the load balancer
        # exists (hcLocalTrafficExisting), not by what the pool carries.
        needs_recreation = pool is None
        to_delete: str | None = None
        wanted = wanted_health_check(service, self._p)
        local_existing = self._check(lb) is not None
        if wanted["name"] == lb and not local_existing:  # Cluster -> Local
            to_delete, needs_recreation = self._p.nodes_check, True
        elif wanted["name"] != lb and local_existing:  # Local -> Cluster
            to_delete, needs_recreation = lb, True

        if rule is not None and (rule_needs_update or needs_recreation):
            self._w.delete("forwardingRules", lb)
        if pool is not None and needs_recreation:
            self.delete_pool_and_checks(lb, [to_delete] if to_delete else [])
            old = tuple(str(url).rsplit("/", 1)[-1] for url in pool.get("healthChecks", []))
            self.recreations.append(
                Recreation(service.key, lb, ip, old, wanted["name"], service.traffic_policy)
            )
        if needs_recreation:
            self._ensure_check_firewall(service, wanted, ip)
            check = self._ensure_check(wanted)
            self._create_pool(service, hosts[:MAX_CREATE_INSTANCES], check["selfLink"])
            if len(hosts) > MAX_CREATE_INSTANCES:  # created with the first; the rest added
                self._hosts.update(lb, hosts)
        else:  # the tpExists branch: never touches the pool's checks, ensures the wanted one
            self._hosts.update(lb, hosts)  # "Ensure hosts are updated even if ..."
            self._ensure_check(wanted)
            self._ensure_check_firewall(service, wanted, ip)
        if needs_recreation or rule_needs_update:
            target = str(
                self._compute.target_pools(self._p.project, self._p.region)[lb]["selfLink"]
            )
            body = shapes.forwarding_rule(
                lb, service.key, ip, service.protocol, service.port_numbers, target
            )
            self._insert("forwardingRules", body)
        self._ips.release(lb)
        return ip

    # -- updateExternalLoadBalancer ---------------------------------------------------------

    def update(self, service: ServiceView, hosts: list[str]) -> None:
        """The node sync's UpdateLoadBalancer: the pool's instances brought to `hosts` (which
        may be none: upstream then empties the pool)."""
        self._hosts.update(service.lb_name, hosts)

    def _insert(self, collection: str, body: dict[str, Any]) -> None:
        """Insert; alreadyExists is success, as upstream's create* calls take it."""
        try:
            self._w.insert(collection, body)
        except ComputeRequestError as exc:
            if not exc.already_exists:
                raise

    def _create_pool(self, service: ServiceView, hosts: list[str], check_url: str) -> None:
        body = shapes.target_pool(service.lb_name, service.key, hosts, [check_url])
        self._insert("targetPools", body)

    def _ensure_check(self, wanted: dict[str, Any]) -> dict[str, Any]:
        """ensureHTTPHealthCheck: create if missing; if drifted, update with timings merged
        raise-only (mergeHTTPHealthChecks)."""
        current = self._check(wanted["name"])
        if current is None:
            self._insert("httpHealthChecks", wanted)
        elif shapes.health_check_needs_update(current, wanted):
            self._w.update(
                "httpHealthChecks", wanted["name"], shapes.merged_health_check(current, wanted)
            )
        check = self._check(wanted["name"])
        if check is None:
            raise RuntimeError(f"health check {wanted['name']} vanished after it was ensured")
        return check

    def _ensure_check_firewall(self, service: ServiceView, check: dict[str, Any], ip: str) -> None:
        wanted = check_firewall(service, check, ip, self._p)
        current = self._firewall(wanted["name"])
        if current is None:
            self._insert("firewalls", wanted)
        elif shapes.health_check_firewall_drifted(current, wanted):
            self._w.patch("firewalls", wanted["name"], wanted)

    def _ensure_traffic_firewall(self, service: ServiceView, ip: str) -> None:
        """ensureAllowNodeFirewall (firewallNeedsUpdate, in short: any difference)."""
        wanted = traffic_firewall(service, ip, self._p.node_tags)
        current = self._firewall(wanted["name"])
        if current is None:
            self._insert("firewalls", wanted)
        elif any(
            current.get(k) != wanted[k] for k in ("description", "allowed", "destinationRanges")
        ) or set(current.get("sourceRanges") or []) != set(wanted["sourceRanges"]):
            self._w.patch("firewalls", wanted["name"], wanted)

    # -- ensureExternalLoadBalancerDeleted ----------------------------------------------------

    def ensure_deleted(self, service: ServiceView) -> None:
        """Rule, then pool, then checks and their firewalls; a Cluster Service tries both its
        own check and the nodes check (it cannot know which it had), a Local one its own if it
        exists. Upstream runs the traffic firewall's delete concurrently; here it goes last."""
        lb = service.lb_name
        path, _ = service.health_check_path_port()
        if path:
            checks = [lb] if self._check(lb) is not None else []
        else:
            checks = [lb, self._p.nodes_check]
        self._w.delete("forwardingRules", lb)
        if self.delete_pool_and_checks(lb, checks):
            self.deleted_pools.append(lb)
        self._w.delete("firewalls", names.firewall_name(lb))
        self._ips.release(lb)

    def delete_pool_and_checks(self, lb: str, checks: list[str]) -> bool:
        """DeleteExternalTargetPoolAndChecks: the pool, then each check; a check another pool
        still uses is refused as in use and kept, with its firewall; a check deleted or
        already gone has its firewall deleted. True if the pool existed."""
        existed = self._w.delete("targetPools", lb)
        for name in checks:
            nodes = name != lb
            try:
                self._w.delete("httpHealthChecks", name)
            except ComputeRequestError as exc:
                if exc.in_use:
                    continue
                raise
            self._w.delete(
                "firewalls", names.health_check_firewall_name(self._p.cluster_id, name, nodes)
            )
        return existed
