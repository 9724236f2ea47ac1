"""The HTTP server, the responses mount, the dispatcher's edges, the journal, thread safety."""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import responses

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer, JournalEntry
from lbhc.sandbox.compute_fake.responses_mount import mount_responses
from tests.waiting import wait_for

P = "proj"
R = "us-central1"
HCS = f"projects/{P}/global/httpHealthChecks"


def test_keep_alive_and_headers(server: ComputeFakeServer, fake: ComputeFake) -> None:
    fake.add_http_health_check(P, "hc")
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    try:
        for _ in range(3):  # one connection, three requests
            conn.request("GET", f"/compute/v1/{HCS}/hc")
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 200
            assert resp.getheader("Content-Type", "").startswith("application/json")
            assert int(resp.getheader("Content-Length", "-1")) == len(body)
            assert json.loads(body)["name"] == "hc"
        conn.request(
            "POST", f"/compute/v1/{HCS}", body=b"{not json", headers={"Content-Length": "9"}
        )
        resp = conn.getresponse()
        error = json.loads(resp.read())
        assert resp.status == 400 and error["error"]["errors"][0]["reason"] == "parseError"
    finally:
        conn.close()


def test_stop_is_idempotent_and_url_needs_a_running_server(fake: ComputeFake) -> None:
    server = ComputeFakeServer(fake).start()
    url = server.url
    assert url.startswith("http://127.0.0.1:")
    assert requests.get(f"{url}/compute/v1/{HCS}", timeout=5).status_code == 200
    server.stop()
    server.stop()
    with pytest.raises(RuntimeError):
        _ = server.url
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{url}/compute/v1/{HCS}", timeout=5)


@pytest.mark.parametrize(
    ("method", "path", "status", "reason"),
    [
        ("GET", "/compute/v1/projects/p/global/backendServices", 404, "notFound"),
        ("GET", "/compute/v1/projects", 404, "notFound"),
        ("POST", f"/compute/v1/{HCS}/hc", 405, "httpMethodNotAllowed"),
        ("DELETE", f"/compute/v1/{HCS}", 405, "httpMethodNotAllowed"),
    ],
)
def test_unknown_routes(api: Any, method: str, path: str, status: int, reason: str) -> None:
    resp = api.session.request(method, api.base_url + path)
    assert resp.status_code == status
    assert resp.headers["Content-Type"].startswith("application/json")
    assert resp.json()["error"]["errors"][0]["reason"] == reason


def test_paths_outside_the_api_are_not_found(server_api: Any) -> None:
    resp = server_api.session.get(server_api.base_url + "/somewhere/else")
    assert resp.status_code == 404
    assert resp.json()["error"]["errors"][0]["reason"] == "notFound"


def test_journal(api: Any, fake: ComputeFake) -> None:
    fake.add_target_pool(P, R, "pool", instances=["zones/us-central1-a/instances/n1"])
    headers = {"x-lbhc-client-id": "ctrl-1", "User-Agent": "lbhc-test/1"}
    op = api.call("POST", HCS, {"name": "hc"}, params={"requestId": None}, headers=headers)
    api.call("GET", HCS, params={"maxResults": 5})
    api.call("POST", f"projects/{P}/global/operations/{op['name']}/wait")
    instance = "zones/us-central1-a/instances/n1"
    api.call("POST", f"projects/{P}/regions/{R}/targetPools/pool/getHealth", {"instance": instance})
    with pytest.raises(Exception):  # noqa: B017 - any API error; only the journal matters here
        api.call("DELETE", f"{HCS}/ghost")
    journal = fake.journal
    assert all(isinstance(e, JournalEntry) for e in journal)
    assert [(e.method, e.status, e.mutating) for e in journal] == [
        ("POST", 200, True),
        ("GET", 200, False),
        ("POST", 200, False),  # operations wait is a read
        ("POST", 200, False),  # getHealth is a read
        ("DELETE", 404, True),
    ]
    first = journal[0]
    assert first.path == f"/compute/v1/{HCS}"
    assert first.body == {"name": "hc"}
    assert (first.client_id, first.user_agent) == ("ctrl-1", "lbhc-test/1")
    assert journal[1].query == {"maxResults": "5"} and journal[1].body is None
    assert journal[1].client_id == ""
    assert [e.path for e in fake.mutating_requests()] == [first.path, f"/compute/v1/{HCS}/ghost"]
    fake.clear_journal()
    assert fake.journal == []


