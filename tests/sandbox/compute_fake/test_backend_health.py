"""regionBackendServices.getHealth through the real RegionBackendServicesClient, over both
transports: one status per member and forwarding rule, each from the pluggable health source."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake
from tests.sandbox.compute_fake.lb_world import (
    HC,
    IG_A,
    IG_B,
    NEG,
    RULES,
    SERVICES,
    ZB,
    P,
    R,
    group,
    seed,
    service_fields,
    vm,
)

SERVICE_URL = f"https://www.googleapis.com/compute/v1/{SERVICES}/bs"
RULE_URL = f"https://www.googleapis.com/compute/v1/{RULES}"


@pytest.fixture
def world(fake: ComputeFake) -> ComputeFake:
    seed(fake)
    fake.add_backend_service(P, R, "bs", **service_fields())
    return fake


def health(clients: Any, group_url: str, service: str = "bs") -> list[Any]:
    result = clients.region_backend_services.get_health(
        project=P,
        region=R,
        backend_service=service,
        resource_group_reference_resource=compute_v1.ResourceGroupReference(group=group_url),
        retry=None,
    )
    assert result.kind == "compute#backendServiceGroupHealth"
    return list(result.health_status)


def test_one_status_per_member_and_rule(clients: Any, world: ComputeFake) -> None:
    world.add_forwarding_rule(
        P, R, "fr-a", backend_service=SERVICE_URL, ip_address="34.1.1.1", ports=["80", "443"]
    )
    world.add_forwarding_rule(
        P, R, "fr-b", backend_service=SERVICE_URL, ip_address="34.1.1.2", port_range="8080-8090"
    )
    seen = [
        (s.instance, s.ip_address, s.port, s.forwarding_rule, s.forwarding_rule_ip, s.health_state)
        for s in health(clients, IG_A)
    ]
    assert seen == [
        (vm("n1"), "10.128.0.11", 80, f"{RULE_URL}/fr-a", "34.1.1.1", "HEALTHY"),
        (vm("n1"), "10.128.0.11", 8080, f"{RULE_URL}/fr-b", "34.1.1.2", "HEALTHY"),
        (vm("n2"), "10.128.0.12", 80, f"{RULE_URL}/fr-a", "34.1.1.1", "HEALTHY"),
        (vm("n2"), "10.128.0.12", 8080, f"{RULE_URL}/fr-b", "34.1.1.2", "HEALTHY"),
    ]


def test_without_a_rule_one_status_per_member(clients: Any, world: ComputeFake) -> None:
    [n3] = health(clients, IG_B)
    assert (n3.instance, n3.ip_address, n3.health_state) == (vm("n3", ZB), "10.128.0.13", "HEALTHY")
    assert not n3.forwarding_rule and not n3.forwarding_rule_ip and not n3.port


def test_states_come_from_the_health_source(clients: Any, world: ComputeFake) -> None:
    world.add_forwarding_rule(
        P, R, "fr", backend_service=SERVICE_URL, ip_address="34.1.1.1", all_ports=True
    )
    world.set_instance_health(vm("n2"), "UNHEALTHY")
    asked: list[tuple[str, str, str, str | None]] = []

    def source(service: dict[str, Any], instance: str, ip: str | None) -> str | None:
        asked.append((service["kind"], service["healthChecks"][0], instance, ip))
        return "UNHEALTHY" if instance == vm("n1") else None  # None: fall back

    assert [s.health_state for s in health(clients, IG_A)] == ["HEALTHY", "UNHEALTHY"]  # set
    world.health_source = source
    statuses = health(clients, IG_A)
    assert [s.health_state for s in statuses] == ["UNHEALTHY", "UNHEALTHY"]
    assert not any(s.port for s in statuses)  # an allPorts rule has no first port
    kind = "compute#backendService"
    assert asked == [(kind, HC, vm("n1"), "34.1.1.1"), (kind, HC, vm("n2"), "34.1.1.1")]


def test_a_neg_backend_answers_per_endpoint(clients: Any, world: ComputeFake) -> None:
    world.add_backend_service(
        P, R, "ilb", **service_fields(loadBalancingScheme="INTERNAL", backends=[{"group": NEG}])
    )
    world.add_forwarding_rule(
        P,
        R,
        "ilb-fr",
        backend_service=f"{SERVICES}/ilb",
        load_balancing_scheme="INTERNAL",
        ip_address="10.128.0.100",
        ports=["10256"],
    )
    seen = [
        (s.instance, s.ip_address, s.port, s.forwarding_rule_ip)
        for s in health(clients, NEG, "ilb")
    ]
    assert seen == [
        (vm("n1"), "10.128.0.11", 10256, "10.128.0.100"),
        (vm("n2"), "10.128.0.12", 10256, "10.128.0.100"),
    ]


def test_an_empty_group_answers_no_statuses(clients: Any, world: ComputeFake) -> None:
    empty = group("ig-empty")
    world.add_backend_service(P, R, "empty", **service_fields(backends=[{"group": empty}]))
    assert health(clients, empty, "empty") == []


@pytest.mark.parametrize(
    ("body", "exc_type", "reason", "words"),
    [
        ({"group": NEG}, gexc.BadRequest, "invalid", "not a backend"),
        ({"group": "not a url"}, gexc.BadRequest, "invalid", "not a backend"),
        ({}, gexc.BadRequest, "required", "resource.group"),
        ({"group": IG_A, "instance": "x"}, gexc.BadRequest, "invalid", "instance"),
    ],
)
def test_get_health_validation(
    api: Any, world: ComputeFake, body: dict[str, Any], exc_type: type, reason: str, words: str
) -> None:
    with pytest.raises(exc_type) as info:
        api.call("POST", f"{SERVICES}/bs/getHealth", body)
    assert info.value.errors[0]["reason"] == reason
    assert words in info.value.message
    assert not world.mutating_requests()  # getHealth is a read, refused or not


def test_a_missing_service_is_404(api: Any, world: ComputeFake) -> None:
    with pytest.raises(gexc.NotFound):
        api.call("POST", f"{SERVICES}/ghost/getHealth", {"group": IG_A})


def test_partial_response(api: Any, world: ComputeFake) -> None:
    body = api.call(
        "POST",
        f"{SERVICES}/bs/getHealth",
        {"group": IG_A},
        params={"fields": "healthStatus(instance,healthState)"},
    )
    assert body == {
        "healthStatus": [
            {"instance": vm("n1"), "healthState": "HEALTHY"},
            {"instance": vm("n2"), "healthState": "HEALTHY"},
        ]
    }


def test_the_source_is_asked_without_the_store_lock(
    server_clients: Any, world: ComputeFake
) -> None:
    """Another thread reads the fake while the source answers: it would block on the lock."""
    reads: list[bool] = []

    def source(service: dict[str, Any], instance: str, ip: str | None) -> str | None:
        reader = threading.Thread(target=lambda: reads.append(bool(world.backend_services(P, R))))
        reader.start()
        reader.join(timeout=5)
        return None

    world.health_source = source
    assert len(health(server_clients, IG_A)) == 2
    assert reads == [True, True]
