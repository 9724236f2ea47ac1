"""Which nodes a Service's GCE_VM_IP NEGs hold: kubernetes/ingress-gce
pkg/neg/syncers/endpoints_calculator.go (ClusterL4EndpointsCalculator,
LocalL4EndpointsCalculator, wantedInternalEndpointsCount, wantedExternalEndpointsCount) and
pkg/neg/syncers/subsets.go (getSubsetPerZone, pickSubsetsMinRemovals, sortZones), bit for bit
in the choice of nodes (sha256 of "node:salt"; the salt is "name/namespace", the serviceKey
pkg/neg/syncers/transaction.go GetEndpointsCalculator gives the calculators).

Simplified: the sandbox runs no Pods behind its Services, so a Local Service's NEGs hold
the nodes a Cluster one's would (every node the Local filter selects counts as hosting an
endpoint, up to the Local limit): upstream keeps only the nodes with endpoints and, with
includeDrainNodesL4Local, keeps drain-labelled ones while their Pods remain. An external
Service counts no endpoints either (wantedExternalEndpointsCount's pods term is 0)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from ..nodes import NodeView
from .nodes import L4_NEG_FILTER, by_zone, list_nodes

# subsets.go.
MAX_SUBSET_LOCAL = 250
MAX_SUBSET_CLUSTER = 25
MAX_SUBSET_NETLB_LOCAL = 3000
MAX_SUBSET_NETLB_CLUSTER = 250
_MIN_PER_ZONE_EXTERNAL = 3  # linearEndpointsPerPods minCountPerZoneSubnetPair


def _hashed(node: str, salt: str) -> str:
    """getHashedName."""
    return hashlib.sha256(f"{node}:{salt}".encode()).hexdigest()


def pick_min_removals(nodes: list[str], salt: str, count: int, current: Iterable[str]) -> list[str]:
    """pickSubsetsMinRemovals: the current members that are still candidates first (in the
    current list's order), then the rest in order of their salted hash, `count` in all."""
    if len(nodes) < count:
        return list(nodes)
    ranked = sorted(nodes, key=lambda n: _hashed(n, salt))
    subset = [n for n in sorted(set(current)) if n in set(nodes)]
    if len(subset) >= count:
        return subset[:count]
    for node in ranked:
        if node not in subset:
            subset.append(node)
            if len(subset) == count:
                break
    return subset


def subset_per_zone(
    nodes_per_zone: Mapping[str, list[str]],
    total: int,
    salt: str,
    current: Mapping[str, Sequence[str]],
) -> dict[str, list[str]]:
    """getSubsetPerZone: zones from the fewest nodes up, each given an even share of what is
    left of `total`; every zone gets an entry, empty or not."""
    result: dict[str, list[str]] = {}
    zones = sorted(nodes_per_zone, key=lambda z: (len(nodes_per_zone[z]), z))
    for left, zone in zip(range(len(zones), 0, -1), zones, strict=True):
        subset = pick_min_removals(nodes_per_zone[zone], salt, total // left, current.get(zone, ()))
        result[zone] = subset
        total -= len(subset)
    return result


def wanted_internal(zones: int) -> int:
    """wantedInternalEndpointsCount: 24 when the zones divide it, else 25."""
    return 24 if zones and 24 % zones == 0 else 25


def wanted_external(zones: int, used: int) -> int:
    """wantedExternalEndpointsCount with no endpoints counted: three per zone, at most 250,
    never fewer than are in use (shrinking would need connection draining)."""
    return max(min(MAX_SUBSET_NETLB_CLUSTER, zones * _MIN_PER_ZONE_EXTERNAL), used)


def salt(namespace: str, name: str) -> str:
    """GetEndpointsCalculator's serviceKey: the NEG syncer key's Name, then Namespace."""
    return f"{name}/{namespace}"


def neg_members(
    nodes: Iterable[NodeView],
    service_salt: str,
    internal: bool,
    local: bool,
    current: Mapping[str, Sequence[str]],
) -> dict[str, list[str]]:
    """Zone -> the node names its NEG should hold, for one Service."""
    zoned = {
        zone: [n.name for n in members]
        for zone, members in by_zone(list_nodes(nodes, L4_NEG_FILTER)).items()
        if zone
    }
    if local:
        limit = MAX_SUBSET_LOCAL if internal else MAX_SUBSET_NETLB_LOCAL
    elif internal:
        limit = wanted_internal(len(zoned))
    else:
        limit = wanted_external(len(zoned), sum(len(v) for v in current.values()))
    return subset_per_zone(zoned, limit, service_salt, current)
