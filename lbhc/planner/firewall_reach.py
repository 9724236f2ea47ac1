"""Do Google's health checkers reach the nodes? Judged from the network's effective firewall, as
GCE evaluates it for a passthrough load balancer's probes.

GCE sends those probes to the forwarding rule's IP on the check's port
(kubernetes/kubernetes#117723), from the health checkers' ranges, and they must be admitted as
INGRESS to the backend VMs (Google Cloud, "Health check firewall rules"; "VPC firewall rules":
targets by network tag or service account, `destinationRanges`, protocol and ports, lowest
priority number first, a deny wins a tie, and no match is the implied deny ingress). Firewall
policies come first from the organization down, `goto_next` passing on; the network's VPC rules
and its global network policy follow in the order of the network's
`networkFirewallPolicyEnforcementOrder` ("Hierarchical firewall policies", "Global network
firewall policies", policy and rule evaluation order). Regional network firewall policies are
not part of `networks.getEffectiveFirewalls` and are not read.

Each probe source range is split wherever a rule's source ranges start or end, so a rule
that admits part of a range admits exactly that part. A rule lbhc cannot fully evaluate
(targets by service account while the nodes' accounts are unknown, secure tags, address
groups, FQDN or geolocation sources) and that could decide makes the verdict unknown,
naming the rule: never a guess either way.

This is the same question GCP's Connectivity Tests answer as `HealthCheckFirewallState`.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from lbhc.model.cloud import Firewall, FirewallAllowed, resource_path
from lbhc.model.firewall import (
    ALLOW,
    DENY,
    GOTO_NEXT,
    HIERARCHY,
    NETWORK,
    EffectiveFirewall,
    PolicyRule,
)

IPv4Net = ipaddress.IPv4Network
_TCP = frozenset({"tcp", "all", "6"})
_MAX_NEAR_MISSES = 2


class Reach(StrEnum):
    ADMITTED = "admitted"  # every probe source reaches the nodes
    BLOCKED = "blocked"  # none does: every instance reads UNHEALTHY, the pool fails open
    PARTLY_BLOCKED = "partly-blocked"  # some probe sources are dropped
    UNKNOWN = "unknown"  # a rule lbhc cannot evaluate could decide


@dataclass(frozen=True, slots=True)
class Backends:
    """The VMs the probes must reach: the cluster's nodes."""

    network: str  # URL or path of their VPC network
    tags: tuple[str, ...]
    service_accounts: tuple[str, ...] | None = None  # None: not known to lbhc


@dataclass(frozen=True, slots=True)
class Decision:
    """What the firewall does with probes from `ranges`."""

    ranges: tuple[str, ...]
    admitted: bool | None  # None: unknown
    by: str  # the rule that decides, or the implied deny
    # Blocked only by the implied deny or by the cloud provider's own per-LB deny rule, which
    # an allow rule at the cloud provider's allow priority (999) overrides as its own do.
    fixable: bool = False


@dataclass(frozen=True)
class ProbeVerdict:
    destination: str
    port: int
    decisions: tuple[Decision, ...]
    # Allow rules that would admit these probes but for their destinationRanges (a rule pinned
    # to another load balancer's IP), for the explanation.
    near_misses: tuple[str, ...] = ()

    @property
    def reach(self) -> Reach:
        states = {d.admitted for d in self.decisions}
        if None in states:
            return Reach.UNKNOWN
        if states == {True}:
            return Reach.ADMITTED
        return Reach.BLOCKED if states == {False} else Reach.PARTLY_BLOCKED

    @property
    def blocked(self) -> bool:
        return self.reach in (Reach.BLOCKED, Reach.PARTLY_BLOCKED)

    @property
    def fixable(self) -> bool:
        """Blocked, and only by what an allow rule of lbhc's may override."""
        return self.blocked and all(d.fixable for d in self.decisions if d.admitted is False)

    def explain(self) -> str:
        """One line: what the firewall does with these probes and which rule decides."""
        where = f"{self.destination}:{self.port}"
        if self.reach is Reach.ADMITTED:
            return f"probes to {where} admitted by {_rules_of(self.decisions)}"
        if self.reach is Reach.UNKNOWN:
            unknown = [d for d in self.decisions if d.admitted is None]
            return f"whether probes to {where} are admitted is unknown: {unknown[0].by}"
        blocked = [d for d in self.decisions if d.admitted is False]
        ranges = ", ".join(r for d in blocked for r in d.ranges)
        text = f"probes to {where} from {ranges} are dropped: {_rules_of(blocked)}"
        if self.near_misses:
            text += f" ({'; '.join(self.near_misses)})"
        return text


