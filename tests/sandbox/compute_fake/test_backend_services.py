"""Regional backend services of passthrough load balancers through the real
RegionBackendServicesClient / BackendServicesClient and a google-auth session, over both
transports: round trips, validation, fingerprints, merge patches, what is in use."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake
from tests.sandbox.compute_fake.conftest import aggregated_names
from tests.sandbox.compute_fake.lb_world import (
    CANONICAL,
    GLOBAL_HC,
    HC,
    IG_A,
    IG_B,
    NEG,
    REGION_URL,
    SERVICES,
    ZA,
    P,
    R,
    group,
    seed,
    service_body,
    service_fields,
)


@pytest.fixture
def world(fake: ComputeFake) -> ComputeFake:
    return seed(fake)


def test_insert_get_list_round_trip(clients: Any, world: ComputeFake) -> None:
    body = compute_v1.BackendService(
        name="bs",
        load_balancing_scheme="EXTERNAL",
        protocol="TCP",
        health_checks=[HC],
        backends=[compute_v1.Backend(group=IG_A), compute_v1.Backend(group=IG_B)],
        connection_draining=compute_v1.ConnectionDraining(draining_timeout_sec=30),
    )
    op = clients.region_backend_services.insert_unary(
        project=P, region=R, backend_service_resource=body, retry=None
    )
    assert (op.operation_type, op.region) == ("insert", REGION_URL)
    got = clients.region_backend_services.get(project=P, region=R, backend_service="bs", retry=None)
    assert (got.load_balancing_scheme, got.protocol, got.session_affinity) == (
        "EXTERNAL",
        "TCP",
        "NONE",
    )
    assert list(got.health_checks) == [HC] and got.region == REGION_URL
    assert [(b.group, b.balancing_mode) for b in got.backends] == [
        (IG_A, "CONNECTION"),
        (IG_B, "CONNECTION"),
    ]
    assert got.connection_draining.draining_timeout_sec == 30 and got.timeout_sec == 30
    assert got.fingerprint and got.self_link == f"{CANONICAL}{SERVICES}/bs"
    listed = clients.region_backend_services.list(project=P, region=R, retry=None)
    assert [s.name for s in listed] == ["bs"]


def test_internal_service_over_a_neg(clients: Any, api: Any, world: ComputeFake) -> None:
    body = service_body(
        "ilb",
        loadBalancingScheme="INTERNAL",
        healthChecks=[GLOBAL_HC],  # an internal service may take a global check
        backends=[{"group": NEG}],
        network="global/networks/default",
        sessionAffinity="CLIENT_IP_NO_DESTINATION",
    )
    api.call("POST", SERVICES, body)
    got = world.backend_services(P, R)["ilb"]
    assert got["network"] == f"{CANONICAL}projects/{P}/global/networks/default"
    assert got["backends"] == [{"group": NEG, "balancingMode": "CONNECTION"}]


ELSEWHERE = "https://www.googleapis.com/compute/v1/projects/proj/regions/europe-west1"


@pytest.mark.parametrize(
    ("fields", "exc_type", "reason", "words"),
    [
        ({"healthChecks": []}, gexc.BadRequest, "required", "healthChecks"),
        ({"healthChecks": [HC, GLOBAL_HC]}, gexc.BadRequest, "invalid", "at most one"),
        ({"healthChecks": [GLOBAL_HC]}, gexc.BadRequest, "invalid", "regional health check"),
        ({"healthChecks": [HC.replace("/hc", "/nope")]}, gexc.NotFound, "notFound", "nope"),
        ({"healthChecks": [f"{ELSEWHERE}/healthChecks/hc"]}, gexc.BadRequest, "invalid", "region"),
        ({"healthChecks": [HC.replace("/hc", "/serving")]}, gexc.BadRequest, "invalid", "SERVING"),
        (
            {"backends": [{"group": f"projects/{P}/zones/{ZA}/instanceGroups/ig-a"}]},
            gexc.BadRequest,
            "invalid",
            "Partial URLs",
        ),
        (
            {"backends": [{"group": group("x", "europe-west1-b")}]},
            gexc.BadRequest,
            "invalid",
            "region",
        ),
        ({"backends": [{"group": group("nope")}]}, gexc.NotFound, "notFound", "nope"),
        ({"backends": [{"group": IG_A}, {"group": IG_A}]}, gexc.BadRequest, "invalid", "Duplicate"),
        ({"backends": [{"group": IG_A}, {"group": NEG}]}, gexc.BadRequest, "invalid", "mix"),
        (
            {"backends": [{"group": IG_A, "balancingMode": "UTILIZATION"}]},
            gexc.BadRequest,
            "invalid",
            "CONNECTION",
        ),
        (
            {"backends": [{"group": IG_A, "capacityScaler": 0.5}]},
            gexc.BadRequest,
            "invalid",
            "does not model",
        ),
        ({"backends": [{"grup": IG_A}]}, gexc.BadRequest, "invalid", "grup"),
        ({"loadBalancingScheme": "INTERNAL_MANAGED"}, gexc.BadRequest, "invalid", "passthrough"),
        ({"protocol": None}, gexc.BadRequest, "invalid", "'HTTP'"),  # the documented default
        ({"port": 80}, gexc.BadRequest, "invalid", "Omit"),
        ({"network": "global/networks/default"}, gexc.BadRequest, "invalid", "INTERNAL"),
        (
            {"sessionAffinity": "CLIENT_IP_NO_DESTINATION"},
            gexc.BadRequest,
            "invalid",
            "affinity",
        ),
        (
            {"connectionDraining": {"drainingTimeoutSec": 3601}},
            gexc.BadRequest,
            "invalid",
            "between",
        ),
        ({"name": "Bad"}, gexc.BadRequest, "invalid", "regex"),
        ({"affinityCookieTtlSec": 5}, gexc.BadRequest, "invalid", "affinityCookieTtlSec"),
    ],
)
def test_insert_validation(
    api: Any,
    world: ComputeFake,
    fields: dict[str, Any],
    exc_type: type,
    reason: str,
    words: str,
) -> None:
    body = {k: v for k, v in service_body(**fields).items() if v is not None}
    with pytest.raises(exc_type) as info:
        api.call("POST", SERVICES, body)
    assert info.value.errors[0]["reason"] == reason
    assert words in info.value.message
    assert world.backend_services(P, R) == {}


def test_update_needs_the_current_fingerprint(clients: Any, world: ComputeFake) -> None:
    world.add_backend_service(P, R, "bs", **service_fields())
    current = clients.region_backend_services.get(
        project=P, region=R, backend_service="bs", retry=None
    )
    changed = compute_v1.BackendService(current)
    changed.backends = [compute_v1.Backend(group=IG_A)]
    changed.fingerprint = ""
    with pytest.raises(gexc.PreconditionFailed) as info:
        clients.region_backend_services.update_unary(
            project=P, region=R, backend_service="bs", backend_service_resource=changed, retry=None
        )
    assert info.value.errors[0]["reason"] == "conditionNotMet"
    changed.fingerprint = current.fingerprint
    op = clients.region_backend_services.update_unary(
        project=P, region=R, backend_service="bs", backend_service_resource=changed, retry=None
    )
    assert op.operation_type == "update"
    after = world.backend_services(P, R)["bs"]
    assert after["backends"] == [{"group": IG_A, "balancingMode": "CONNECTION"}]
    assert after["fingerprint"] != current.fingerprint and after["id"] == str(current.id)
    with pytest.raises(gexc.PreconditionFailed):  # the fingerprint read before is stale now
        clients.region_backend_services.update_unary(
            project=P, region=R, backend_service="bs", backend_service_resource=changed, retry=None
        )


def test_patch_merges_and_checks_a_given_fingerprint(api: Any, world: ComputeFake) -> None:
    world.add_backend_service(P, R, "bs", **service_fields())
    before = world.backend_services(P, R)["bs"]
    op = api.call("PATCH", f"{SERVICES}/bs", {"connectionDraining": {"drainingTimeoutSec": 60}})
    assert op["operationType"] == "patch"
    after = world.backend_services(P, R)["bs"]
    assert after["connectionDraining"] == {"drainingTimeoutSec": 60}
    assert after["backends"] == before["backends"]  # untouched by the merge
    assert after["fingerprint"] != before["fingerprint"]
    with pytest.raises(gexc.PreconditionFailed):
        api.call("PATCH", f"{SERVICES}/bs", {"fingerprint": before["fingerprint"]})
    api.call("PATCH", f"{SERVICES}/bs", {"backends": [{"group": IG_B}]})  # a list is replaced
    assert world.backend_services(P, R)["bs"]["backends"] == [
        {"group": IG_B, "balancingMode": "CONNECTION"}
    ]


def test_what_a_service_uses_cannot_be_deleted(api: Any, world: ComputeFake) -> None:
    world.add_backend_service(P, R, "bs", **service_fields())
    world.add_backend_service(
        P, R, "ilb", **service_fields(loadBalancingScheme="INTERNAL", backends=[{"group": NEG}])
    )
    world.add_forwarding_rule(P, R, "fr", backend_service=f"{SERVICES}/bs", port_range="80")
    for path, user in [
        (f"{SERVICES}/bs", f"projects/{P}/regions/{R}/forwardingRules/fr"),
        (f"projects/{P}/regions/{R}/healthChecks/hc", f"{SERVICES}/bs"),
        (f"projects/{P}/zones/{ZA}/instanceGroups/ig-a", f"{SERVICES}/bs"),
        (f"projects/{P}/zones/{ZA}/networkEndpointGroups/neg", f"{SERVICES}/ilb"),
    ]:
        with pytest.raises(gexc.BadRequest) as info:
            api.call("DELETE", path)
        assert info.value.errors[0]["reason"] == "resourceInUseByAnotherResource"
        assert info.value.message.endswith(f"'{path}' is already being used by '{user}'")
    api.call("DELETE", f"projects/{P}/regions/{R}/forwardingRules/fr")
    api.call("DELETE", f"{SERVICES}/bs")
    assert set(world.backend_services(P, R)) == {"ilb"}
    with pytest.raises(gexc.NotFound):
        api.call("GET", f"{SERVICES}/bs")


def test_aggregated_list(clients: Any, api: Any, world: ComputeFake) -> None:
    world.add_backend_service(P, R, "bs", **service_fields())
    seen = aggregated_names(clients.backend_services, "backend_services")
    assert (
        seen[f"regions/{R}"] == ["bs"] and seen["global"] == [] and seen["regions/us-east1"] == []
    )
    masked = api.call(
        "GET",
        f"projects/{P}/aggregated/backendServices",
        params={"fields": "items/*/backendServices(name,healthChecks)"},
    )
    assert masked["items"][f"regions/{R}"] == {
        "backendServices": [{"name": "bs", "healthChecks": [HC]}]
    }


def test_partial_list(api: Any, world: ComputeFake) -> None:
    world.add_backend_service(P, R, "bs", **service_fields())
    masked = api.call("GET", SERVICES, headers={"X-Goog-FieldMask": "items(name,backends/group)"})
    assert masked == {"items": [{"name": "bs", "backends": [{"group": IG_A}, {"group": IG_B}]}]}


def test_seed_helper_validates_as_insert(world: ComputeFake) -> None:
    with pytest.raises(Exception, match="healthChecks"):
        world.add_backend_service(P, R, "bs", loadBalancingScheme="EXTERNAL", protocol="TCP")
    with pytest.raises(ValueError, match="not a GCE region"):
        world.add_backend_service(P, "mars1", "bs", **service_fields())
