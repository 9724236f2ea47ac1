"""What the fake's prober probes, read from the fake in one rescan: every (check, instance,
forwarding rule IP) of its target pools with the check's timings and the instance as the
firewall sees it, each pool's rule IPs, and each network's firewall (VPC rules, policies,
enforcement order); and where each probe comes from.

An instance seeded with add_instance is seen with its own network, tags and service
accounts; a pool instance that was never seeded (target pools take instance URLs unchecked)
is taken to be on its project's "default" network with `ComputeFake.default_instance_tags`
and `default_instance_service_accounts`, which the owner sets to what its VMs carry."""

from __future__ import annotations

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

# Where GCE's probes for target-pool (and backend-service) external passthrough network load
# balancers come from: GCE docs "Health checks overview", "Probe IP ranges and firewall rules".
PROBE_RANGES = ("35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22")
_PROBE_NETWORKS = tuple(ipaddress.IPv4Network(cidr) for cidr in PROBE_RANGES)


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
    keys: dict[Key, tuple[CheckConfig, Vm]] = field(default_factory=dict)
    firewalls: dict[str, NetworkFirewall] = field(default_factory=dict)  # by network URL
    pool_ips: dict[str, list[str]] = field(default_factory=dict)  # pool URL -> its rules' IPs

    def firewall_of(self, network: str) -> NetworkFirewall:
        return self.firewalls.get(network, NetworkFirewall())


def probe_source(key: Key, sent: int) -> str:
    """The address the `sent`-th probe of `key` comes from: the probe ranges in turn, a
    different address each time, so a rule admitting part of a range admits part of the
    probes, as on GCE."""
    network = _PROBE_NETWORKS[sent % len(_PROBE_NETWORKS)]
    spread = zlib.crc32("\n".join((*key, str(sent))).encode())
    return str(network.network_address + spread % network.num_addresses)


def read_targets(fake: ComputeFake, scale: float) -> ProbeTargets:
    checks = {c["selfLink"]: c for c in fake.all_resources("httpHealthChecks")}
    ips: dict[str, list[str]] = {}
    for rule in fake.all_resources("forwardingRules"):
        if rule.get("target") and rule.get("IPAddress"):
            found = ips.setdefault(str(rule["target"]), [])
            if rule["IPAddress"] not in found:
                found.append(str(rule["IPAddress"]))
    vms = {i["selfLink"]: _vm_of(i) for i in fake.all_resources("instances")}
    default_tags = frozenset(fake.default_instance_tags)
    default_accounts = frozenset(fake.default_instance_service_accounts)
    keys: dict[Key, tuple[CheckConfig, Vm]] = {}
    for pool in fake.all_resources("targetPools"):
        for check_url in pool.get("healthChecks", [])[:1]:  # a pool has at most one
            check = checks.get(check_url)
            if check is None:
                continue
            config = CheckConfig.of(check, scale)
            for instance in pool.get("instances", []):
                vm = vms.get(instance) or Vm(
                    _default_network(instance), default_tags, default_accounts
                )
                for ip in ips.get(pool["selfLink"]) or [""]:
                    keys[(check_url, instance, ip)] = (config, vm)
    return ProbeTargets(keys, _firewalls(fake), ips)


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
