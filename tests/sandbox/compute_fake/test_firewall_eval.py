"""The fake's ingress firewall evaluator, one table row per rule of the GCE semantics it models."""

from __future__ import annotations

from typing import Any

import pytest

from lbhc.sandbox.compute_fake.firewall_eval import (
    AFTER_CLASSIC,
    BEFORE_CLASSIC,
    Packet,
    Verdict,
    Vm,
    decide,
)

NET = "https://www.googleapis.com/compute/v1/projects/proj/global/networks/default"
OTHER_NET = "https://www.googleapis.com/compute/v1/projects/proj/global/networks/other"
LB_IP, OTHER_IP = "34.1.2.3", "34.9.9.9"
PROBE = Packet(source="35.191.7.8", destination=LB_IP, port=10256)
NODE = Vm(NET, frozenset({"node"}), frozenset({"nodes@proj.iam.gserviceaccount.com"}))
HC_SOURCES = ["35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"]


def fw(name: str, *, deny: bool = False, ports: list[str] | None = None, **fields: Any) -> Any:
    entry: dict[str, Any] = {"IPProtocol": fields.pop("protocol", "tcp")}
    if ports is None:
        ports = ["10256"]
    if ports:
        entry["ports"] = ports
    rule: dict[str, Any] = {
        "name": name,
        "network": NET,
        "direction": "INGRESS",
        "priority": 1000,
        "sourceRanges": HC_SOURCES,
        "denied" if deny else "allowed": [entry],
    }
    rule.update(fields)
    return rule


def prule(priority: int, action: str, **match: Any) -> dict[str, Any]:
    targets = {k: match.pop(k) for k in ("targetResources", "targetServiceAccounts") if k in match}
    match.setdefault("srcIpRanges", HC_SOURCES)
    match.setdefault("layer4Configs", [{"ipProtocol": "tcp", "ports": ["10256"]}])
    return {
        "priority": priority,
        "action": action,
        "direction": "INGRESS",
        "match": match,
        **targets,
    }


def policy(kind: str, name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "shortName": name, "type": kind, "rules": list(rules)}


