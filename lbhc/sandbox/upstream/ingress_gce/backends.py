"""The backends of ingress-gce's L4 backend services: the shared instance groups and the
per-Service GCE_VM_IP NEGs, and their links into a backend service.

- Instance groups: pkg/instancegroups/manager.go (EnsureInstanceGroupsAndPorts, Sync,
  DeleteInstanceGroup) and controller.go (its sync: every node CandidateNodesFilter selects,
  the zones of every node), through the `groups` module shared with the cloud provider.
- NEGs: pkg/neg/syncers (ensureNetworkEndpointGroup: one NEG per zone named like the backend
  service; the transaction syncer attaching and detaching endpoints to reach the
  calculator's subsets, `subsets`), and the NEG controller's garbage collection once the
  Service is gone.
- Links: pkg/l4/backends/regional_ig_linker.go (the groups of the given zones, no others) and
  neg_linker.go (the NEGs of the given zones merged into the backends, CONNECTION mode)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake

from ..compute import ComputeRequestError, ComputeWriter
from ..groups import COMPUTE, InstanceGroups, group_url
from ..nodes import NodeView
from ..services import ServiceView
from . import names, subsets
from .nodes import NodeFilter, by_zone, list_nodes, list_zones

Body = dict[str, Any]


def neg_url(project: str, zone: str, name: str) -> str:
    return f"{COMPUTE}projects/{project}/zones/{zone}/networkEndpointGroups/{name}"


def _path(url: str) -> str:
    return url[url.find("projects/") :] if "projects/" in url else url


class Backends:
    def __init__(
        self,
        compute: ComputeFake,
        writer: ComputeWriter,
        project: str,
        region: str,
        namer: names.L4Namer,
    ) -> None:
        self._compute, self._w = compute, writer
        self._project, self._region, self._namer = project, region, namer
        self.groups = InstanceGroups(compute, writer, project)

    # -- instance groups -------------------------------------------------------------------

    def groups_exist(self, nodes: Iterable[NodeView]) -> bool:
        """InstanceGroupsExist: the group is in every zone of the nodes."""
        name = self._namer.instance_group
        return all(self.groups.exists(name, z) for z in list_zones(nodes, NodeFilter.ALL))

    def ensure_groups(self, nodes: Sequence[NodeView]) -> None:
        """ensureInstanceGroups of the NetLB controller: when a zone lacks the group, create
        the missing ones (EnsureInstanceGroupsAndPorts) and Sync them."""
        if self.groups_exist(nodes):
            return
        for zone in list_zones(nodes, NodeFilter.ALL):
            self.groups.ensure(self._namer.instance_group, zone)
        self.sync_groups(nodes)

    def sync_groups(self, nodes: Sequence[NodeView]) -> None:
        """manager.Sync(CandidateNodesFilter nodes): each zone's group brought to its nodes;
        a zone whose group does not exist (404) ends the sync quietly, as upstream's does."""
        name = self._namer.instance_group
        zoned = by_zone(list_nodes(nodes, NodeFilter.CANDIDATE))
        for zone in list_zones(nodes, NodeFilter.ALL):
            zoned.setdefault(zone, [])
        unknown = [n.name for n in zoned.pop("", [])]
        for zone, members in sorted(zoned.items()):
            try:
                self.groups.sync(name, zone, [n.name for n in members], unknown)
            except ComputeRequestError as exc:
                if exc.not_found:
                    return
                raise

    def delete_groups(self, nodes: Iterable[NodeView]) -> None:
        """DeleteInstanceGroup: in every zone of the nodes; in use or gone is fine."""
        for zone in list_zones(nodes, NodeFilter.ALL):
            self.groups.delete(self._namer.instance_group, zone)

    def link_groups(self, backend: str, zones: Iterable[str]) -> None:
        """RegionalInstanceGroupLinker.Link: exactly the groups of `zones`."""
        wanted = [group_url(self._project, z, self._namer.instance_group) for z in zones]
        self._link(backend, wanted, replace=True)

    # -- NEGs ------------------------------------------------------------------------------

    def _negs(self, zone: str) -> dict[str, Body]:
        return self._compute.network_endpoint_groups(self._project, zone)

    def sync_negs(
        self, service: ServiceView, nodes: Sequence[NodeView], internal: bool, local: bool
    ) -> None:
        """One NEG syncer pass: a NEG per zone, each holding its zone's subset."""
        name = self._namer.backend(service.namespace, service.name)
        zones = list_zones(nodes, NodeFilter.CANDIDATE_AND_UNREADY)
        current = {z: self._endpoints(z, name) for z in zones if name in self._negs(z)}
        wanted = subsets.neg_members(
            nodes,
            subsets.salt(service.namespace, service.name),
            internal,
            local,
            {z: sorted(e) for z, e in current.items()},
        )
        ips = {n.name: n.internal_ip for n in nodes}
        for zone in sorted(wanted):
            self._ensure_neg(service, name, zone)
            have = current.get(zone, {})
            detach = sorted(set(have) - set(wanted[zone]))
            attach = sorted(set(wanted[zone]) - set(have))
            if detach:
                body = [{"instance": n, "ipAddress": have[n]} for n in detach]
                self._w.call(
                    "networkEndpointGroups",
                    name,
                    "detachNetworkEndpoints",
                    {"networkEndpoints": body},
                    zone=zone,
                )
            if attach:
                body = [_endpoint(n, ips.get(n, "")) for n in attach]
                self._w.call(
                    "networkEndpointGroups",
                    name,
                    "attachNetworkEndpoints",
                    {"networkEndpoints": body},
                    zone=zone,
                )

    def _endpoints(self, zone: str, name: str) -> dict[str, str]:
        """Node name -> endpoint IP of a NEG."""
        listed = self._compute.network_endpoints(self._project, zone, name)
        return {str(e["instance"]): str(e["ipAddress"]) for e in listed}

    def _ensure_neg(self, service: ServiceView, name: str, zone: str) -> None:
        """ensureNetworkEndpointGroup: created if missing."""
        if name in self._negs(zone):
            return
        body = {
            "name": name,
            "networkEndpointType": "GCE_VM_IP",
            "network": f"projects/{self._project}/global/networks/default",
            "subnetwork": (f"projects/{self._project}/regions/{self._region}/subnetworks/default"),
            "description": names.neg_description(
                self._namer.kube_system_uid, service.namespace, service.name
            ),
        }
        self._w.insert("networkEndpointGroups", body, zone=zone)

    def link_negs(self, backend: str, zones: Iterable[str]) -> None:
        """negLinker.Link: the NEGs of `zones` merged into the backends."""
        wanted = [neg_url(self._project, z, backend) for z in zones]
        self._link(backend, wanted, replace=False)

    def delete_negs(self, service: ServiceView) -> None:
        """The NEG controller's garbage collection: the Service's NEGs, in every zone that has
        one, once no backend service uses them."""
        name = self._namer.backend(service.namespace, service.name)
        for neg in self._compute.all_resources("networkEndpointGroups"):
            if neg["name"] == name and f"/projects/{self._project}/" in neg["selfLink"]:
                zone = str(neg["zone"]).rsplit("/", 1)[-1]
                try:
                    self._w.delete("networkEndpointGroups", name, zone=zone)
                except ComputeRequestError as exc:
                    if not exc.in_use:
                        raise

    # -- links -----------------------------------------------------------------------------

    def _link(self, backend: str, wanted: list[str], replace: bool) -> None:
        current = self._compute.backend_services(self._project, self._region).get(backend)
        if current is None:
            raise ComputeRequestError(404, "notFound", f"backend service {backend}")
        have = [b["group"] for b in current.get("backends", [])]
        keep = [g for g in have if not replace or _path(g) in {_path(w) for w in wanted}]
        add = [w for w in wanted if _path(w) not in {_path(g) for g in have}]
        if not add and len(keep) == len(have):
            return
        body = {k: v for k, v in current.items() if k in _UPDATABLE}
        body["backends"] = [{"group": g, "balancingMode": "CONNECTION"} for g in keep + add]
        self._w.update("backendServices", backend, body)


_UPDATABLE = (
    "name",
    "protocol",
    "description",
    "healthChecks",
    "sessionAffinity",
    "loadBalancingScheme",
    "fingerprint",
    "connectionDraining",
    "timeoutSec",
    "network",
)


def _endpoint(node: str, ip: str) -> dict[str, str]:
    return {"instance": node, "ipAddress": ip} if ip else {"instance": node}
