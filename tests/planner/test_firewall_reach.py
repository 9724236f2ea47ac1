"""What the effective firewall does with Google's health-check probes (planner/firewall_reach):
one table of VPC rules and policies, each row the verdict GCE's rules give."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from lbhc.model.cloud import Firewall, FirewallAllowed
from lbhc.model.firewall import EffectiveFirewall, FirewallPolicy, PolicyRule
from lbhc.planner.config import HEALTH_CHECKER_RANGES
from lbhc.planner.firewall_reach import Reach, ReachEvaluator
from lbhc.planner.firewall_rules import Backends

NETWORK = "https://www.googleapis.com/compute/v1/projects/p/global/networks/default"
OTHER_NETWORK = "projects/p/global/networks/other"
NODES = Backends(NETWORK, ("gke-node",))
LB_IP, OTHER_IP = "34.1.1.1", "34.2.2.2"
PORT = 10256


def allow(name: str, **fields: Any) -> Firewall:
    """An allow rule shaped like the cloud provider's node check firewall, unpinned."""
    base: dict[str, Any] = {
        "name": name,
        "network": NETWORK,
        "priority": 1000,
        "allowed": (FirewallAllowed("tcp", (str(PORT),)),),
        "source_ranges": HEALTH_CHECKER_RANGES,
        "target_tags": ("gke-node",),
    }
    return Firewall(**{**base, **fields})


def deny(name: str, **fields: Any) -> Firewall:
    fields.setdefault("denied", (FirewallAllowed("all"),))
    return replace(allow(name, **fields), allowed=())


def policy(kind: str, *rules: PolicyRule, name: str = "p1") -> FirewallPolicy:
    return FirewallPolicy(name=name, type=kind, rules=rules, short_name=name)


def prule(priority: int, action: str, **fields: Any) -> PolicyRule:
    fields.setdefault("src_ip_ranges", ("0.0.0.0/0",))
    return PolicyRule(priority=priority, action=action, **fields)


@dataclass(frozen=True)
class Case:
    desc: str
    rules: tuple[Firewall, ...] = ()
    policies: tuple[FirewallPolicy, ...] = ()
    reach: Reach = Reach.ADMITTED
    by: str = ""  # a piece of the deciding rule's text
    fixable: bool | None = None
    destination: str = LB_IP
    nodes: Backends = NODES
    policy_after_vpc_rules: bool = True