def _rules_of(decisions: Iterable[Decision]) -> str:
    return "; ".join(dict.fromkeys(d.by for d in decisions))


def cloud_provider_deny_rule(rule: Firewall) -> bool:
    """The cloud provider's per-LB deny rule (cloud-provider-gcp gce_loadbalancer_external.go
    ensureDenyNodeFirewall, MakeFirewallDenyName `k8s-fw-<lb>-deny`, at
    firewallPriorityDeny 1000 with `enableL4DenyFirewallRule`): its own allows then sit at
    firewallPriorityAllow, 999, above it."""
    return (
        rule.name.startswith("k8s-fw-")
        and rule.name.endswith("-deny")
        and bool(rule.denied)
        and rule.priority == CLOUD_PROVIDER_DENY_PRIORITY
    )


CLOUD_PROVIDER_DENY_PRIORITY = 1000
CLOUD_PROVIDER_ALLOW_PRIORITY = 999


@dataclass(frozen=True, slots=True)
class _Rule:
    """A VPC rule or a policy rule reduced to what matters for these probes."""

    name: str
    priority: int
    action: str
    sources: tuple[IPv4Net, ...]
    other_sources: bool
    dests: tuple[IPv4Net, ...] | None  # None: any destination
    other_dests: bool
    target: bool | None  # applies to the nodes: yes, or unknown (no rules are kept)
    fixable: bool = False

    def matches(self, source: int, destination: int) -> bool | None:
        src = any(_contains(n, source) for n in self.sources) or (
            None if self.other_sources else False
        )
        if src is False:
            return False
        dst: bool | None = True
        if self.dests is not None:
            dst = any(_contains(n, destination) for n in self.dests) or (
                None if self.other_dests else False
            )
        if dst is False:
            return False
        if src is True and dst is True and self.target is True:
            return True
        return None


@dataclass(frozen=True, slots=True)
class _Stage:
    """One policy, or the VPC rules: its rules in the order they are met. A stage whose
    rules all miss (or that says goto_next) hands the probe to the next."""

    rules: tuple[_Rule, ...]


def _contains(net: IPv4Net, address: int) -> bool:
    return int(net.network_address) <= address <= int(net.broadcast_address)


def _nets(ranges: Iterable[str]) -> tuple[IPv4Net, ...]:
    nets = []
    for text in ranges:
        try:
            net = ipaddress.ip_network(text, strict=False)
        except ValueError:
            continue  # not something GCE accepts; it cannot match
        if isinstance(net, IPv4Net):
            nets.append(net)
    return tuple(nets)


def _admits_port(entries: Sequence[FirewallAllowed], port: int) -> bool:
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


def _same_network(a: str, b: str) -> bool:
    return resource_path(a).rstrip("/") == resource_path(b).rstrip("/")


