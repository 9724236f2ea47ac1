"""The fake's own ingress firewall evaluator: would GCE deliver one packet to one VM?

An independent implementation (it imports nothing from lbhc outside the sandbox) of the
semantics documented in the GCE pages "VPC firewall rules", "Hierarchical firewall policies",
"Global network firewall policies" and "Firewall policy rules" ("Policy and rule evaluation
order"), for the one kind of packet the prober needs to judge: a TCP health probe from a Google
probe address to a forwarding rule's IP on a backend VM.

- VPC firewall rules apply to a VM when they are INGRESS, not disabled, on the VM's network,
  and target it (targetTags it carries, targetServiceAccounts it runs as, or no targets: every
  instance of the network). The packet must come from `sourceRanges` (sourceTags and
  sourceServiceAccounts name VMs, never a Google prober) and go to `destinationRanges` (empty:
  anywhere), and an `allowed`/`denied` entry must match the protocol ("all" matches anything;
  no ports: every port of the protocol). Of the matching rules the lowest priority number
  wins; at equal priority a deny beats an allow.
- Firewall policy rules (FirewallPolicyRule) match on `match.srcIpRanges` (empty: no IP
  constraint, unless another source selector is set, which a prober never satisfies),
  `match.destIpRanges` (empty: anywhere), `match.layer4Configs`, `targetResources` (network
  URLs; empty: every network the policy is associated with) and `targetServiceAccounts`
  (empty: every VM). Within a policy, rules are tried in priority order; the first matching
  rule decides with `allow` or `deny`, or hands the packet on with `goto_next`.
- Order: the hierarchical (HIERARCHY) policies in the order given (organization first), then
  the VPC rules and the network's NETWORK policy in the order the network's
  `networkFirewallPolicyEnforcementOrder` says (AFTER_CLASSIC_FIREWALL, the default: VPC rules
  first), then the implied deny ingress rule. SYSTEM policies are not modelled.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

AFTER_CLASSIC = "AFTER_CLASSIC_FIREWALL"
BEFORE_CLASSIC = "BEFORE_CLASSIC_FIREWALL"
_PROTOCOL_NUMBERS = {"tcp": "6", "udp": "17", "icmp": "1", "esp": "50", "ah": "51", "sctp": "132"}
# Source selectors of a policy rule that name something other than IP ranges.
_OTHER_SOURCES = (
    "srcAddressGroups",
    "srcFqdns",
    "srcRegionCodes",
    "srcSecureTags",
    "srcThreatIntelligences",
    "srcNetworks",
)
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Packet:
    """One ingress packet: a probe from `source` to `destination`:`port` over `protocol`."""

    source: str
    destination: str
    port: int
    protocol: str = "tcp"


@dataclass(frozen=True)
class Vm:
    """What firewall targeting sees of a VM: its network URL, network tags, service accounts."""

    network: str
    tags: frozenset[str] = frozenset()
    service_accounts: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Verdict:
    """Delivered or not, and which rule said so ("" for the implied deny ingress rule)."""

    allowed: bool
    by: str


IMPLIED_DENY = Verdict(False, "")


def decide(
    packet: Packet,
    vm: Vm,
    firewalls: Iterable[Mapping[str, Any]],
    policies: Sequence[Mapping[str, Any]] = (),
    enforcement_order: str = AFTER_CLASSIC,
) -> Verdict:
    """The fate of `packet` at `vm` under the VPC `firewalls` (Firewall resources, any
    network: others are ignored) and the firewall `policies` in effect on the VM's network
    (as networks.getEffectiveFirewalls lists them: dicts with `type` and `rules`)."""
    for policy in policies:
        if policy.get("type") == "HIERARCHY":
            verdict = _policy(packet, vm, policy)
            if verdict is not None:
                return verdict
    network_policies = [p for p in policies if p.get("type") == "NETWORK"]

    def vpc() -> Verdict | None:
        return _vpc(packet, vm, firewalls)

    def network() -> Verdict | None:
        for policy in network_policies:
            verdict = _policy(packet, vm, policy)
            if verdict is not None:
                return verdict
        return None

    for step in (network, vpc) if enforcement_order == BEFORE_CLASSIC else (vpc, network):
        verdict = step()
        if verdict is not None:
            return verdict
    return IMPLIED_DENY


# -- VPC firewall rules ------------------------------------------------------------------------


def _vpc(packet: Packet, vm: Vm, firewalls: Iterable[Mapping[str, Any]]) -> Verdict | None:
    best: tuple[int, int, str] | None = None  # (priority, 0 deny / 1 allow, name)
    for rule in firewalls:
        if not _vpc_applies(packet, vm, rule):
            continue
        denies = "denied" in rule
        key = (int(rule.get("priority", 1000)), 0 if denies else 1, str(rule.get("name", "")))
        if best is None or key < best:
            best = key
    if best is None:
        return None
    return Verdict(best[1] == 1, best[2])


def _vpc_applies(packet: Packet, vm: Vm, rule: Mapping[str, Any]) -> bool:
    if rule.get("direction", "INGRESS") != "INGRESS" or rule.get("disabled", False):
        return False
    if rule.get("network") != vm.network:
        return False
    tags, accounts = rule.get("targetTags") or [], rule.get("targetServiceAccounts") or []
    if tags and not vm.tags.intersection(tags):
        return False
    if accounts and not vm.service_accounts.intersection(accounts):
        return False
    if not _in_any(packet.source, rule.get("sourceRanges") or []):
        return False  # no sourceRanges: sources are tags / service accounts, never a prober
    destinations = rule.get("destinationRanges") or []
    if destinations and not _in_any(packet.destination, destinations):
        return False
    entries = rule.get("allowed") or rule.get("denied") or []
    return any(_l4(packet, e.get("IPProtocol", ""), e.get("ports") or []) for e in entries)


# -- firewall policies -------------------------------------------------------------------------


def _policy(packet: Packet, vm: Vm, policy: Mapping[str, Any]) -> Verdict | None:
    rules = sorted(policy.get("rules") or [], key=lambda r: int(r.get("priority", 0)))
    name = str(policy.get("shortName") or policy.get("name") or "")
    for rule in rules:
        if not _policy_rule_applies(packet, vm, rule):
            continue
        action = rule.get("action")
        if action == "goto_next":
            return None
        return Verdict(action == "allow", f"{name}/{rule.get('priority')}")
    return None


def _policy_rule_applies(packet: Packet, vm: Vm, rule: Mapping[str, Any]) -> bool:
    if rule.get("direction", "INGRESS") != "INGRESS" or rule.get("disabled", False):
        return False
    resources = rule.get("targetResources") or []
    if resources and vm.network not in resources:
        return False
    accounts = rule.get("targetServiceAccounts") or []
    if accounts and not vm.service_accounts.intersection(accounts):
        return False
    if rule.get("targetSecureTags"):
        return False  # the fake's VMs carry no secure tags
    match = rule.get("match") or {}
    sources = match.get("srcIpRanges") or []
    if sources:
        if not _in_any(packet.source, sources):
            return False
    elif any(match.get(key) for key in _OTHER_SOURCES):
        return False
    destinations = match.get("destIpRanges") or []
    if destinations and not _in_any(packet.destination, destinations):
        return False
    configs = match.get("layer4Configs") or []
    return any(_l4(packet, c.get("ipProtocol", ""), c.get("ports") or []) for c in configs)


# -- shared matching ---------------------------------------------------------------------------


def _l4(packet: Packet, protocol: str, ports: Sequence[str]) -> bool:
    protocol = str(protocol).lower()
    if protocol == "all":
        return True
    wanted = packet.protocol.lower()
    if protocol not in (wanted, _PROTOCOL_NUMBERS.get(wanted)):
        return False
    return not ports or any(_port_in(packet.port, spec) for spec in ports)


def _port_in(port: int, spec: str) -> bool:
    low, _, high = str(spec).partition("-")
    return int(low) <= port <= int(high or low)


def _in_any(address: str, ranges: Iterable[str]) -> bool:
    ip: Address = ipaddress.ip_address(address)
    for cidr in ranges:
        network = ipaddress.ip_network(cidr, strict=False)
        if network.version == ip.version and ip in network:
            return True
    return False
