"""The resources ingress-gce's L4 controllers write, as REST bodies, and how they judge an
existing one: kubernetes/ingress-gce pkg/l4/healthchecks/healthchecksl4.go (newL4HealthCheck,
ensureIPv4Firewall), pkg/firewalls/firewalls_l4.go (EnsureL4FirewallRule) and equal.go
(Equal), pkg/l4/backends/backends.go (EnsureL4BackendService, backendSvcEqual),
pkg/l4/resources/forwarding_rules.go (the internal and external ensureIPv4ForwardingRule),
pkg/l4/forwardingrules/equal.go (EqualIPv4), pkg/l4/resources/l4.go and l4netlb.go
(ensureIPv4NodesFirewall). With the default flags: pinhole firewalls on (the nodes firewall
is pinned to the rule's IP), deny firewalls off, port ranges rather than discrete ports for
external rules, no zonal affinity, locality or logging settings (the fake does not model
them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..checks import Timings, http_check
from ..names import HEALTH_CHECK_SOURCE_RANGES, NODES_HEALTH_CHECK_PATH, NODES_HEALTH_CHECK_PORT
from ..services import ServiceView
from ..shapes import load_balancer_port_range, port_ranges
from . import names

Body = dict[str, Any]
# healthchecksl4.go: gceSharedHcCheckIntervalSeconds, gceLocalHcCheckIntervalSeconds,
# gceHcTimeoutSeconds, gceHcHealthyThreshold, gce{Shared,Local}HcUnhealthyThreshold.
SHARED_TIMINGS = Timings(interval=8, timeout=1, healthy=1, unhealthy=3)
LOCAL_TIMINGS = Timings(interval=3, timeout=1, healthy=1, unhealthy=2)
CONNECTION_DRAINING_SEC = 30  # backends.go DefaultConnectionDrainingTimeoutSeconds (TCP)
FIREWALL_PRIORITY = 1000  # firewalls_l4.go priority() when deny firewalls are off
MAX_FORWARDED_PORTS = 5  # forwarding_rules.go maxForwardedPorts


def shared(service: ServiceView) -> bool:
    """!RequestsOnlyLocalTraffic: externalTrafficPolicy Cluster shares the check."""
    return not service.health_check_path_port()[0]


def health_check(namer: names.L4Namer, service: ServiceView, lb_type: str) -> Body:
    """newL4HealthCheck: kube-proxy's /healthz on 10256 every 8 s for Cluster, the
    Service's healthCheckNodePort every 3 s for Local."""
    is_shared = shared(service)
    name = namer.health_check(service.namespace, service.name, is_shared)
    if is_shared:
        path, port, timings = NODES_HEALTH_CHECK_PATH, NODES_HEALTH_CHECK_PORT, SHARED_TIMINGS
    else:
        (path, port), timings = service.health_check_path_port(), LOCAL_TIMINGS
    description = names.service_description(service.key, "", is_shared, lb_type)
    return http_check(name, port, path, description, timings)


def firewall(
    name: str,
    description: str,
    sources: Sequence[str],
    destinations: Sequence[str],
    protocol: str,
    ports: Sequence[str],
    node_tags: Sequence[str],
) -> Body:
    """EnsureL4FirewallRule's expected rule."""
    body: Body = {
        "name": name,
        "description": description,
        "network": "global/networks/default",
        "sourceRanges": list(sources),
        "targetTags": list(node_tags),
        "allowed": [{"IPProtocol": protocol, "ports": list(ports)}],
        "priority": FIREWALL_PRIORITY,
    }
    if destinations:
        body["destinationRanges"] = list(destinations)
    return body


def health_check_firewall(
    namer: names.L4Namer, service: ServiceView, port: int, node_tags: Sequence[str]
) -> Body:
    """ensureIPv4Firewall: the four L4 probe ranges to the check's port, no destination
    ranges; shared by every Cluster Service, internal or external."""
    is_shared = shared(service)
    return firewall(
        namer.health_check_firewall(service.namespace, service.name, is_shared),
        names.firewall_description(service.key, "", is_shared),
        HEALTH_CHECK_SOURCE_RANGES,
        (),
        "TCP",
        [str(port)],
        node_tags,
    )


def nodes_firewall(
    namer: names.L4Namer, service: ServiceView, ip: str, node_tags: Sequence[str]
) -> Body:
    """ensureIPv4NodesFirewall: the Service's ports from its source ranges, pinned to the
    forwarding rule's IP (the description's IP is spec.loadBalancerIP: none here)."""
    return firewall(
        namer.backend(service.namespace, service.name),
        names.firewall_description(service.key, "", False),
        service.source_ranges or ("0.0.0.0/0",),
        [ip],
        service.protocol,
        port_ranges(service.port_numbers),
        node_tags,
    )


