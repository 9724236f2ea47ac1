"""Networks and getEffectiveFirewalls through the real google-cloud-compute NetworksClient,
over a socket and in-process through `responses`."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake

P = "proj"
NET = "https://www.googleapis.com/compute/v1/projects/proj/global/networks/default"
BEFORE = "BEFORE_CLASSIC_FIREWALL"
MAYBE = {"priority": 1, "action": "maybe"}
HC_SOURCES = ["35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"]
ORG_POLICY = {
    "name": "123456",
    "shortName": "org-baseline",
    "displayName": "org-baseline",
    "type": "HIERARCHY",
    "priority": 0,
    "rules": [
        {
            "priority": 10,
            "action": "goto_next",
            "direction": "INGRESS",
            "match": {
                "srcIpRanges": HC_SOURCES,
                "layer4Configs": [{"ipProtocol": "tcp", "ports": ["10256"]}],
            },
        }
    ],
}
NET_POLICY = {
    "name": "netpol",
    "type": "NETWORK",
    "rules": [
        {
            "priority": 100,
            "action": "deny",
            "direction": "INGRESS",
            "match": {"srcIpRanges": ["0.0.0.0/0"], "layer4Configs": [{"ipProtocol": "all"}]},
            "targetResources": [NET],
        }
    ],
}


def seed_firewalls(fake: ComputeFake) -> None:
    fake.add_network(P, "other")
    fake.add_firewall(P, "hc", allowed=[{"IPProtocol": "tcp", "ports": ["10256"]}],
                      sourceRanges=HC_SOURCES, targetTags=["node"])  # fmt: skip
    fake.add_firewall(P, "elsewhere", network="other", allowed=[{"IPProtocol": "icmp"}])


def test_effective_firewalls_list_the_networks_rules_and_policies(
    clients: Any, fake: ComputeFake
) -> None:
    seed_firewalls(fake)
    fake.add_firewall_policy(P, "default", NET_POLICY)
    fake.add_firewall_policy(P, "default", ORG_POLICY)  # hierarchical ones are listed first
    got = clients.networks.get_effective_firewalls(project=P, network="default", retry=None)
    assert [f.name for f in got.firewalls] == ["hc"]  # not the other network's rule
    full = compute_v1.Firewall.to_dict(got.firewalls[0])
    listed = clients.firewalls.list(project=P, retry=None)
    assert full == next(compute_v1.Firewall.to_dict(f) for f in listed if f.name == "hc")
    assert [(p.short_name or p.name, p.type_) for p in got.firewall_policys] == [
        ("org-baseline", "HIERARCHY"),
        ("netpol", "NETWORK"),
    ]
    [rule] = got.firewall_policys[1].rules
    assert (rule.action, rule.priority, list(rule.target_resources)) == ("deny", 100, [NET])
    assert rule.match.layer4_configs[0].ip_protocol == "all"
    empty = clients.networks.get_effective_firewalls(project=P, network="other", retry=None)
    assert [f.name for f in empty.firewalls] == ["elsewhere"] and not empty.firewall_policys


def test_effective_firewalls_of_an_unknown_network_is_not_found(clients: Any) -> None:
    with pytest.raises(gexc.NotFound):
        clients.networks.get_effective_firewalls(project=P, network="nope", retry=None)


def test_enforcement_order_is_the_owners_to_set(clients: Any, fake: ComputeFake) -> None:
    get = clients.networks.get
    assert (
        get(project=P, network="default", retry=None).network_firewall_policy_enforcement_order
        == "AFTER_CLASSIC_FIREWALL"
    )
    fake.set_network_firewall_policy_enforcement_order(P, "default", "BEFORE_CLASSIC_FIREWALL")
    assert (
        get(project=P, network="default", retry=None).network_firewall_policy_enforcement_order
        == "BEFORE_CLASSIC_FIREWALL"
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda f: f.set_network_firewall_policy_enforcement_order(P, "default", "LAST"), "order"),
        (lambda f: f.set_network_firewall_policy_enforcement_order(P, "nope", BEFORE), "seeded"),
        (lambda f: f.add_firewall_policy(P, "nope", NET_POLICY), "not seeded"),
        (lambda f: f.add_firewall_policy(P, "default", {**NET_POLICY, "type": "SYSTEM"}), "type"),
        (lambda f: f.add_firewall_policy(P, "default", {**NET_POLICY, "color": 1}), "unknown"),
        (lambda f: f.add_firewall_policy(P, "default", {**NET_POLICY, "rules": [MAYBE]}), "action"),
        (lambda f: [f.add_firewall_policy(P, "default", NET_POLICY) for _ in range(2)], "already"),
    ],
)  # fmt: skip
def test_owner_api_refuses_what_gce_would_not_hold(
    fake: ComputeFake, call: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        call(fake)


def test_seeded_instance_service_accounts_are_shown(clients: Any, fake: ComputeFake) -> None:
    fake.add_instance(
        P, "us-central1-a", "n1", service_accounts=["nodes@proj.iam.gserviceaccount.com"]
    )
    got = clients.instances.get(project=P, zone="us-central1-a", instance="n1", retry=None)
    assert [a.email for a in got.service_accounts] == ["nodes@proj.iam.gserviceaccount.com"]
