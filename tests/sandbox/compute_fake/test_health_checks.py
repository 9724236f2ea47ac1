"""Legacy httpHealthChecks through a google-auth AuthorizedSession, over both transports."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc

from lbhc.sandbox.compute_fake import ComputeFake

P = "proj"
R = "us-central1"
HCS = f"projects/{P}/global/httpHealthChecks"
CANONICAL = "https://www.googleapis.com/compute/v1/"


def test_insert_applies_real_defaults_and_canonical_links(api: Any, fake: ComputeFake) -> None:
    op = api.call("POST", HCS, {"name": "hc", "port": 10256, "requestPath": "/healthz"})
    assert op["kind"] == "compute#operation"
    assert op["operationType"] == "insert"
    assert op["status"] == "DONE"
    assert op["targetLink"] == f"{CANONICAL}{HCS}/hc"
    assert op["selfLink"] == f"{CANONICAL}projects/{P}/global/operations/{op['name']}"
    assert op["name"].startswith("operation-")
    check = api.call("GET", f"{HCS}/hc")
    assert check == fake.http_health_checks(P)["hc"]
    assert check["id"].isdigit() and check["id"] == op["targetId"]
    assert check["selfLink"] == f"{CANONICAL}{HCS}/hc"  # whatever endpoint served it
    assert {k: check[k] for k in ("checkIntervalSec", "timeoutSec", "healthyThreshold")} == {
        "checkIntervalSec": 5,
        "timeoutSec": 5,
        "healthyThreshold": 2,
    }
    assert check["unhealthyThreshold"] == 2
    assert "host" not in check
    assert check["creationTimestamp"][:2] == "20" and check["creationTimestamp"][-6] in "+-"


def test_defaults_port_and_path(api: Any) -> None:
    api.call("POST", HCS, {"name": "bare"})
    check = api.call("GET", f"{HCS}/bare")
    assert (check["port"], check["requestPath"]) == (80, "/")


@pytest.mark.parametrize(
    ("body", "exc_type", "reason"),
    [
        ({"name": "Bad_Name"}, gexc.BadRequest, "invalid"),
        ({"name": "-lead"}, gexc.BadRequest, "invalid"),
        ({"name": "a" * 64}, gexc.BadRequest, "invalid"),
        ({}, gexc.BadRequest, "required"),
        ({"name": "t", "timeoutSec": 6, "checkIntervalSec": 5}, gexc.BadRequest, "invalid"),
        ({"name": "t", "timeoutSec": 6}, gexc.BadRequest, "invalid"),  # default interval 5
        ({"name": "t", "port": 70000}, gexc.BadRequest, "invalid"),
        ({"name": "t", "requestPath": "healthz"}, gexc.BadRequest, "invalid"),
        ({"name": "t", "requestPth": "/healthz"}, gexc.BadRequest, "invalid"),
        ({"name": "t", "port": "eighty"}, gexc.BadRequest, "invalid"),
        ({"name": "exists"}, gexc.Conflict, "alreadyExists"),
    ],
)
def test_insert_validation(
    api: Any, fake: ComputeFake, body: dict[str, Any], exc_type: type, reason: str
) -> None:
    fake.add_http_health_check(P, "exists")
    with pytest.raises(exc_type) as info:
        api.call("POST", HCS, body)
    assert info.value.errors[0]["reason"] == reason
    assert info.value.errors[0]["domain"] == "global"
    assert set(fake.http_health_checks(P)) == {"exists"}  # nothing applied


def test_error_messages_match_the_real_api(api: Any, fake: ComputeFake) -> None:
    fake.add_http_health_check(P, "x")
    with pytest.raises(gexc.Conflict) as dup:
        api.call("POST", HCS, {"name": "x"})
    # from_http_response prefixes "METHOD URL: " to the API's message.
    assert dup.value.message.endswith(f": The resource '{HCS}/x' already exists")
    with pytest.raises(gexc.NotFound) as missing:
        api.call("GET", f"{HCS}/nope")
    assert missing.value.message.endswith(f": The resource '{HCS}/nope' was not found")
    resp = api.raw("GET", f"{HCS}/nope")
    assert resp.json() == {
        "error": {
            "code": 404,
            "message": f"The resource '{HCS}/nope' was not found",
            "errors": [
                {
                    "message": f"The resource '{HCS}/nope' was not found",
                    "domain": "global",
                    "reason": "notFound",
                }
            ],
        }
    }


def test_update_replaces_and_patch_merges(api: Any) -> None:
    api.call("POST", HCS, {"name": "hc", "port": 10256, "checkIntervalSec": 8, "timeoutSec": 1})
    original = api.call("GET", f"{HCS}/hc")
    op = api.call("PATCH", f"{HCS}/hc", {"requestPath": "/healthz", "description": "lbhc"})
    assert op["operationType"] == "patch" and op["targetId"] == original["id"]
    patched = api.call("GET", f"{HCS}/hc")
    assert (patched["port"], patched["checkIntervalSec"], patched["timeoutSec"]) == (10256, 8, 1)
    assert (patched["requestPath"], patched["description"]) == ("/healthz", "lbhc")
    assert patched["id"] == original["id"]
    assert patched["creationTimestamp"] == original["creationTimestamp"]
    op = api.call("PUT", f"{HCS}/hc", {"name": "hc", "port": 10256, "requestPath": "/livez"})
    assert op["operationType"] == "update"
    updated = api.call("GET", f"{HCS}/hc")
    # A full replace: fields not given are back to the insert defaults.
    assert (updated["checkIntervalSec"], updated["timeoutSec"]) == (5, 5)
    assert "description" not in updated
    assert updated["requestPath"] == "/livez" and updated["id"] == original["id"]


@pytest.mark.parametrize(
    ("method", "body", "exc_type", "reason"),
    [
        ("PATCH", {"timeoutSec": 9}, gexc.BadRequest, "invalid"),  # 9 > interval 5
        ("PUT", {"name": "other"}, gexc.BadRequest, "invalid"),  # renaming
        ("PATCH", {"bogus": 1}, gexc.BadRequest, "invalid"),
    ],
)
def test_update_validation(
    api: Any, fake: ComputeFake, method: str, body: dict[str, Any], exc_type: type, reason: str
) -> None:
    api.call("POST", HCS, {"name": "hc"})
    before = fake.http_health_checks(P)["hc"]
    with pytest.raises(exc_type) as info:
        api.call(method, f"{HCS}/hc", body)
    assert info.value.errors[0]["reason"] == reason
    assert fake.http_health_checks(P)["hc"] == before


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_missing_check_is_not_found(api: Any, method: str) -> None:
    body = {"name": "ghost"} if method in ("PUT", "PATCH") else None
    with pytest.raises(gexc.NotFound) as info:
        api.call(method, f"{HCS}/ghost", body)
    assert info.value.errors[0]["reason"] == "notFound"


def test_delete_and_list(api: Any, fake: ComputeFake) -> None:
    for name in ("b", "a", "c"):
        api.call("POST", HCS, {"name": name})
    listed = api.call("GET", HCS)
    assert listed["kind"] == "compute#httpHealthCheckList"
    assert [c["name"] for c in listed["items"]] == ["a", "b", "c"]
    op = api.call("DELETE", f"{HCS}/b")
    assert op["operationType"] == "delete" and op["status"] == "DONE"
    assert set(fake.http_health_checks(P)) == {"a", "c"}
    for name in ("a", "c"):
        api.call("DELETE", f"{HCS}/{name}")
    assert "items" not in api.call("GET", HCS)  # empty lists omit items


def _pool_with_check(fake: ComputeFake, check: str) -> None:
    fake.add_target_pool(P, "europe-west1", "other-pool")
    fake.add_target_pool(P, R, "pool", health_checks=[f"global/httpHealthChecks/{check}"])


def test_in_use_delete_http_mode(api: Any, fake: ComputeFake) -> None:
    api.call("POST", HCS, {"name": "shared"})
    _pool_with_check(fake, "shared")
    with pytest.raises(gexc.BadRequest) as info:
        api.call("DELETE", f"{HCS}/shared")
    assert info.value.errors[0]["reason"] == "resourceInUseByAnotherResource"
    assert info.value.message.endswith(
        f": The http_health_check resource '{HCS}/shared' is already being used by "
        f"'projects/{P}/regions/{R}/targetPools/pool'"
    )
    assert "shared" in fake.http_health_checks(P)


def test_in_use_delete_operation_mode(api: Any, fake: ComputeFake) -> None:
    fake.in_use_delete_mode = "operation"
    api.call("POST", HCS, {"name": "shared"})
    _pool_with_check(fake, "shared")
    op = api.call("DELETE", f"{HCS}/shared")
    assert op["status"] == "DONE"
    assert op["httpErrorStatusCode"] == 400
    assert op["httpErrorMessage"] == "BAD REQUEST"
    error = op["error"]["errors"][0]
    assert error["code"] == "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"
    assert "is already being used by" in error["message"]
    assert "shared" in fake.http_health_checks(P)
    # The same operation read back later still carries the error.
    again = api.call("GET", f"projects/{P}/global/operations/{op['name']}")
    assert again["error"] == op["error"]


def test_in_use_mode_rejects_unknown_values(fake: ComputeFake) -> None:
    with pytest.raises(ValueError):
        fake.in_use_delete_mode = "sometimes"


def test_delete_after_detach_succeeds(api: Any, fake: ComputeFake) -> None:
    api.call("POST", HCS, {"name": "shared"})
    _pool_with_check(fake, "shared")
    body = {"healthChecks": [{"healthCheck": f"{CANONICAL}{HCS}/shared"}]}
    api.call("POST", f"projects/{P}/regions/{R}/targetPools/pool/removeHealthCheck", body)
    api.call("DELETE", f"{HCS}/shared")
    assert fake.http_health_checks(P) == {}