def _ports_per_protocol(allowed: Sequence[Body]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for entry in allowed:
        ports = found.setdefault(str(entry.get("IPProtocol", "")).lower(), set())
        for spec in entry.get("ports") or []:
            low, _, high = str(spec).partition("-")
            ports.update(range(int(low), int(high or low) + 1))
    return found


def firewall_equal(wanted: Body, current: Body, skip_description: bool) -> bool:
    """firewalls.Equal (the shared rule's description is not compared)."""
    return (
        all(
            set(current.get(k) or []) == set(wanted.get(k) or [])
            for k in ("destinationRanges", "sourceRanges", "targetTags")
        )
        and (skip_description or current.get("description", "") == wanted["description"])
        and current.get("priority", 1000) == wanted["priority"]
        and _ports_per_protocol(current.get("allowed") or [])
        == _ports_per_protocol(wanted["allowed"])
    )


def backend_service(
    namer: names.L4Namer, service: ServiceView, scheme: str, check_link: str
) -> Body:
    """EnsureL4BackendService's expected service (backends are the linkers')."""
    draining = CONNECTION_DRAINING_SEC if service.protocol == "TCP" else 0
    return {
        "name": namer.backend(service.namespace, service.name),
        "protocol": service.protocol,
        "description": names.service_description(service.key, "", False, names.ILB),
        "healthChecks": [check_link],
        "sessionAffinity": "NONE",
        "loadBalancingScheme": scheme,
        "connectionDraining": {"drainingTimeoutSec": draining},
    }


def _path(url: str) -> str:
    return url[url.find("projects/") :] if "projects/" in url else url


def backend_service_equal(wanted: Body, current: Body) -> bool:
    """backendSvcEqual: backends and connection draining are not compared."""
    return all(
        current.get(k, "") == wanted[k]
        for k in ("protocol", "description", "sessionAffinity", "loadBalancingScheme")
    ) and {_path(c) for c in current.get("healthChecks", [])} == {
        _path(c) for c in wanted["healthChecks"]
    }


def external_forwarding_rule(service: ServiceView, ip: str, backend_link: str) -> Body:
    """L4NetLB ensureIPv4ForwardingRule: named like the cloud provider's ("a" + UID,
    frName), one port range, PREMIUM tier."""
    return {
        "name": service.lb_name,
        "description": names.service_description(service.key, ip, False, names.XLB),
        "IPAddress": ip,
        "IPProtocol": service.protocol,
        "portRange": load_balancer_port_range(service.port_numbers),
        "loadBalancingScheme": "EXTERNAL",
        "backendService": backend_link,
        "networkTier": "PREMIUM",
    }


def internal_forwarding_rule(
    namer: names.L4Namer,
    service: ServiceView,
    ip: str,
    backend_link: str,
    project: str,
    region: str,
) -> Body:
    """L4 ensureIPv4ForwardingRule: k8s2-tcp-..., the Service's ports (allPorts past five),
    on the default network and subnetwork."""
    ports = [str(p) for p in service.port_numbers]
    body: Body = {
        "name": namer.forwarding_rule(service.namespace, service.name, service.protocol),
        "description": names.service_description(service.key, ip, False, names.ILB),
        "IPAddress": ip,
        "IPProtocol": service.protocol,
        "loadBalancingScheme": "INTERNAL",
        "backendService": backend_link,
        "network": f"projects/{project}/global/networks/default",
        "subnetwork": f"projects/{project}/regions/{region}/subnetworks/default",
        "networkTier": "PREMIUM",
    }
    if len(ports) > MAX_FORWARDED_PORTS:
        body["allPorts"] = True
    else:
        body["ports"] = ports
    return body


def forwarding_rule_equal(current: Body, wanted: Body) -> bool:
    """forwardingrules.EqualIPv4."""
    return (
        current.get("IPAddress") == wanted["IPAddress"]
        and str(current.get("IPProtocol", "")).upper() == wanted["IPProtocol"].upper()
        and current.get("loadBalancingScheme") == wanted["loadBalancingScheme"]
        and set(current.get("ports") or []) == set(wanted.get("ports") or [])
        and current.get("portRange", "") == wanted.get("portRange", "")
        and _path(str(current.get("backendService"))) == _path(wanted["backendService"])
        and bool(current.get("allPorts")) == bool(wanted.get("allPorts"))
        and _path(str(current.get("subnetwork", ""))) == _path(wanted.get("subnetwork", ""))
        and _path(str(current.get("network", ""))) == _path(wanted.get("network", ""))
        and current.get("networkTier") == wanted["networkTier"]
    )
