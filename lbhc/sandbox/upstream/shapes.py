"""The resources today's GCE cloud provider writes, as REST bodies, and how it judges an
existing one: kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer_external.go
(makeHTTPHealthCheck, mergeHTTPHealthChecks, needToUpdateHTTPHealthChecks, firewallObject,
ensureHTTPHealthCheckFirewall, createForwardingRule, loadBalancerPortRange) and
gce_loadbalancer_internal.go (getPortsAndProtocol, getPortRanges)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from . import names

Body = dict[str, Any]
_TIMINGS = ("checkIntervalSec", "timeoutSec", "unhealthyThreshold", "healthyThreshold")


def http_health_check(name: str, path: str, port: int) -> Body:
    """makeHTTPHealthCheck: host "" (the API omits it), the fixed timings, and a description
    naming the check itself."""
    return {
        "name": name,
        "port": port,
        "requestPath": path,
        "description": names.health_check_description(name),
        "checkIntervalSec": names.CHECK_INTERVAL_SEC,
        "timeoutSec": names.TIMEOUT_SEC,
        "healthyThreshold": names.HEALTHY_THRESHOLD,
        "unhealthyThreshold": names.UNHEALTHY_THRESHOLD,
    }


def health_check_needs_update(current: Body, wanted: Body) -> bool:
    """needToUpdateHTTPHealthChecks: port, path or description differ, or a timing is lower
    than wanted (a higher one is someone's choice and is kept)."""
    if any(current.get(k) != wanted[k] for k in ("port", "requestPath", "description")):
        return True
    return any(int(current.get(k, 0)) < int(wanted[k]) for k in _TIMINGS)


def merged_health_check(current: Body, wanted: Body) -> Body:
    """mergeHTTPHealthChecks: `wanted` with every timing raised to the current one if higher."""
    merged = dict(wanted)
    for key in _TIMINGS:
        merged[key] = max(int(current.get(key, 0)), int(wanted[key]))
    return merged


def port_ranges(ports: Iterable[int]) -> list[str]:
    """getPortRanges: sorted ports, consecutive runs merged into "a-b"."""
    ranges: list[str] = []
    for port in sorted(set(ports)):
        if ranges and _last(ranges[-1]) == port - 1:
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{port}"
        else:
            ranges.append(str(port))
    return ranges


def _last(port_range: str) -> int:
    return int(port_range.rsplit("-", 1)[-1])


def load_balancer_port_range(ports: Sequence[int]) -> str:
    """loadBalancerPortRange: one "min-max" range over every Service port."""
    return f"{min(ports)}-{max(ports)}"


def firewall(
    name: str,
    description: str,
    destination_ip: str,
    source_ranges: Sequence[str],
    protocol: str,
    ports: Iterable[int],
    node_tags: Sequence[str],
) -> Body:
    """firewallObject: one allowed protocol with the ports as ranges, the node tags as
    targets and, when the load balancer's IP is known, destinationRanges pinned to it (an
    empty destinationRanges is "anywhere" to GCE)."""
    body: Body = {
        "name": name,
        "description": description,
        "network": "global/networks/default",
        "sourceRanges": list(source_ranges),
        "targetTags": list(node_tags),
        "allowed": [{"IPProtocol": protocol.lower(), "ports": port_ranges(ports)}],
        "priority": names.FIREWALL_PRIORITY,
    }
    if destination_ip:
        body["destinationRanges"] = [destination_ip]
    return body


def health_check_firewall(
    cluster_id: str,
    check_name: str,
    nodes_check: bool,
    service_key: str,
    ip: str,
    port: int,
    node_tags: Sequence[str],
) -> Body:
    """What ensureHTTPHealthCheckFirewall creates: the health checkers' ranges to the check's
    port. The nodes check's firewall is shared by every Cluster pool yet pinned to the IP of the
    load balancer whose ensure created it (firewallObject is given that IP)."""
    description = (
        names.cluster_firewall_description(cluster_id)
        if nodes_check
        else names.firewall_description(service_key, ip)
    )
    return firewall(
        names.health_check_firewall_name(cluster_id, check_name, nodes_check),
        description,
        ip,
        names.HEALTH_CHECK_SOURCE_RANGES,
        "tcp",
        [port],
        node_tags,
    )


def health_check_firewall_drifted(current: Body, wanted: Body) -> bool:
    """ensureHTTPHealthCheckFirewall's check of an existing rule: description, one allowed
    entry with the same protocol and port, the same source ranges, the priority. Not the
    destinationRanges: a shared rule keeps the first load balancer's IP until something else
    drifts, and then takes the IP of the Service being ensured."""
    allowed = current.get("allowed") or []
    return (
        current.get("description") != wanted["description"]
        or len(allowed) != 1
        or allowed[0].get("IPProtocol") != wanted["allowed"][0]["IPProtocol"]
        or set(allowed[0].get("ports") or []) != set(wanted["allowed"][0]["ports"])
        or set(current.get("sourceRanges") or []) != set(wanted["sourceRanges"])
        or current.get("priority") != wanted["priority"]
    )


def target_pool(name: str, service_key: str, hosts: Sequence[str], checks: Sequence[str]) -> Body:
    """createTargetPoolAndHealthCheck's pool: described like the Service's forwarding rule,
    session affinity NONE (the Service's default), the check attached at creation."""
    body: Body = {
        "name": name,
        "description": names.service_description(service_key),
        "instances": list(hosts),
        "sessionAffinity": "NONE",
    }
    if checks:
        body["healthChecks"] = list(checks)
    return body


def forwarding_rule(
    name: str, service_key: str, ip: str, protocol: str, ports: Sequence[int], target: str
) -> Body:
    """createForwardingRule for a target pool (network tier left to the API's PREMIUM)."""
    return {**_rule(name, service_key, ip, protocol, ports), "target": target}


def _rule(name: str, service_key: str, ip: str, protocol: str, ports: Sequence[int]) -> Body:
    return {
        "name": name,
        "description": names.service_description(service_key),
        "IPAddress": ip,
        "IPProtocol": protocol,
        "portRange": load_balancer_port_range(ports),
    }
