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

from lbhc.model.cloud import Firewall
from lbhc.model.firewall import ALLOW, DENY, GOTO_NEXT, HIERARCHY, NETWORK, EffectiveFirewall
from lbhc.planner.firewall_rules import (
    Backends,
    ProbeRule,
    Span,
    admits_port,
    policy_rules,
    spans,
    target_of,
    vpc_rules,
)

_MAX_NEAR_MISSES = 2
_IMPLIED_DENY = "no rule admits them (the implied deny ingress)"


class Reach(StrEnum):
    ADMITTED = "admitted"  # every probe source reaches the nodes
    BLOCKED = "blocked"  # none does: every instance reads UNHEALTHY, the pool fails open
    PARTLY_BLOCKED = "partly-blocked"  # some probe sources are dropped
    UNKNOWN = "unknown"  # a rule lbhc cannot evaluate could decide


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


# A rule where GCE meets it: (stage, position within the stage).
_Placed = tuple[tuple[int, int], ProbeRule]
# ... and whether it matches the destination asked about (None: cannot tell).
_Met = tuple[tuple[int, int], ProbeRule, bool | None]


@dataclass
class ReachEvaluator:
    """What one effective firewall does with one check's probes to the nodes, for any
    destination: built once per (firewall, port), then asked per forwarding-rule IP.

    A destination changes the verdict only through rules with destination ranges, which
    are indexed by address (the cloud provider pins its rules, and with
    enableL4DenyFirewallRule denies, to single load-balancer IPs: thousands of /32s), so a
    verdict walks the rules without destination ranges plus the few that name its IP, and
    destinations that match the same ones share one computed verdict."""

    firewall: EffectiveFirewall
    backends: Backends
    port: int
    sources: tuple[str, ...]
    extra_rules: tuple[Firewall, ...] = ()  # VPC rules as if they existed (a planned one)
    _anywhere: list[_Placed] = field(init=False)  # rules without destination ranges
    _by_address: dict[int, list[_Placed]] = field(init=False)  # single-address destinations
    _wide: list[_Placed] = field(init=False)  # other destination-ranged rules
    _cells: tuple[Span, ...] = field(init=False)  # elementary probe source intervals
    _near: tuple[tuple[str, tuple[Span, ...]], ...] = field(init=False)
    _memo: dict[tuple[tuple[tuple[int, int], bool | None], ...], tuple[Decision, ...]] = field(
        init=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        port, nodes, fw = self.port, self.backends, self.firewall
        vpc = vpc_rules((*fw.rules, *self.extra_rules), nodes, port)
        network = [
            policy_rules(p.rules, p.display, nodes, port) for p in fw.policies if p.type == NETWORK
        ]
        hierarchy = [
            policy_rules(p.rules, p.display, nodes, port)
            for p in fw.policies
            if p.type == HIERARCHY
        ]
        ordered = [vpc, *network] if fw.policy_after_vpc_rules else [*network, vpc]
        placed = [
            ((stage, position), rule)
            for stage, rules in enumerate((*hierarchy, *ordered))
            for position, rule in enumerate(rules)
        ]
        self._anywhere, self._by_address, self._wide = [], {}, []
        for entry in placed:
            dests = entry[1].dests
            if dests is None:
                self._anywhere.append(entry)
            elif len(dests) == 1 and dests[0][0] == dests[0][1] and not entry[1].other_dests:
                self._by_address.setdefault(dests[0][0], []).append(entry)
            else:
                self._wide.append(entry)
        self._cells = self._split_sources([rule for _, rule in placed])
        self._near = self._near_misses(fw.rules)

    def _split_sources(self, rules: Sequence[ProbeRule]) -> tuple[Span, ...]:
        """The probe ranges cut wherever a rule's source ranges begin or end: within one
        cell, every rule matches all of it or none of it."""
        cells: list[Span] = []
        for low, high in spans(self.sources):
            cuts = {low, high + 1}
            for rule in rules:
                for start, end in rule.sources:
                    if start <= high and end >= low:
                        cuts.update(c for c in (start, end + 1) if low < c <= high)
            cells.extend((a, b - 1) for a, b in itertools.pairwise(sorted(cuts)))
        return tuple(cells)

    def _near_misses(self, rules: Iterable[Firewall]) -> tuple[tuple[str, tuple[Span, ...]], ...]:
        """Allow rules on the port and the nodes, admitting probe sources, pinned to
        destinations: the usual reason a pool's probes find no rule."""
        near = []
        for rule in rules:
            if rule.disabled or rule.denied or not rule.destination_ranges:
                continue
            if rule.direction != "INGRESS" or not admits_port(rule.allowed, self.port):
                continue
            if target_of(self.backends, rule.target_tags, rule.target_service_accounts) is False:
                continue
            sources = spans(rule.source_ranges)
            if any(low <= cell <= high for cell, _ in self._cells for low, high in sources):
                near.append((rule.name, spans(rule.destination_ranges)))
        return tuple(near)

    # -- asking -----------------------------------------------------------------------------

    def verdict(self, destination: str) -> ProbeVerdict:
        try:
            address = int(ipaddress.IPv4Address(destination))
        except ValueError:
            unknown = Decision(self.sources, None, f"{destination!r} is not an IPv4 address")
            return ProbeVerdict(destination, self.port, (unknown,))
        named: list[_Met] = [
            (place, rule, True) for place, rule in self._by_address.get(address, ())
        ]
        named += [
            (place, rule, match)
            for place, rule in self._wide
            if (match := rule.dest_match(address)) is not False
        ]
        # Places are unique, so the sort never compares the matches.
        key = tuple(sorted((place, match) for place, _, match in named))
        decisions = self._memo.get(key)
        if decisions is None:
            decisions = self._memo[key] = self._decide(named)
        return ProbeVerdict(destination, self.port, decisions, self._missed(address))

    def _missed(self, address: int) -> tuple[str, ...]:
        missed = [
            f"{name} admits only destination {', '.join(_cidr_text(s) for s in dests)}"
            for name, dests in self._near
            if not any(low <= address <= high for low, high in dests)
        ]
        return tuple(missed[:_MAX_NEAR_MISSES])

    def _decide(self, named: Sequence[_Met]) -> tuple[Decision, ...]:
        """Each cell's decision, adjacent cells decided alike merged into ranges."""
        anywhere: list[_Met] = [(place, rule, True) for place, rule in self._anywhere]
        met = sorted([*anywhere, *named], key=lambda entry: entry[0])
        merged: list[tuple[int, int, bool | None, str, bool]] = []
        for low, high in self._cells:
            admitted, by, fixable = _walk(met, low)
            last = merged[-1] if merged else None
            if last is not None and last[1] + 1 == low and last[2:] == (admitted, by, fixable):
                merged[-1] = (last[0], high, admitted, by, fixable)
            else:
                merged.append((low, high, admitted, by, fixable))
        return tuple(
            Decision(_cidrs(low, high), admitted, by, fixable)
            for low, high, admitted, by, fixable in merged
        )


def _walk(met: Sequence[_Met], source: int) -> tuple[bool | None, str, bool]:
    """The first rule that decides a probe from `source`, stage by stage; `met` holds the
    rules for this destination in GCE's order with whether the destination matches."""
    skipped = -1  # a stage that said goto_next
    for (stage, _), rule, dest in met:
        if stage == skipped:
            continue
        found = (rule.source_match(source), dest, rule.target)
        if False in found:
            continue
        if None in found:
            return None, f"{rule.name} may apply and lbhc cannot evaluate it", False
        if rule.action == ALLOW:
            return True, rule.name, False
        if rule.action == DENY:
            return False, rule.name, rule.fixable
        if rule.action == GOTO_NEXT:
            skipped = stage
            continue
        return None, f"{rule.name} hands the decision to a security profile", False
    return False, _IMPLIED_DENY, True


def _cidr_text(span: Span) -> str:
    return ", ".join(_cidrs(*span))


def _cidrs(low: int, high: int) -> tuple[str, ...]:
    first, last = ipaddress.IPv4Address(low), ipaddress.IPv4Address(high)
    return tuple(str(n) for n in ipaddress.summarize_address_range(first, last))
