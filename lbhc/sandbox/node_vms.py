"""The VMs behind the sandbox's Nodes. On GKE a node pool's managed instance group creates a
VM before its kubelet registers the Node, and a Node's providerID (gce://PROJECT/ZONE/NAME)
and InternalIP are the VM's. Instance groups and GCE_VM_IP NEGs take only VMs that exist,
so the sandbox gives every Node with a providerID its VM in the Compute fake (through the
fake's seeding API: the Compute API serves no instances.insert), with the node tag the
firewalls target and the Node's InternalIP as its network IP. A VM stays when its Node goes:
the fake does not model VM deletion (a target pool, an instance group or a NEG keeps naming
it until a controller removes it)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.upstream.nodes import NodeView


class NodeVms:
    def __init__(self, kube: KubeFake, compute: ComputeFake, tags: Sequence[str]) -> None:
        self._kube, self._compute, self._tags = kube, compute, tuple(tags)
        self._made: set[tuple[str, str, str]] = set()  # (project, zone, name)

    def ensure(self) -> None:
        """A VM for every Node with a providerID that has none yet."""
        for node in map(NodeView.of, self._kube.objects("Node")):
            parts = node.provider_id.removeprefix("gce://").split("/")
            if not node.provider_id.startswith("gce://") or len(parts) != 3:
                continue
            key = (parts[0], parts[1], parts[2])
            if key in self._made:
                continue
            project, zone, name = key
            if name not in self._compute.instances(project, zone):
                self._compute.add_instance(
                    project, zone, name, network_ip=_ipv4(node.internal_ip), tags=self._tags
                )
            self._made.add(key)


def _ipv4(address: str) -> str | None:
    """The address if it is IPv4 (a VM's network IP is); else None: the fake picks one."""
    try:
        return str(ipaddress.IPv4Address(address))
    except ValueError:
        return None