@dataclass
class ReachEvaluator:
    """What one effective firewall does with one check's probes to the nodes, for any
    destination: built once per (firewall, port), then asked per forwarding-rule IP.
    Verdicts depend on the destination only through rules with destination ranges, so
    they are computed once per distinct set of those that match."""

    firewall: EffectiveFirewall
    backends: Backends
    port: int
    sources: tuple[str, ...]
    extra_rules: tuple[Firewall, ...] = ()  # VPC rules as if they existed (a planned one)
    _stages: tuple[_Stage, ...] = field(init=False)
    _cells: tuple[tuple[int, int], ...] = field(init=False)  # elementary source intervals
    _dest_ranged: tuple[_Rule, ...] = field(init=False)
    _memo: dict[tuple[bool | None, ...], ProbeVerdict] = field(init=False, default_factory=dict)
    _near: tuple[tuple[str, tuple[IPv4Net, ...]], ...] = field(init=False)

    def __post_init__(self) -> None:
        vpc = self._vpc_stage((*self.firewall.rules, *self.extra_rules))
        network = [
            self._policy_stage(p.rules, p.display)
            for p in self.firewall.policies
            if p.type == NETWORK
        ]
        hierarchy = [
            self._policy_stage(p.rules, p.display)
            for p in self.firewall.policies
            if p.type == HIERARCHY
        ]
        ordered = [vpc, *network] if self.firewall.policy_after_vpc_rules else [*network, vpc]
        self._stages = (*hierarchy, *ordered)
        every = [r for s in self._stages for r in s.rules]
        self._dest_ranged = tuple(r for r in every if r.dests is not None)
        self._cells = self._split_sources(every)
        self._near = self._near_misses(self.firewall.rules)

    # -- building the stages ----------------------------------------------------------------

    def _target_of(self, tags: Sequence[str], accounts: Sequence[str]) -> bool | None:
        if tags:
            return bool(set(tags) & set(self.backends.tags))
        if accounts:
            known = self.backends.service_accounts
            return None if known is None else bool(set(accounts) & set(known))
        return True

    def _vpc_stage(self, rules: Iterable[Firewall]) -> _Stage:
        kept: list[_Rule] = []
        for rule in rules:
            if rule.disabled or rule.direction != "INGRESS" or not rule.source_ranges:
                continue  # source tags or accounts alone never match Google's probers
            if rule.network and not _same_network(rule.network, self.backends.network):
                continue
            deny = bool(rule.denied)
            if not _admits_port(rule.denied if deny else rule.allowed, self.port):
                continue
            target = self._target_of(rule.target_tags, rule.target_service_accounts)
            if target is False:
                continue
            action = DENY if deny else ALLOW
            kept.append(
                _Rule(
                    name=f"firewall rule {rule.name} ({action}, priority {rule.priority})",
                    priority=rule.priority,
                    action=action,
                    sources=_nets(rule.source_ranges),
                    other_sources=False,
                    dests=_nets(rule.destination_ranges) if rule.destination_ranges else None,
                    other_dests=False,
                    target=target,
                    fixable=cloud_provider_deny_rule(rule),
                )
            )
        # Lowest number first; at one priority a deny wins, so it is met first.
        kept.sort(key=lambda r: (r.priority, r.action != DENY))
        return _Stage(tuple(kept))

    def _policy_stage(self, rules: Iterable[PolicyRule], policy: str) -> _Stage:
        kept: list[_Rule] = []
        for rule in rules:
            if rule.disabled or rule.direction != "INGRESS":
                continue
            if rule.layer4 and not _admits_port(rule.layer4, self.port):
                continue
            if rule.target_resources and not any(
                _same_network(n, self.backends.network) for n in rule.target_resources
            ):
                continue
            target = (
                None
                if rule.target_secure_tags
                else self._target_of((), rule.target_service_accounts)
            )
            if target is False:
                continue
            sources = _nets(rule.src_ip_ranges)
            if not sources and not rule.other_sources:
                sources = _nets(["0.0.0.0/0"])
            kept.append(
                _Rule(
                    name=(
                        f"rule {rule.priority}{f' ({rule.rule_name})' if rule.rule_name else ''}"
                        f" of firewall policy {policy} ({rule.action})"
                    ),
                    priority=rule.priority,
                    action=rule.action,
                    sources=sources,
                    other_sources=rule.other_sources,
                    dests=(
                        _nets(rule.dest_ip_ranges)
                        if rule.dest_ip_ranges or rule.other_destinations
                        else None
                    ),
                    other_dests=rule.other_destinations,
                    target=target,
                )
            )
        kept.sort(key=lambda r: r.priority)
        return _Stage(tuple(kept))

    def _split_sources(self, rules: Sequence[_Rule]) -> tuple[tuple[int, int], ...]:
        cells: list[tuple[int, int]] = []
        for source in _nets(self.sources):
            low, high = int(source.network_address), int(source.broadcast_address)
            cuts = {low, high + 1}
            for rule in rules:
                for net in rule.sources:
                    start, end = int(net.network_address), int(net.broadcast_address)
                    if start <= high and end >= low:
                        cuts.update(c for c in (start, end + 1) if low < c <= high)
            edges = sorted(cuts)
            cells.extend((a, b - 1) for a, b in itertools.pairwise(edges))
        return tuple(cells)

    def _near_misses(
        self, rules: Iterable[Firewall]
    ) -> tuple[tuple[str, tuple[IPv4Net, ...]], ...]:
        near = []
        for rule in rules:
            if rule.disabled or rule.denied or not rule.destination_ranges:
                continue
            if rule.direction != "INGRESS" or not _admits_port(rule.allowed, self.port):
                continue
            if self._target_of(rule.target_tags, rule.target_service_accounts) is False:
                continue
            if not any(
                _contains(n, lo) for lo, _ in self._cells for n in _nets(rule.source_ranges)
            ):
                continue
            near.append((rule.name, _nets(rule.destination_ranges)))
        return tuple(near)

    # -- asking -----------------------------------------------------------------------------

    def verdict(self, destination: str) -> ProbeVerdict:
        try:
            address = int(ipaddress.IPv4Address(destination))
        except ValueError:
            return ProbeVerdict(
                destination,
                self.port,
                (Decision(self.sources, None, f"{destination!r} is not an IPv4 address"),),
            )
        key = tuple(_dest_match(r, address) for r in self._dest_ranged)
        cached = self._memo.get(key)
        if cached is not None and cached.destination == destination:
            return cached
        if cached is not None:
            found = ProbeVerdict(destination, self.port, cached.decisions, self._missed(address))
        else:
            found = ProbeVerdict(
                destination, self.port, self._decide(address), self._missed(address)
            )
            self._memo[key] = found
        return found

    def _missed(self, address: int) -> tuple[str, ...]:
        missed = [
            f"{name} admits only destination {', '.join(str(n) for n in nets)}"
            for name, nets in self._near
            if not any(_contains(n, address) for n in nets)
        ]
        return tuple(missed[:_MAX_NEAR_MISSES])

    def _decide(self, destination: int) -> tuple[Decision, ...]:
        merged: list[tuple[int, int, bool | None, str, bool]] = []
        for low, high in self._cells:
            admitted, by, fixable = self._walk(low, destination)
            last = merged[-1] if merged else None
            if last is not None and last[1] + 1 == low and last[2:] == (admitted, by, fixable):
                merged[-1] = (last[0], high, admitted, by, fixable)
            else:
                merged.append((low, high, admitted, by, fixable))
        return tuple(
            Decision(_cidrs(low, high), admitted, by, fixable)
            for low, high, admitted, by, fixable in merged
        )

    def _walk(self, source: int, destination: int) -> tuple[bool | None, str, bool]:
        for stage in self._stages:
            for rule in stage.rules:
                match = rule.matches(source, destination)
                if match is False:
                    continue
                if match is None:
                    return None, f"{rule.name} may apply and lbhc cannot evaluate it", False
                if rule.action == ALLOW:
                    return True, rule.name, False
                if rule.action == DENY:
                    return False, rule.name, rule.fixable
                if rule.action == GOTO_NEXT:
                    break
                return None, f"{rule.name} hands the decision to a security profile", False
        return False, "no rule admits them (the implied deny ingress)", True


def _dest_match(rule: _Rule, destination: int) -> bool | None:
    assert rule.dests is not None
    if any(_contains(n, destination) for n in rule.dests):
        return True
    return None if rule.other_dests else False


def _cidrs(low: int, high: int) -> tuple[str, ...]:
    first, last = ipaddress.IPv4Address(low), ipaddress.IPv4Address(high)
    return tuple(str(n) for n in ipaddress.summarize_address_range(first, last))
