"""Firewall rules reduced to what matters for one check's probes: VPC rules and firewall
policy rules as one shape (addresses as integer spans, targets judged against the nodes,
rules that cannot apply to the port or the nodes dropped), in the order GCE meets them.
Pure; firewall_reach.py walks them."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lbhc.model.cloud import Firewall, FirewallAllowed, resource_path
from lbhc.model.firewall import ALLOW, DENY, PolicyRule

Span = tuple[int, int]  # first and last IPv4 address, as integers
_TCP = frozenset({"tcp", "all", "6"})

# cloud-provider-gcp gce_loadbalancer_external.go: firewallPriorityDeny (1000) and
# firewallPriorityAllow (999) when it runs with enableL4DenyFirewallRule.
CLOUD_PROVIDER_DENY_PRIORITY = 1000
CLOUD_PROVIDER_ALLOW_PRIORITY = 999


@dataclass(frozen=True, slots=True)
class Backends:
    """The VMs the probes must reach: the cluster's nodes."""

    network: str  # URL or path of their VPC network
    tags: tuple[str, ...]
    service_accounts: tuple[str, ...] | None = None  # None: not known to lbhc


@dataclass(frozen=True, slots=True)
class ProbeRule:
    """A VPC rule or a policy rule as one check's probes meet it. `target` is True, or None
    when lbhc cannot tell whether it applies to the nodes (rules that do not are dropped)."""

    name: str
    priority: int
    action: str
    sources: tuple[Span, ...]
    other_sources: bool  # source matchers lbhc cannot evaluate (address groups, FQDNs, ...)
    dests: tuple[Span, ...] | None  # None: any destination
    other_dests: bool
    target: bool | None
    fixable: bool = False  # the cloud provider's own per-LB deny

    def source_match(self, address: int) -> bool | None:
        if _within(self.sources, address):
            return True
        return None if self.other_sources else False

    def dest_match(self, address: int) -> bool | None:
        if self.dests is None or _within(self.dests, address):
            return True
        return None if self.other_dests else False


def _within(spans: Sequence[Span], address: int) -> bool:
    return any(low <= address <= high for low, high in spans)


def spans(ranges: Iterable[str]) -> tuple[Span, ...]:
    """IPv4 CIDRs as spans; anything else (IPv6, not a CIDR) cannot match IPv4 probes."""
    found = []
    for text in ranges:
        try:
            net = ipaddress.ip_network(text, strict=False)
        except ValueError:
            continue
        if isinstance(net, ipaddress.IPv4Network):
            found.append((int(net.network_address), int(net.broadcast_address)))
    return tuple(found)


def admits_port(entries: Sequence[FirewallAllowed], port: int) -> bool:
    """Whether allowed/denied/layer4 entries cover tcp:`port` (no ports: every port)."""
    for entry in entries:
        if entry.ip_protocol.lower() not in _TCP:
            continue
        if not entry.ports or any(_in_port_spec(spec, port) for spec in entry.ports):
            return True
    return False


def _in_port_spec(spec: str, port: int) -> bool:
    low, _, high = spec.partition("-")
    try:
        return int(low) <= port <= int(high or low)
    except ValueError:
        return False


def same_network(a: str, b: str) -> bool:
    return resource_path(a).rstrip("/") == resource_path(b).rstrip("/")


def cloud_provider_deny_rule(rule: Firewall) -> bool:
    """The cloud provider's per-LB deny rule (cloud-provider-gcp gce_loadbalancer_external.go
    ensureDenyNodeFirewall, MakeFirewallDenyName `k8s-fw-<lb>-deny`, at firewallPriorityDeny
    with `enableL4DenyFirewallRule`): its own allows then sit at firewallPriorityAllow, above
    it."""
    return (
        rule.name.startswith("k8s-fw-")
        and rule.name.endswith("-deny")
        and bool(rule.denied)
        and rule.priority == CLOUD_PROVIDER_DENY_PRIORITY
    )


def target_of(backends: Backends, tags: Sequence[str], accounts: Sequence[str]) -> bool | None:
    """Whether a rule's targets include the nodes (None: by service account, not known)."""
    if tags:
        return bool(set(tags) & set(backends.tags))
    if accounts:
        known = backends.service_accounts
        return None if known is None else bool(set(accounts) & set(known))
    return True


def vpc_rules(rules: Iterable[Firewall], backends: Backends, port: int) -> list[ProbeRule]:
    """The VPC rules that may apply, lowest priority number first, a deny before an allow at
    one priority (a deny wins the tie)."""
    kept: list[ProbeRule] = []
    for rule in rules:
        if rule.disabled or rule.direction != "INGRESS" or not rule.source_ranges:
            continue  # source tags or accounts alone never match Google's probers
        if rule.network and not same_network(rule.network, backends.network):
            continue
        deny = bool(rule.denied)
        if not admits_port(rule.denied if deny else rule.allowed, port):
            continue
        target = target_of(backends, rule.target_tags, rule.target_service_accounts)
        if target is False:
            continue
        action = DENY if deny else ALLOW
        kept.append(
            ProbeRule(
                name=f"firewall rule {rule.name} ({action}, priority {rule.priority})",
                priority=rule.priority,
                action=action,
                sources=spans(rule.source_ranges),
                other_sources=False,
                dests=spans(rule.destination_ranges) if rule.destination_ranges else None,
                other_dests=False,
                target=target,
                fixable=cloud_provider_deny_rule(rule),
            )
        )
    kept.sort(key=lambda r: (r.priority, r.action != DENY))
    return kept


def policy_rules(
    rules: Iterable[PolicyRule], policy: str, backends: Backends, port: int
) -> list[ProbeRule]:
    """A firewall policy's rules that may apply, by priority (unique within a policy)."""
    kept: list[ProbeRule] = []
    for rule in rules:
        if rule.disabled or rule.direction != "INGRESS":
            continue
        if rule.layer4 and not admits_port(rule.layer4, port):
            continue
        if rule.target_resources and not any(
            same_network(n, backends.network) for n in rule.target_resources
        ):
            continue
        target = (
            None
            if rule.target_secure_tags
            else target_of(backends, (), rule.target_service_accounts)
        )
        if target is False:
            continue
        sources = spans(rule.src_ip_ranges)
        if not sources and not rule.other_sources:
            sources = spans(["0.0.0.0/0"])
        named = f" ({rule.rule_name})" if rule.rule_name else ""
        kept.append(
            ProbeRule(
                name=f"rule {rule.priority}{named} of firewall policy {policy} ({rule.action})",
                priority=rule.priority,
                action=rule.action,
                sources=sources,
                other_sources=rule.other_sources,
                dests=(
                    spans(rule.dest_ip_ranges)
                    if rule.dest_ip_ranges or rule.other_destinations
                    else None
                ),
                other_dests=rule.other_destinations,
                target=target,
            )
        )
    kept.sort(key=lambda r: r.priority)
    return kept