def test_concurrent_inserts(server_api: Any, fake: ComputeFake) -> None:
    def insert(name: str) -> int:
        return int(server_api.raw("POST", HCS, {"name": name}).status_code)

    distinct = [f"hc-{i}" for i in range(40)]
    contested = ["same"] * 20
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(insert, distinct + contested))
    assert results[:40] == [200] * 40
    assert sorted(results[40:]) == [200] + [409] * 19  # exactly one winner
    assert set(fake.http_health_checks(P)) == {*distinct, "same"}
    ids = [c["id"] for c in fake.http_health_checks(P).values()]
    assert len(set(ids)) == len(ids)


def test_wait_does_not_block_other_requests(clock: Any, make_api: Any) -> None:
    fake = ComputeFake(operation_latency=10, clock=clock)
    with ComputeFakeServer(fake) as server:
        api = make_api(server.url)
        op = api.call("POST", HCS, {"name": "hc"})
        waiter = threading.Thread(
            target=api.call, args=("POST", f"projects/{P}/global/operations/{op['name']}/wait")
        )
        waiter.start()
        other = make_api(server.url)
        try:
            # Until the wait request is blocked inside the fake (or its thread ended early).
            wait_for(lambda: fake.waiters > 0 or not waiter.is_alive(), what="a blocked wait")
            assert waiter.is_alive()
            assert other.call("GET", HCS).get("items") is None  # served while wait blocks
            clock.advance(10)
            waiter.join(timeout=5)
            assert not waiter.is_alive()
        finally:
            other.close()
            api.close()


def test_mount_on_another_base_url(make_api: Any) -> None:
    fake = ComputeFake()
    with responses.RequestsMock() as rsps:
        registered = mount_responses(fake, rsps, base_url="https://www.googleapis.com")
        assert len(registered) == 1
        api = make_api("https://www.googleapis.com")
        api.call("POST", HCS, {"name": "hc"})
        assert api.call("GET", f"{HCS}/hc")["selfLink"].startswith("https://www.googleapis.com/")
        with pytest.raises(requests.ConnectionError):  # other hosts are not served
            requests.get("https://compute.googleapis.com/compute/v1/" + HCS, timeout=5)
    assert set(fake.http_health_checks(P)) == {"hc"}


def test_handle_directly() -> None:
    fake = ComputeFake()
    status, headers, body = fake.handle("GET", f"/compute/v1/{HCS}?maxResults=1")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["kind"] == "compute#httpHealthCheckList"
    status, _, _ = fake.handle("GET", f"/compute/v1/{HCS}", "maxResults=501")
    assert status == 400


def test_seeding_errors() -> None:
    fake = ComputeFake()
    fake.add_network(P, "default")
    with pytest.raises(ValueError):
        fake.add_network(P, "default")
    fake.add_target_pool(P, R, "pool")
    with pytest.raises(ValueError):
        fake.add_target_pool(P, R, "pool")
    with pytest.raises(ValueError):
        fake.set_instance_health(f"projects/{P}/zones/z/instances/n", "SORT_OF")
    with pytest.raises(ValueError):
        fake.set_instance_health("zones/z/instances/n", "HEALTHY")  # which project?


def test_a_failing_health_source_is_a_500(api: Any, fake: ComputeFake) -> None:
    fake.add_http_health_check(P, "hc")
    instance = f"projects/{P}/zones/us-central1-a/instances/n1"
    fake.add_target_pool(P, R, "pool", instances=[instance], health_checks=["hc"])

    def broken(pool: dict[str, Any], instance: str, ip: str | None) -> str | None:
        raise RuntimeError("prober down")

    fake.health_source = broken
    resp = api.raw(
        "POST", f"projects/{P}/regions/{R}/targetPools/pool/getHealth", {"instance": instance}
    )
    assert resp.status_code == 500
    assert "prober down" in resp.json()["error"]["message"]
