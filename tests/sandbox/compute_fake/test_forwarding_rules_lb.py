"""Forwarding rules of backend-service load balancers (EXTERNAL and INTERNAL passthrough) and
forwardingRules.aggregatedList, through the real ForwardingRulesClient and a google-auth
session, over both transports."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake
from tests.sandbox.compute_fake.conftest import aggregated_names
from tests.sandbox.compute_fake.lb_world import (
    CANONICAL,
    NEG,
    RULES,
    SERVICES,
    P,
    R,
    seed,
    service_fields,
)

EXTERNAL = f"{CANONICAL}{SERVICES}/bs"
INTERNAL = f"{CANONICAL}{SERVICES}/ilb"
POOL = f"projects/{P}/regions/{R}/targetPools/pool"


@pytest.fixture
def world(fake: ComputeFake) -> ComputeFake:
    seed(fake)
    fake.add_backend_service(P, R, "bs", **service_fields())
    fake.add_backend_service(
        P, R, "ilb", **service_fields(loadBalancingScheme="INTERNAL", backends=[{"group": NEG}])
    )
    fake.add_target_pool(P, R, "pool")
    return fake


def test_internal_rule_round_trip(clients: Any, world: ComputeFake) -> None:
    body = compute_v1.ForwardingRule(
        name="ilb",
        backend_service=INTERNAL,
        load_balancing_scheme="INTERNAL",
        I_p_protocol="TCP",
        ports=["80", "10256"],
    )
    clients.forwarding_rules.insert_unary(
        project=P, region=R, forwarding_rule_resource=body, retry=None
    )
    got = clients.forwarding_rules.get(project=P, region=R, forwarding_rule="ilb", retry=None)
    assert (got.load_balancing_scheme, list(got.ports), got.backend_service) == (
        "INTERNAL",
        ["80", "10256"],
        INTERNAL,
    )
    assert got.network == f"{CANONICAL}projects/{P}/global/networks/default"
    assert got.I_p_address.startswith("10.") and not got.port_range


def test_external_rule_with_all_ports(api: Any, world: ComputeFake) -> None:
    body = {"name": "nlb", "backendService": EXTERNAL, "allPorts": True, "IPProtocol": "UDP"}
    api.call("POST", RULES, body)
    rule = world.forwarding_rules(P, R)["nlb"]
    assert (rule["allPorts"], rule["loadBalancingScheme"], rule["IPProtocol"]) == (
        True,
        "EXTERNAL",
        "UDP",
    )
    assert "network" not in rule and "portRange" not in rule


@pytest.mark.parametrize(
    ("fields", "reason", "words"),
    [
        ({"backendService": INTERNAL}, "invalid", "loadBalancingScheme is INTERNAL"),
        (
            {"backendService": EXTERNAL, "loadBalancingScheme": "INTERNAL", "ports": ["80"]},
            "invalid",
            "loadBalancingScheme is EXTERNAL",
        ),
        (
            {"backendService": EXTERNAL, "portRange": "80", "ports": ["80"]},
            "invalid",
            "mutually exclusive",
        ),
        (
            {"backendService": EXTERNAL, "ports": ["1", "2", "3", "4", "5", "6"]},
            "invalid",
            "five",
        ),
        ({"backendService": EXTERNAL, "ports": ["80"], "IPProtocol": "ICMP"}, "invalid", "TCP"),
        ({"backendService": EXTERNAL, "IPProtocol": "L3_DEFAULT"}, "invalid", "allPorts"),
        ({"backendService": EXTERNAL, "ports": ["99999"]}, "invalid", "port range"),
        (
            {"backendService": INTERNAL, "loadBalancingScheme": "INTERNAL"},
            "required",
            "resource.ports",
        ),
        (
            {"backendService": INTERNAL, "loadBalancingScheme": "INTERNAL", "portRange": "80"},
            "invalid",
            "portRange",
        ),
        ({"backendService": EXTERNAL, "network": "default"}, "invalid", "INTERNAL"),
        ({"target": POOL, "loadBalancingScheme": "INTERNAL"}, "invalid", "EXTERNAL"),
        ({"target": POOL, "ports": ["80"]}, "invalid", "target pool"),
        (
            {"backendService": EXTERNAL, "loadBalancingScheme": "INTERNAL_MANAGED"},
            "invalid",
            "passthrough",
        ),
        (
            {
                "backendService": INTERNAL,
                "loadBalancingScheme": "INTERNAL",
                "ports": ["80"],
                "subnetwork": f"projects/{P}/regions/europe-west1/subnetworks/s",
            },
            "invalid",
            "subnetwork",
        ),
    ],
)
def test_rule_validation(
    api: Any, world: ComputeFake, fields: dict[str, Any], reason: str, words: str
) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        api.call("POST", RULES, {"name": "r", **fields})
    assert info.value.errors[0]["reason"] == reason
    assert words in info.value.message
    assert world.forwarding_rules(P, R) == {}


def test_internal_rule_on_a_missing_network_is_404(api: Any, world: ComputeFake) -> None:
    body = {
        "name": "r",
        "backendService": INTERNAL,
        "loadBalancingScheme": "INTERNAL",
        "ports": ["80"],
        "network": "global/networks/nope",
    }
    with pytest.raises(gexc.NotFound):
        api.call("POST", RULES, body)


def test_aggregated_list(clients: Any, api: Any, world: ComputeFake) -> None:
    world.add_forwarding_rule(P, R, "a", backend_service=EXTERNAL, port_range="80")
    world.add_forwarding_rule(
        P, R, "b", backend_service=INTERNAL, load_balancing_scheme="INTERNAL", all_ports=True
    )
    world.add_target_pool(P, "europe-west1", "eu-pool")
    world.add_forwarding_rule(
        P, "europe-west1", "c", target="regions/europe-west1/targetPools/eu-pool"
    )
    seen = aggregated_names(clients.forwarding_rules, "forwarding_rules")
    assert seen[f"regions/{R}"] == ["a", "b"] and seen["regions/europe-west1"] == ["c"]
    assert seen["regions/us-east1"] == [] and "global" not in seen
    masked = api.call(
        "GET",
        f"projects/{P}/aggregated/forwardingRules",
        params={
            "fields": "items/*/forwardingRules(name,backendService),nextPageToken",
            "maxResults": 1,
        },
    )
    # Paged by scope, then name: europe-west1's rule comes first; a pool rule has no service.
    assert masked["items"]["regions/europe-west1"] == {"forwardingRules": [{"name": "c"}]}
    assert masked["items"][f"regions/{R}"] == {}  # only a warning, masked away
    rest = api.call(
        "GET",
        f"projects/{P}/aggregated/forwardingRules",
        params={
            "fields": "items/*/forwardingRules(name,backendService)",
            "pageToken": masked["nextPageToken"],
        },
    )
    assert rest["items"][f"regions/{R}"]["forwardingRules"] == [
        {"name": "a", "backendService": EXTERNAL},
        {"name": "b", "backendService": INTERNAL},
    ]
