"""Whether `gce.node_tags` are the nodes' own. lbhc's firewall rule admits Google's probes
only to instances carrying one of them (Firewall.targetTags); a wrong tag otherwise shows
only later and indirectly, as every pool failing open. A few nodes' VMs are read once to
say it at start."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lbhc.model.cloud import instance_url
from lbhc.model.cluster import Node
from lbhc.planner.nodes import can_receive_lb_traffic

# One node answers for its pool's instance template; three in name order show a mismatch
# that is not one odd VM, at three reads once per start.
SAMPLE_SIZE = 3


def nodes_to_sample(
    nodes: Iterable[Node], project: str, region: str, limit: int = SAMPLE_SIZE
) -> dict[str, str]:
    """Node name -> VM URL for the first `limit` nodes (by name) a load balancer may send
    to: the instances the cloud provider puts in every Cluster pool."""
    serving = sorted((n for n in nodes if can_receive_lb_traffic(n)), key=lambda n: n.name)
    return {n.name: instance_url(n, project, f"{region}-a") for n in serving[:limit]}


@dataclass(frozen=True)
class NodeTagMismatch:
    node_tags: tuple[str, ...]
    carried: Mapping[str, frozenset[str]]  # node name -> the network tags its VM carries

    def message(self) -> str:
        seen = sorted(set().union(*self.carried.values()))
        names = ", ".join(sorted(self.carried))
        return (
            f"none of the {len(self.carried)} node(s) read ({names}) carries a network tag of "
            f"gce.node_tags ({', '.join(self.node_tags)}); they carry "
            f"{', '.join(seen) if seen else 'no tag at all'}: lbhc's firewall rule would admit "
            "Google's probes to no node and every pool relying on it would fail open; set "
            "--node-tags to the nodes' tag (README: Finding the nodes' network tags)"
        )


def node_tag_mismatch(
    carried: Mapping[str, frozenset[str]], node_tags: Iterable[str]
) -> NodeTagMismatch | None:
    """A mismatch only when every VM read carries none of the tags: one carrying one shows the
    tag is right (node pools may differ, and a pool without it is judged per pool)."""
    wanted = tuple(node_tags)
    if not carried or not wanted:
        return None
    if any(tags & set(wanted) for tags in carried.values()):
        return None
    return NodeTagMismatch(wanted, dict(carried))
