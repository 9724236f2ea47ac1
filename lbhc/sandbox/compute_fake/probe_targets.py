"""What the fake's prober probes, read from the fake in one rescan: every (check, instance,
forwarding rule IP) of its load balancers with the check's timings, the instance as the
firewall sees it and the ranges its probes come from; each load balancer's rule IPs, and each
network's firewall (VPC rules, policies, enforcement order); and where each probe comes from.

- A target pool: its legacy check (at most one), on each of its instances.
- A regional backend service: its check if of type HTTP (a TCP or other check is not probed:
  getHealth falls back for it), on each member of each backend (an instance group's
  instances, a NEG's endpoints' VMs), as regionBackendServices.getHealth lists them.
- Probe sources (GCE docs "Health checks overview", "Probe IP ranges and firewall rules"):
  an external passthrough load balancer's, target-pool or backend-service, come from
  35.191.0.0/16, 209.85.152.0/22 and 209.85.204.0/22; an internal passthrough one's
  (loadBalancingScheme INTERNAL) from 35.191.0.0/16 and 130.211.0.0/22.

An instance seeded with add_instance is seen with its own network, tags and service
accounts; a pool instance that was never seeded (target pools take instance URLs unchecked)
is taken to be on its project's "default" network with `ComputeFake.default_instance_tags`
and `default_instance_service_accounts`, which the owner sets to what its VMs carry."""

from __future__ import annotations

import functools
import ipaddress
import zlib
from dataclasses import dataclass, field
from typing import Any

from . import urls
from .fake import ComputeFake
from .firewall_eval import AFTER_CLASSIC, Packet, Vm, decide
from .prober_http import CheckConfig

# (check URL, instance URL, forwarding rule IP); the IP is "" for a pool no rule points at
Key = tuple[str, str, str]

# Where GCE's probes for external passthrough network load balancers (target-pool and
# backend-service) come from, and for internal passthrough ones: see the module docstring.
PROBE_RANGES = ("35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22")
INTERNAL_PROBE_RANGES = ("35.191.0.0/16", "130.211.0.0/22")


@dataclass(frozen=True)
class Target:
    """What probing one key needs: the check's timings, the VM, the probes' source ranges."""

    config: CheckConfig
    vm: Vm
    sources: tuple[str, ...] = PROBE_RANGES


@dataclass(frozen=True)
class NetworkFirewall:
    """The firewall in effect on one network: its VPC rules, policies, enforcement order."""

    firewalls: tuple[dict[str, Any], ...] = ()
    policies: tuple[dict[str, Any], ...] = ()
    order: str = AFTER_CLASSIC

    def admits(self, source: str, destination: str, vm: Vm, port: int) -> bool:
        packet = Packet(source, destination, port)
        return decide(packet, vm, self.firewalls, self.policies, self.order).allowed


@dataclass(frozen=True)
class ProbeTargets:
    keys: dict[Key, Target] = field(default_factory=dict)
    firewalls: dict[str, NetworkFirewall] = field(default_factory=dict)  # by network URL
    # A target pool's or backend service's URL -> its rules' IPs.
    pool_ips: dict[str, list[str]] = field(default_factory=dict)
    unprobed: frozenset[str] = frozenset()  # backend services' checks not probed (not HTTP)

    def firewall_of(self, network: str) -> NetworkFirewall:
        return self.firewalls.get(network, NetworkFirewall())


def probe_source(key: Key, sent: int, ranges: tuple[str, ...] = PROBE_RANGES) -> str:
    """The address the `sent`-th probe of `key` comes from: the probe ranges in turn, a
    different address each time, so a rule admitting part of a range admits part of the
    probes, as on GCE."""
    network = _network(ranges[sent % len(ranges)])
    spread = zlib.crc32("\n".join((*key, str(sent))).encode())
    return str(network.network_address + spread % network.num_addresses)


@functools.cache
def _network(cidr: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(cidr)


def read_targets(fake: ComputeFake, scale: float) -> ProbeTargets:
    ips: dict[str, list[str]] = {}
    for rule in fake.all_resources("forwardingRules"):
        lb = rule.get("target") or rule.get("backendService")
        if lb and rule.get("IPAddress"):
            found = ips.setdefault(str(lb), [])
            if rule["IPAddress"] not in found:
                found.append(str(rule["IPAddress"]))
    vms = {i["selfLink"]: _vm_of(i) for i in fake.all_resources("instances")}
    default_tags = frozenset(fake.default_instance_tags)
    default_accounts = frozenset(fake.default_instance_service_accounts)

    def vm_of(instance: str) -> Vm:
        return vms.get(instance) or Vm(_default_network(instance), default_tags, default_accounts)

    keys: dict[Key, Target] = {}
    legacy = {c["selfLink"]: c for c in fake.all_resources("httpHealthChecks")}
    for pool in fake.all_resources("targetPools"):
        for check_url in pool.get("healthChecks", [])[:1]:  # a pool has at most one
            check = legacy.get(check_url)
            if check is None:
                continue
            config = CheckConfig.of(check, scale)
            for instance in pool.get("instances", []):
                for ip in ips.get(pool["selfLink"]) or [""]:
                    keys[(check_url, instance, ip)] = Target(config, vm_of(instance))
    checks = {c["selfLink"]: c for c in fake.all_resources("healthChecks")}
    unprobed: set[str] = set()
    for service in fake.all_resources("backendServices"):
        check_url = (service.get("healthChecks") or [""])[0]
        http_config = CheckConfig.of_health_check(checks.get(check_url) or {}, scale)
        if http_config is None:
            unprobed.add(check_url)
            continue
        internal = service.get("loadBalancingScheme") == "INTERNAL"
        sources = INTERNAL_PROBE_RANGES if internal else PROBE_RANGES
        for backend in service.get("backends", []):
            for instance in fake.group_members(str(backend["group"])):
                for ip in ips.get(service["selfLink"]) or [""]:
                    keys[(check_url, instance, ip)] = Target(http_config, vm_of(instance), sources)
    return ProbeTargets(keys, _firewalls(fake), ips, frozenset(unprobed))


def _firewalls(fake: ComputeFake) -> dict[str, NetworkFirewall]:
    by_network: dict[str, list[dict[str, Any]]] = {}
    for rule in fake.all_resources("firewalls"):
        by_network.setdefault(str(rule.get("network")), []).append(rule)
    found: dict[str, NetworkFirewall] = {}
    for network in fake.all_resources("networks"):
        url = network["selfLink"]
        ref = urls.parse_ref(url, "")
        policies = fake.firewall_policies(ref.project, ref.name) if ref else []
        order = network.get("networkFirewallPolicyEnforcementOrder") or AFTER_CLASSIC
        found[url] = NetworkFirewall(tuple(by_network.get(url, ())), tuple(policies), order)
    return found


def _vm_of(instance: dict[str, Any]) -> Vm:
    """A seeded instance as firewall targeting sees it (its first interface's network)."""
    nics = instance.get("networkInterfaces") or [{}]
    accounts = instance.get("serviceAccounts") or []
    return Vm(
        network=str(nics[0].get("network", "")),
        tags=frozenset((instance.get("tags") or {}).get("items", [])),
        service_accounts=frozenset(str(a.get("email", "")) for a in accounts),
    )


def _default_network(instance_url: str) -> str:
    """The "default" network of an unseeded instance's project."""
    ref = urls.parse_ref(instance_url, "")
    project = ref.project if ref is not None else ""
    return urls.resource_url(project, "global", "networks", "default")
