"""Global and regional health checks (the non-legacy kind backend services take) through the
real clients and a google-auth session, over both transports."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeError, ComputeFake
from tests.sandbox.compute_fake.conftest import aggregated_names

P = "proj"
R = "us-central1"
CANONICAL = "https://www.googleapis.com/compute/v1/"
GLOBAL = f"projects/{P}/global/healthChecks"
REGIONAL = f"projects/{P}/regions/{R}/healthChecks"


def http_check(name: str, **extra: Any) -> compute_v1.HealthCheck:
    http = compute_v1.HTTPHealthCheck(port=10256, request_path="/healthz")
    return compute_v1.HealthCheck(name=name, type_="HTTP", http_health_check=http, **extra)


def test_global_insert_get_round_trip(clients: Any, fake: ComputeFake) -> None:
    op = clients.health_checks.insert_unary(
        project=P, health_check_resource=http_check("hc"), retry=None
    )
    assert (op.operation_type, op.target_link) == ("insert", f"{CANONICAL}{GLOBAL}/hc")
    assert op.self_link.startswith(f"{CANONICAL}projects/{P}/global/operations/")
    got = clients.health_checks.get(project=P, health_check="hc", retry=None)
    assert (got.type_, got.check_interval_sec, got.timeout_sec) == ("HTTP", 5, 5)
    assert (got.healthy_threshold, got.unhealthy_threshold) == (2, 2)
    assert got.http_health_check.port == 10256
    assert got.http_health_check.port_specification == "USE_FIXED_PORT"
    assert got.http_health_check.proxy_header == "NONE"
    assert got.self_link == f"{CANONICAL}{GLOBAL}/hc" and not got.region
    stored = fake.health_checks(P)["hc"]
    assert stored["kind"] == "compute#healthCheck" and stored["id"] == str(op.target_id)


def test_regional_insert_get_round_trip(clients: Any, fake: ComputeFake) -> None:
    tcp = compute_v1.TCPHealthCheck(port=10256)
    body = compute_v1.HealthCheck(name="rhc", type_="TCP", tcp_health_check=tcp)
    op = clients.region_health_checks.insert_unary(
        project=P, region=R, health_check_resource=body, retry=None
    )
    assert op.region == f"{CANONICAL}projects/{P}/regions/{R}"
    got = clients.region_health_checks.get(project=P, region=R, health_check="rhc", retry=None)
    assert got.region == f"{CANONICAL}projects/{P}/regions/{R}"
    assert got.self_link == f"{CANONICAL}{REGIONAL}/rhc"
    assert (got.tcp_health_check.port, got.tcp_health_check.proxy_header) == (10256, "NONE")
    assert fake.health_checks(P) == {}  # the global scope is apart
    assert set(fake.health_checks(P, R)) == {"rhc"}


@pytest.mark.parametrize(
    ("body", "reason", "words"),
    [
        ({"name": "x"}, "required", "resource.type"),
        ({"name": "x", "type": "HTTP"}, "required", "resource.httpHealthCheck"),
        ({"name": "x", "type": "ICMP", "httpHealthCheck": {}}, "invalid", "resource.type"),
        (
            {"name": "x", "type": "HTTP", "httpHealthCheck": {}, "tcpHealthCheck": {}},
            "invalid",
            "resource.tcpHealthCheck",
        ),
        (
            {"name": "x", "type": "TCP", "tcpHealthCheck": {"requestPath": "/"}},
            "invalid",
            "Unknown",
        ),
        (
            {"name": "x", "type": "HTTP", "httpHealthCheck": {}, "timeoutSec": 6},
            "invalid",
            "less than or equal to check interval",
        ),
        (
            {"name": "x", "type": "HTTP", "httpHealthCheck": {"requestPath": "healthz"}},
            "invalid",
            "requestPath",
        ),
        (
            {"name": "x", "type": "HTTP", "httpHealthCheck": {"portName": "http"}},
            "invalid",
            "Not supported.",
        ),
        (
            {
                "name": "x",
                "type": "HTTP",
                "httpHealthCheck": {"portSpecification": "USE_NAMED_PORT"},
            },
            "invalid",
            "Not supported.",
        ),
        (
            {
                "name": "x",
                "type": "TCP",
                "tcpHealthCheck": {"portSpecification": "USE_SERVING_PORT", "port": 80},
            },
            "invalid",
            "USE_SERVING_PORT",
        ),
        ({"name": "x", "type": "GRPC", "grpcHealthCheck": {}}, "required", "port"),
        ({"name": "x", "type": "TCP", "tcpHealthCheck": {"port": 0}}, "invalid", "between 1"),
        ({"name": "Bad", "type": "TCP", "tcpHealthCheck": {}}, "invalid", "regex"),
        (
            {"name": "x", "type": "TCP", "tcpHealthCheck": {}, "sorceRegions": []},
            "invalid",
            "sorce",
        ),
    ],
)
@pytest.mark.parametrize("path", [GLOBAL, REGIONAL])
def test_insert_validation(
    api: Any, fake: ComputeFake, path: str, body: dict[str, Any], reason: str, words: str
) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        api.call("POST", path, body)
    assert info.value.errors[0]["reason"] == reason
    assert words in info.value.message
    assert fake.health_checks(P) == {} and fake.health_checks(P, R) == {}


def test_duplicates_missing_and_unknown_scopes(api: Any, fake: ComputeFake) -> None:
    fake.add_health_check(P, "hc", tcpHealthCheck={})
    with pytest.raises(gexc.Conflict) as dup:
        api.call("POST", GLOBAL, {"name": "hc", "type": "TCP", "tcpHealthCheck": {}})
    assert dup.value.message.endswith(f"The resource '{GLOBAL}/hc' already exists")
    with pytest.raises(gexc.NotFound) as missing:
        api.call("GET", f"{REGIONAL}/hc")  # a global check is not in a region
    assert missing.value.message.endswith(f"The resource '{REGIONAL}/hc' was not found")
    with pytest.raises(gexc.BadRequest) as region:
        api.call("GET", f"projects/{P}/regions/mars1/healthChecks")
    assert "Unknown region." in region.value.message


def test_patch_is_a_json_merge_patch(api: Any, fake: ComputeFake) -> None:
    fake.add_health_check(P, "hc", R, httpHealthCheck={"port": 10256, "requestPath": "/healthz"})
    api.call("PATCH", f"{REGIONAL}/hc", {"httpHealthCheck": {"port": 8080}, "checkIntervalSec": 8})
    check = api.call("GET", f"{REGIONAL}/hc")
    assert check["httpHealthCheck"]["port"] == 8080
    assert check["httpHealthCheck"]["requestPath"] == "/healthz"  # merged, not replaced
    assert check["checkIntervalSec"] == 8 and check["region"].endswith(f"/regions/{R}")
    # Changing the type leaves the old protocol object unless the patch nulls it.
    with pytest.raises(gexc.BadRequest) as info:
        api.call("PATCH", f"{REGIONAL}/hc", {"type": "TCP", "tcpHealthCheck": {"port": 80}})
    assert "resource.httpHealthCheck" in info.value.message
    body = {"type": "TCP", "tcpHealthCheck": {"port": 80}, "httpHealthCheck": None}
    op = api.call("PATCH", f"{REGIONAL}/hc", body)
    assert op["operationType"] == "patch" and op["region"].endswith(f"/regions/{R}")
    check = api.call("GET", f"{REGIONAL}/hc")
    assert check["type"] == "TCP" and "httpHealthCheck" not in check
    assert check["checkIntervalSec"] == 8


def test_update_replaces_every_user_field(clients: Any, fake: ComputeFake) -> None:
    fake.add_health_check(P, "hc", tcpHealthCheck={"port": 10256}, checkIntervalSec=8)
    clients.health_checks.update_unary(
        project=P, health_check="hc", health_check_resource=http_check("hc"), retry=None
    )
    check = fake.health_checks(P)["hc"]
    assert check["type"] == "HTTP" and "tcpHealthCheck" not in check
    assert check["checkIntervalSec"] == 5  # back to the default
    with pytest.raises(gexc.BadRequest):  # a body may repeat the name but not change it
        clients.health_checks.update_unary(
            project=P, health_check="hc", health_check_resource=http_check("other"), retry=None
        )


def test_delete(clients: Any, fake: ComputeFake) -> None:
    fake.add_health_check(P, "hc", tcpHealthCheck={})
    fake.add_health_check(P, "hc", R, tcpHealthCheck={})
    clients.region_health_checks.delete_unary(project=P, region=R, health_check="hc", retry=None)
    assert fake.health_checks(P, R) == {} and set(fake.health_checks(P)) == {"hc"}
    with pytest.raises(gexc.NotFound):
        clients.region_health_checks.delete_unary(
            project=P, region=R, health_check="hc", retry=None
        )


def test_list_and_aggregated_list(clients: Any, api: Any, fake: ComputeFake) -> None:
    fake.add_health_check(P, "g1", tcpHealthCheck={})
    fake.add_health_check(P, "g2", tcpHealthCheck={})
    fake.add_health_check(P, "r1", R, tcpHealthCheck={})
    fake.add_health_check(P, "e1", "europe-west1", tcpHealthCheck={})
    listed = clients.health_checks.list(project=P, retry=None)
    assert [c.name for c in listed] == ["g1", "g2"]
    regional = clients.region_health_checks.list(project=P, region=R, retry=None)
    assert [c.name for c in regional] == ["r1"]
    seen = aggregated_names(clients.health_checks, "health_checks")
    assert seen["global"] == ["g1", "g2"]
    assert seen[f"regions/{R}"] == ["r1"] and seen["regions/europe-west1"] == ["e1"]
    assert seen["regions/us-east1"] == []
    raw = api.call("GET", f"projects/{P}/aggregated/healthChecks", params={"maxResults": 2})
    assert raw["kind"] == "compute#healthChecksAggregatedList"
    assert [c["name"] for c in raw["items"]["global"]["healthChecks"]] == ["g1", "g2"]
    warning = raw["items"][f"regions/{R}"]["warning"]  # on the next page
    assert warning["code"] == "NO_RESULTS_ON_PAGE"
    assert warning["data"] == [{"key": "scope", "value": f"regions/{R}"}]
    rest = api.call(
        "GET",
        f"projects/{P}/aggregated/healthChecks",
        params={"maxResults": 2, "pageToken": raw["nextPageToken"]},
    )
    assert "warning" in rest["items"]["global"] and "nextPageToken" not in rest
    assert [c["name"] for c in rest["items"][f"regions/{R}"]["healthChecks"]] == ["r1"]


def test_partial_responses(api: Any, fake: ComputeFake) -> None:
    fake.add_health_check(P, "hc", R, tcpHealthCheck={"port": 10256})
    listed = api.call("GET", REGIONAL, params={"fields": "items(name,tcpHealthCheck/port)"})
    assert listed == {"items": [{"name": "hc", "tcpHealthCheck": {"port": 10256}}]}
    header = {"X-Goog-FieldMask": "name,type"}
    assert api.call("GET", f"{REGIONAL}/hc", headers=header) == {"name": "hc", "type": "TCP"}
    aggregated = api.call(
        "GET",
        f"projects/{P}/aggregated/healthChecks",
        params={"fields": "items/*/healthChecks(name,selfLink)"},
    )
    assert aggregated["items"][f"regions/{R}"]["healthChecks"] == [
        {"name": "hc", "selfLink": f"{CANONICAL}{REGIONAL}/hc"}
    ]
    aggregated_path = f"projects/{P}/aggregated/healthChecks"
    for path, mask in [
        (REGIONAL, "items(nmae)"),
        (aggregated_path, "items/*/healthChecks(nmae)"),
        (aggregated_path, "items/*/checks"),
        (aggregated_path, "itmes"),
    ]:
        with pytest.raises(gexc.BadRequest) as info:
            api.call("GET", path, params={"fields": mask})
        assert info.value.errors[0]["reason"] == "invalidParameter", mask


def test_seed_helper_validates_as_insert(fake: ComputeFake) -> None:
    seeded = fake.add_health_check(P, "hc", httpHealthCheck={"port": 10256})
    assert seeded["type"] == "HTTP" and seeded["httpHealthCheck"]["requestPath"] == "/"
    with pytest.raises(ValueError, match="already exists"):
        fake.add_health_check(P, "hc", tcpHealthCheck={})
    with pytest.raises(ValueError, match="not a GCE region"):
        fake.add_health_check(P, "hc", "mars1", tcpHealthCheck={})
    with pytest.raises(ComputeError, match=r"resource\.type"):
        fake.add_health_check(P, "none")