VPC_CASES: list[tuple[str, list[dict[str, Any]], Packet, Vm, Verdict]] = [
    ("no rule: the implied deny", [], PROBE, NODE, Verdict(False, "")),
    ("a plain allow", [fw("a")], PROBE, NODE, Verdict(True, "a")),
    ("lower priority number wins", [fw("a", priority=900), fw("d", deny=True)], PROBE, NODE,
     Verdict(True, "a")),
    ("deny wins a tie", [fw("a"), fw("d", deny=True)], PROBE, NODE, Verdict(False, "d")),
    ("a disabled deny does not apply", [fw("a"), fw("d", deny=True, disabled=True)], PROBE, NODE,
     Verdict(True, "a")),
    ("a disabled allow does not apply", [fw("a", disabled=True)], PROBE, NODE, Verdict(False, "")),
    ("egress rules do not apply", [fw("a", direction="EGRESS")], PROBE, NODE, Verdict(False, "")),
    ("another network's rule does not apply", [fw("a", network=OTHER_NET)], PROBE, NODE,
     Verdict(False, "")),
    ("destinationRanges holding the LB IP", [fw("a", destinationRanges=[f"{LB_IP}/32"])], PROBE,
     NODE, Verdict(True, "a")),
    ("destinationRanges pinned to another IP", [fw("a", destinationRanges=[OTHER_IP])], PROBE,
     NODE, Verdict(False, "")),
    ("another port", [fw("a", ports=["80", "8000-9000"])], PROBE, NODE, Verdict(False, "")),
    ("a port range holding the port", [fw("a", ports=["10000-10300"])], PROBE, NODE,
     Verdict(True, "a")),
    ("no ports: every port of the protocol", [fw("a", ports=[])], PROBE, NODE, Verdict(True, "a")),
    ("protocol all", [fw("a", protocol="all", ports=[])], PROBE, NODE, Verdict(True, "a")),
    ("protocol by number", [fw("a", protocol="6")], PROBE, NODE, Verdict(True, "a")),
    ("udp is not tcp", [fw("a", protocol="udp")], PROBE, NODE, Verdict(False, "")),
    ("targetTags the VM carries", [fw("a", targetTags=["x", "node"])], PROBE, NODE,
     Verdict(True, "a")),
    ("targetTags it does not carry", [fw("a", targetTags=["x"])], PROBE, NODE, Verdict(False, "")),
    ("targetServiceAccounts it runs as",
     [fw("a", targetServiceAccounts=["nodes@proj.iam.gserviceaccount.com"])], PROBE, NODE,
     Verdict(True, "a")),
    ("targetServiceAccounts it does not run as",
     [fw("a", targetServiceAccounts=["web@proj.iam.gserviceaccount.com"])], PROBE, NODE,
     Verdict(False, "")),
    ("no targets: every VM of the network", [fw("a")], PROBE, Vm(NET), Verdict(True, "a")),
    ("sourceTags never match a prober", [fw("a", sourceRanges=[], sourceTags=["node"])], PROBE,
     NODE, Verdict(False, "")),
    # A rule admitting part of a probe range admits probes from that part only.
    ("partial source coverage: inside", [fw("a", sourceRanges=["35.191.0.0/17"])],
     Packet("35.191.127.255", LB_IP, 10256), NODE, Verdict(True, "a")),
    ("partial source coverage: outside", [fw("a", sourceRanges=["35.191.0.0/17"])],
     Packet("35.191.128.0", LB_IP, 10256), NODE, Verdict(False, "")),
    ("one probe range covered, another not", [fw("a", sourceRanges=["209.85.152.0/22"])],
     Packet("209.85.204.1", LB_IP, 10256), NODE, Verdict(False, "")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rules", "packet", "vm", "expected"),
    [case[1:] for case in VPC_CASES],
    ids=[case[0] for case in VPC_CASES],
)
def test_vpc_rules(rules: list[dict[str, Any]], packet: Packet, vm: Vm, expected: Verdict) -> None:
    assert decide(packet, vm, rules) == expected


ALLOW = [fw("vpc-allow")]
DENY = [fw("vpc-deny", deny=True)]
ORG_DENY = policy("HIERARCHY", "org", prule(10, "deny"))
ORG_NEXT = policy("HIERARCHY", "org", prule(10, "goto_next"), prule(20, "deny"))
FOLDER_ALLOW = policy("HIERARCHY", "folder", prule(10, "allow"))
NET_ALLOW = policy("NETWORK", "netpol", prule(100, "allow"))
NET_DENY = policy("NETWORK", "netpol", prule(100, "deny"))

POLICY_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], str, Verdict]] = [
    ("a hierarchical deny beats a VPC allow", ALLOW, [ORG_DENY], AFTER_CLASSIC,
     Verdict(False, "org/10")),
    ("goto_next passes to the next level", DENY, [ORG_NEXT, FOLDER_ALLOW], AFTER_CLASSIC,
     Verdict(True, "folder/10")),
    ("goto_next through every hierarchy level to the VPC rules", ALLOW,
     [policy("HIERARCHY", "org", prule(10, "goto_next"))], AFTER_CLASSIC,
     Verdict(True, "vpc-allow")),
    ("the organization policy comes first", ALLOW, [ORG_DENY, FOLDER_ALLOW], AFTER_CLASSIC,
     Verdict(False, "org/10")),
    ("after classic: VPC rules first", DENY, [NET_ALLOW], AFTER_CLASSIC,
     Verdict(False, "vpc-deny")),
    ("after classic: no VPC rule matches, the network policy decides", [], [NET_ALLOW],
     AFTER_CLASSIC, Verdict(True, "netpol/100")),
    ("before classic: the network policy first", DENY, [NET_ALLOW], BEFORE_CLASSIC,
     Verdict(True, "netpol/100")),
    ("before classic: a network deny beats a VPC allow", ALLOW, [NET_DENY], BEFORE_CLASSIC,
     Verdict(False, "netpol/100")),
    ("before classic: goto_next falls to the VPC rules", ALLOW,
     [policy("NETWORK", "netpol", prule(100, "goto_next"))], BEFORE_CLASSIC,
     Verdict(True, "vpc-allow")),
    ("a network goto_next with no VPC match: the implied deny", [],
     [policy("NETWORK", "netpol", prule(100, "goto_next"))], AFTER_CLASSIC, Verdict(False, "")),
    ("policy rules in priority order, not list order", [],
     [policy("NETWORK", "netpol", prule(200, "deny"), prule(100, "allow"))], AFTER_CLASSIC,
     Verdict(True, "netpol/100")),
    ("a disabled policy rule does not apply", ALLOW,
     [policy("HIERARCHY", "org", {**prule(10, "deny"), "disabled": True})], AFTER_CLASSIC,
     Verdict(True, "vpc-allow")),
    ("targetResources naming another network", ALLOW,
     [policy("HIERARCHY", "org", prule(10, "deny", targetResources=[OTHER_NET]))], AFTER_CLASSIC,
     Verdict(True, "vpc-allow")),
    ("targetResources naming the VM's network", ALLOW,
     [policy("HIERARCHY", "org", prule(10, "deny", targetResources=[NET]))], AFTER_CLASSIC,
     Verdict(False, "org/10")),
    ("targetServiceAccounts the VM does not run as", ALLOW,
     [policy("HIERARCHY", "org", prule(10, "deny", targetServiceAccounts=["x@p.iam"]))],
     AFTER_CLASSIC, Verdict(True, "vpc-allow")),
    ("destIpRanges pinned to another IP", [],
     [policy("NETWORK", "netpol", prule(100, "allow", destIpRanges=[f"{OTHER_IP}/32"]))],
     AFTER_CLASSIC, Verdict(False, "")),
    ("srcIpRanges covering part of the probe ranges", [],
     [policy("NETWORK", "netpol", prule(100, "allow", srcIpRanges=["209.85.152.0/22"]))],
     AFTER_CLASSIC, Verdict(False, "")),
    ("a source named by secure tags is never a prober", [],
     [policy("NETWORK", "netpol", prule(100, "allow", srcIpRanges=[], srcSecureTags=[{}]))],
     AFTER_CLASSIC, Verdict(False, "")),
    ("layer4 all", [],
     [policy("NETWORK", "netpol", prule(100, "allow", layer4Configs=[{"ipProtocol": "all"}]))],
     AFTER_CLASSIC, Verdict(True, "netpol/100")),
    ("layer4 on another port", [],
     [policy("NETWORK", "netpol",
             prule(100, "allow", layer4Configs=[{"ipProtocol": "tcp", "ports": ["80"]}]))],
     AFTER_CLASSIC, Verdict(False, "")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rules", "policies", "order", "expected"),
    [case[1:] for case in POLICY_CASES],
    ids=[case[0] for case in POLICY_CASES],
)
def test_policies_and_order(
    rules: list[dict[str, Any]], policies: list[dict[str, Any]], order: str, expected: Verdict
) -> None:
    assert decide(PROBE, NODE, rules, policies, order) == expected