CASES = [
    Case("no rule at all: the implied deny", reach=Reach.BLOCKED, by="implied deny", fixable=True),
    Case("an unpinned allow on the port", rules=(allow("hc"),), by="hc (allow"),
    Case(
        "pinned to another load balancer's IP: a near miss, then the implied deny",
        rules=(allow("k8s-x-node-http-hc", destination_ranges=(OTHER_IP,)),),
        reach=Reach.BLOCKED,
        by="admits only destination 34.2.2.2/32",
        fixable=True,
    ),
    Case(
        "pinned to this load balancer's IP",
        rules=(allow("k8s-x-node-http-hc", destination_ranges=(LB_IP,)),),
    ),
    Case(
        "a destination range covering this IP",
        rules=(allow("hc", destination_ranges=("34.1.0.0/16",)),),
    ),
    Case(
        "a destination range covering another IP only",
        rules=(allow("hc", destination_ranges=("34.2.0.0/16",)),),
        reach=Reach.BLOCKED,
        by="admits only destination 34.2.0.0/16",
    ),
    Case(
        "policy rule on a destination address group may match: unknown",
        policies=(policy("NETWORK", prule(100, "allow", other_destinations=True)),),
        reach=Reach.UNKNOWN,
    ),
    Case(
        "another port only",
        rules=(allow("hc", allowed=(FirewallAllowed("tcp", ("80", "443")),)),),
        reach=Reach.BLOCKED,
        fixable=True,
    ),
    Case(
        "a port range covering it",
        rules=(allow("hc", allowed=(FirewallAllowed("tcp", ("10000-11000",)),)),),
    ),
    Case("protocol all", rules=(allow("hc", allowed=(FirewallAllowed("all"),)),)),
    Case(
        "udp only",
        rules=(allow("hc", allowed=(FirewallAllowed("udp", (str(PORT),)),)),),
        reach=Reach.BLOCKED,
    ),
    Case("disabled allow", rules=(allow("hc", disabled=True),), reach=Reach.BLOCKED),
    Case(
        "egress allow does not admit ingress",
        rules=(allow("hc", direction="EGRESS"),),
        reach=Reach.BLOCKED,
    ),
    Case(
        "target tag the nodes do not carry",
        rules=(allow("hc", target_tags=("other-node",)),),
        reach=Reach.BLOCKED,
    ),
    Case("no targets: every instance of the network", rules=(allow("hc", target_tags=()),)),
    Case(
        "target service account, nodes' accounts unknown",
        rules=(allow("hc", target_tags=(), target_service_accounts=("sa@p.iam",)),),
        reach=Reach.UNKNOWN,
        by="cannot evaluate",
    ),
    Case(
        "target service account the nodes run as",
        rules=(allow("hc", target_tags=(), target_service_accounts=("sa@p.iam",)),),
        nodes=replace(NODES, service_accounts=("sa@p.iam",)),
    ),
    Case(
        "target service account the nodes do not run as",
        rules=(allow("hc", target_tags=(), target_service_accounts=("sa@p.iam",)),),
        nodes=replace(NODES, service_accounts=("other@p.iam",)),
        reach=Reach.BLOCKED,
    ),
    Case(
        "source tags alone never match Google's probers",
        rules=(allow("hc", source_ranges=(), source_tags=("x",)),),
        reach=Reach.BLOCKED,
    ),
    Case(
        "a rule on another network",
        rules=(allow("hc", network=OTHER_NETWORK),),
        reach=Reach.BLOCKED,
    ),
    Case(
        "partial source coverage: one range admitted",
        rules=(allow("hc", source_ranges=("35.191.0.0/16",)),),
        reach=Reach.PARTLY_BLOCKED,
        by="209.85.152.0/22, 209.85.204.0/22",
        fixable=True,
    ),
    Case(
        "partial source coverage inside a range",
        rules=(allow("hc", source_ranges=("35.191.0.0/17", "209.85.152.0/21")),),
        reach=Reach.PARTLY_BLOCKED,
        by="35.191.128.0/17",
    ),
    Case(
        "deny wins a tie at one priority",
        rules=(allow("hc"), deny("block", priority=1000, source_ranges=("0.0.0.0/0",))),
        reach=Reach.BLOCKED,
        by="block (deny",
        fixable=False,
    ),
    Case(
        "a lower number wins: allow 999 over deny 1000",
        rules=(allow("hc", priority=999), deny("block", source_ranges=("0.0.0.0/0",))),
    ),
    Case(
        "a lower number wins: deny 900 over allow 1000",
        rules=(allow("hc"), deny("block", priority=900, source_ranges=("0.0.0.0/0",))),
        reach=Reach.BLOCKED,
        fixable=False,
    ),
    Case(
        "the cloud provider's per-LB deny at 1000 is overridable (its allows sit at 999)",
        rules=(
            deny("k8s-fw-a123-deny", source_ranges=("0.0.0.0/0",), destination_ranges=(LB_IP,)),
        ),
        reach=Reach.BLOCKED,
        by="k8s-fw-a123-deny",
        fixable=True,
    ),
    Case(
        "the cloud provider's allow at 999 pinned to one IP, its deny at 1000",
        rules=(
            allow("k8s-x-node-http-hc", priority=999, destination_ranges=(LB_IP,)),
            deny("k8s-fw-a123-deny", source_ranges=("0.0.0.0/0",), destination_ranges=(LB_IP,)),
        ),
    ),
    Case(
        "hierarchical deny comes before any VPC allow",
        rules=(allow("hc"),),
        policies=(policy("HIERARCHY", prule(100, "deny")),),
        reach=Reach.BLOCKED,
        by="firewall policy p1 (deny)",
        fixable=False,
    ),
    Case(
        "hierarchical goto_next hands over to the VPC rules",
        rules=(allow("hc"),),
        policies=(policy("HIERARCHY", prule(100, "goto_next")),),
    ),
    Case(
        "hierarchical allow admits without any VPC rule",
        policies=(policy("HIERARCHY", prule(100, "allow", src_ip_ranges=HEALTH_CHECKER_RANGES)),),
        by="firewall policy p1 (allow)",
    ),
    Case(
        "hierarchical rule for another network does not apply",
        policies=(policy("HIERARCHY", prule(100, "deny", target_resources=(OTHER_NETWORK,))),),
        rules=(allow("hc"),),
    ),
    Case(
        "network policy after the VPC rules: the VPC allow decides",
        rules=(allow("hc"),),
        policies=(policy("NETWORK", prule(100, "deny")),),
    ),
    Case(
        "network policy before the VPC rules: its deny decides",
        rules=(allow("hc"),),
        policies=(policy("NETWORK", prule(100, "deny")),),
        policy_after_vpc_rules=False,
        reach=Reach.BLOCKED,
    ),
    Case(
        "network policy allows what no VPC rule matches",
        policies=(policy("NETWORK", prule(100, "allow")),),
    ),
    Case(
        "policy rule on an address group may match: unknown",
        policies=(policy("HIERARCHY", prule(100, "deny", src_ip_ranges=(), other_sources=True)),),
        rules=(allow("hc"),),
        reach=Reach.UNKNOWN,
    ),
    Case(
        "policy rule on secure tags of the targets: unknown",
        policies=(policy("NETWORK", prule(100, "allow", target_secure_tags=True)),),
        reach=Reach.UNKNOWN,
    ),
    Case(
        "disabled policy deny",
        policies=(policy("HIERARCHY", prule(100, "deny", disabled=True)),),
        rules=(allow("hc"),),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.desc for c in CASES])
