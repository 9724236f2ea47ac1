"""The effective firewall of a VPC network, as `networks.getEffectiveFirewalls` returns it:
the network's VPC firewall rules and the firewall policies that apply to it (hierarchical
ones from the organization and folders, and the global network policy). Plain frozen data;
what it admits is lbhc.planner.firewall_reach's question."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FirewallAllowed:
    ip_protocol: str
    ports: tuple[str, ...] = ()


@dataclass(frozen=True)
class Firewall:
    name: str
    network: str = ""
    description: str = ""
    direction: str = "INGRESS"
    priority: int = 1000
    allowed: tuple[FirewallAllowed, ...] = ()
    source_ranges: tuple[str, ...] = ()
    target_tags: tuple[str, ...] = ()
    destination_ranges: tuple[str, ...] = ()
    # Widening fields: any value someone adds by hand makes the rule admit more than ours.
    source_tags: tuple[str, ...] = ()
    source_service_accounts: tuple[str, ...] = ()
    target_service_accounts: tuple[str, ...] = ()
    disabled: bool = False
    self_link: str = ""
    # A deny rule's matches (lbhc never writes one; others' are read to judge what the
    # network admits).
    denied: tuple[FirewallAllowed, ...] = ()


# FirewallPolicyRule.action values (Compute API reference, FirewallPolicyRule).
ALLOW = "allow"
DENY = "deny"
GOTO_NEXT = "goto_next"

# NetworksGetEffectiveFirewallsResponseEffectiveFirewallPolicy.type values.
HIERARCHY = "HIERARCHY"
NETWORK = "NETWORK"


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One rule of a firewall policy. Matchers lbhc cannot evaluate for Google's health
    checkers (address groups, FQDNs, geolocations, threat intelligence lists, secure tags on
    the target VMs) are kept as flags, so a rule that might match is never taken not to."""

    priority: int
    action: str  # allow | deny | goto_next | apply_security_profile_group
    direction: str = "INGRESS"
    disabled: bool = False
    src_ip_ranges: tuple[str, ...] = ()
    dest_ip_ranges: tuple[str, ...] = ()
    layer4: tuple[FirewallAllowed, ...] = ()
    target_resources: tuple[str, ...] = ()  # network URLs; none: every network
    target_service_accounts: tuple[str, ...] = ()
    # Source matchers other than IP ranges that could include Google's probe addresses.
    other_sources: bool = False
    # Destination matchers other than IP ranges (address groups, FQDNs, ...).
    other_destinations: bool = False
    target_secure_tags: bool = False  # tags on VMs: lbhc does not read them
    rule_name: str = ""


@dataclass(frozen=True, slots=True)
class FirewallPolicy:
    name: str
    type: str  # HIERARCHY | NETWORK | SYSTEM
    rules: tuple[PolicyRule, ...] = ()
    short_name: str = ""

    @property
    def display(self) -> str:
        return self.short_name or self.name


@dataclass(frozen=True)
class EffectiveFirewall:
    network: str  # the network's URL
    rules: tuple[Firewall, ...] = ()  # VPC firewall rules, every one of the network
    policies: tuple[FirewallPolicy, ...] = ()  # in the order the API lists them
    # networkFirewallPolicyEnforcementOrder: AFTER_CLASSIC_FIREWALL (the default) evaluates
    # the VPC rules before the network policy.
    policy_after_vpc_rules: bool = True
