"""The part of the cloud provider's service controller lbhc lives alongside, in one of two
profiles (SandboxSpec.cloud_provider):

- "legacy": a target pool (without a check) and forwarding rule for each new LoadBalancer
  Service, and, when one is deleted, its rule then its pool removed through the Compute API
  before the cleanup finalizer is released.
- "current": today's GCE cloud provider (lbhc.sandbox.upstream): pools made with the nodes
  check or a Local Service's own, firewalls for them, recreation on a traffic policy change,
  checks and firewalls removed with the last pool using them, and pools' instances updated on
  a node sync (a node added or deleted, or labelled in or out of load balancers), which cuts
  the nodes tainted or being deleted since the last one (`cuts`); its own internal load
  balancers (upstream.ilb); and, in the same loop, GKE's ingress-gce L4 controllers
  (upstream.ingress_gce) for RBS Services and, under GKE subsetting, new internal ones.
  Each pass first gives every new Node its VM (node_vms), then runs ingress-gce, whose
  instance group controller keeps the k8s-ig-- groups the cloud provider's internal LBs
  link (SkipIGsManagement), then the cloud provider."""

from __future__ import annotations

import logging
import threading

from lbhc.model.cluster import Node, Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.cloud_provider import (
    provision_load_balancers,
    publish_ingress,
    release_finalizers,
)
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.node_vms import NodeVms
from lbhc.sandbox.seed import LB_CLEANUP_FINALIZER
from lbhc.sandbox.upstream.addresses import AddressBook
from lbhc.sandbox.upstream.compute import INGRESS_GCE_USER_AGENT, ComputeWriter
from lbhc.sandbox.upstream.controller import CurrentServiceController
from lbhc.sandbox.upstream.ilb import InternalLoadBalancers
from lbhc.sandbox.upstream.ingress_gce.controller import IngressGceL4
from lbhc.sandbox.upstream.netlb import ExternalLoadBalancers, Project, Recreation
from lbhc.sandbox.upstream.pool_hosts import Cut

log = logging.getLogger(__name__)


class ServiceControllerEmulator:
    def __init__(
        self,
        kube: KubeFake,
        compute: ComputeFake,
        compute_url: str,
        project: str,
        region: str,
        *,
        provider: Project | None,
        period: float = 0.2,
    ) -> None:
        """`provider`: today's GCE cloud provider's configuration (the "current" profile), or
        None for the "legacy" one."""
        self._kube, self._compute = kube, compute
        # Both profiles write through it: journaled under the cloud provider's User-Agent.
        self._writer = ComputeWriter(compute_url, project, region)
        self._project, self._region, self._period = project, region, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="service-controller", daemon=True)
        self._legacy_deleted: list[str] = []
        self.passes = 0  # passes finished (failed or not), for tests to wait on
        self._current: CurrentServiceController | None = None
        self.ingress_gce: IngressGceL4 | None = None
        self._vms: NodeVms | None = None
        self._ingress_writer: ComputeWriter | None = None
        if provider is not None:
            addresses = AddressBook(compute, project, region)
            lbs = ExternalLoadBalancers(compute, self._writer, provider, addresses)
            ilbs = InternalLoadBalancers(compute, self._writer, provider, addresses)
            self._current = CurrentServiceController(kube, lbs, ilbs, project, provider.zone)
            self._ingress_writer = ComputeWriter(
                compute_url, project, region, user_agent=INGRESS_GCE_USER_AGENT
            )
            self.ingress_gce = IngressGceL4(
                kube, compute, self._ingress_writer, provider, addresses
            )
            self._vms = NodeVms(kube, compute, provider.node_tags)

    @property
    def deleted_pools(self) -> list[str]:
        """Pools deleted with their Service, in order (not those deleted to be recreated)."""
        if self._current is not None:
            return list(self._current.lbs.deleted_pools)
        return list(self._legacy_deleted)

    @property
    def recreations(self) -> list[Recreation]:
        """Pools and rules recreated for a traffic policy change (current profile only)."""
        return [] if self._current is None else list(self._current.lbs.recreations)

    @property
    def cuts(self) -> list[Cut]:
        """Nodes the cloud provider took out of pools, (node, pool, time.time()) in order:
        on a node sync, or a Service's ensure, after the node left the stable node set
        (current profile only; the legacy one never updates a pool's instances)."""
        return [] if self._current is None else self._current.lbs.cuts

    @property
    def group_cuts(self) -> list[Cut]:
        """Nodes taken out of the shared instance groups (node, group, time.time()), in
        order, by the cloud provider's internal LBs or by ingress-gce (current profile)."""
        if self._current is None or self.ingress_gce is None:
            return []
        both = self._current.ilbs.groups.cuts + self.ingress_gce.backends.groups.cuts
        return sorted(both, key=lambda cut: cut.at)

    def start(self) -> ServiceControllerEmulator:
        """The first pass runs before this returns: the cloud provider was running before the
        sandbox is handed over, so what it does on a start (every Service ensured, with the
        nodes of that moment) is over before a test or the demo changes anything."""
        self._pass()
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(10)
        self._writer.close()
        if self._ingress_writer is not None:
            self._ingress_writer.close()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self._pass()

    def _pass(self) -> None:
        try:
            self.sync()
        except Exception:
            log.exception("service controller emulator pass failed")
        self.passes += 1

    def sync(self) -> None:
        if self._current is None:
            self._sync_legacy()
            return
        if self._vms is not None:
            self._vms.ensure()
        if self.ingress_gce is not None:  # first: it keeps the groups the provider links
            self.ingress_gce.sync()
        self._current.sync()

    # -- legacy ---------------------------------------------------------------------------------

    def _sync_legacy(self) -> None:
        pools = self._compute.target_pools(self._project, self._region)
        nodes = [Node.model_validate(n) for n in self._kube.objects("Node")]
        for obj in self._kube.objects("Service"):
            service = Service.model_validate(obj)
            if service.spec.type != "LoadBalancer" or service.spec.load_balancer_class:
                continue
            name = target_pool_name(service.metadata.uid)
            if service.metadata.deletion_timestamp:
                self._delete_load_balancer(name, name in pools)
                release_finalizers(self._kube, obj, [LB_CLEANUP_FINALIZER])
            elif name not in pools:
                provision_load_balancers(
                    self._compute, self._project, self._region, [service], nodes
                )
                publish_ingress(self._kube, self._compute, self._project, self._region, service)

    def _delete_load_balancer(self, name: str, exists: bool) -> None:
        """Rule first: a pool a rule still points at cannot be deleted."""
        if not exists:
            return
        self._writer.delete("forwardingRules", name)
        self._writer.delete("targetPools", name)
        self._legacy_deleted.append(name)