def test_probe_reach(case: Case) -> None:
    firewall = EffectiveFirewall(
        NETWORK, case.rules, case.policies, policy_after_vpc_rules=case.policy_after_vpc_rules
    )
    verdict = ReachEvaluator(firewall, case.nodes, PORT, HEALTH_CHECKER_RANGES).verdict(
        case.destination
    )
    assert verdict.reach is case.reach, verdict.explain()
    assert case.by in verdict.explain()
    if case.fixable is not None:
        assert verdict.fixable is case.fixable, verdict.explain()


def test_verdicts_are_per_destination_and_reuse_their_class() -> None:
    """A rule pinned to one IP admits that load balancer's probes and no other's; two other
    IPs share one verdict (one class) with their own destination in the text."""
    pinned = allow("k8s-x-node-http-hc", destination_ranges=(LB_IP,))
    evaluator = ReachEvaluator(
        EffectiveFirewall(NETWORK, (pinned,)), NODES, PORT, HEALTH_CHECKER_RANGES
    )
    first, second, third = (evaluator.verdict(ip) for ip in (LB_IP, OTHER_IP, "34.3.3.3"))
    assert (first.reach, second.reach, third.reach) == (
        Reach.ADMITTED,
        Reach.BLOCKED,
        Reach.BLOCKED,
    )
    assert second.decisions == third.decisions
    assert "34.3.3.3:10256" in third.explain() and OTHER_IP not in third.explain()


def test_a_planned_rule_is_evaluated_as_if_it_existed() -> None:
    """extra_rules: what lbhc's own rule would change, before it is made."""
    pinned = allow("k8s-x-node-http-hc", destination_ranges=(LB_IP,))
    firewall = EffectiveFirewall(NETWORK, (pinned,))
    before = ReachEvaluator(firewall, NODES, PORT, HEALTH_CHECKER_RANGES).verdict(OTHER_IP)
    after = ReachEvaluator(
        firewall, NODES, PORT, HEALTH_CHECKER_RANGES, extra_rules=(allow("ours"),)
    ).verdict(OTHER_IP)
    assert (before.reach, after.reach) == (Reach.BLOCKED, Reach.ADMITTED)
    assert "ours (allow" in after.explain()
