"""Fault injection: failing requests, failing operations, rate limiting, latency."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.waiting import wait_for

P = "proj"
R = "us-central1"
HCS = f"projects/{P}/global/httpHealthChecks"


@pytest.fixture
def fake(clock: Any) -> ComputeFake:
    """Overrides the shared fixture: the rate limiter runs on the injected clock."""
    fake = ComputeFake(clock=clock)
    fake.add_network(P, "default")
    fake.add_http_health_check(P, "hc")
    return fake


def fw_body(name: str) -> compute_v1.Firewall:
    return compute_v1.Firewall(name=name, allowed=[compute_v1.Allowed(I_p_protocol="tcp")])


@pytest.mark.parametrize(
    ("status", "reason", "exc_type", "domain"),
    [
        (429, None, gexc.TooManyRequests, "usageLimits"),
        (503, None, gexc.ServiceUnavailable, "global"),
        (500, None, gexc.InternalServerError, "global"),
        (403, None, gexc.Forbidden, "usageLimits"),
        (403, "forbidden", gexc.Forbidden, "global"),
    ],
)
def test_fail_requests_through_the_session(
    api: Any, fake: ComputeFake, status: int, reason: str | None, exc_type: type, domain: str
) -> None:
    fake.faults.fail_requests(times=2, status=status, reason=reason)
    for _ in range(2):
        with pytest.raises(exc_type) as info:
            api.call("GET", f"{HCS}/hc")
        expected = reason or {429: "rateLimitExceeded", 403: "rateLimitExceeded"}.get(
            status, "backendError"
        )
        assert info.value.errors[0]["reason"] == expected
        assert info.value.errors[0]["domain"] == domain
        assert info.value.code == status
    assert api.call("GET", f"{HCS}/hc")["name"] == "hc"  # the fault counted down and stopped
    assert [e.status for e in fake.journal] == [status, status, 200]


def test_fail_requests_through_the_client(clients: Any, fake: ComputeFake) -> None:
    fake.faults.fail_requests(times=1, status=429)
    with pytest.raises(gexc.TooManyRequests) as info:
        clients.firewalls.insert_unary(project=P, firewall_resource=fw_body("fw"), retry=None)
    assert info.value.errors[0]["reason"] == "rateLimitExceeded"
    assert fake.firewalls(P) == {}  # a rejected request changes nothing
    clients.firewalls.insert_unary(project=P, firewall_resource=fw_body("fw"), retry=None)
    fake.faults.fail_requests(times=1, status=503)
    with pytest.raises(gexc.ServiceUnavailable):
        clients.firewalls.get(project=P, firewall="fw", retry=None)


def test_fail_requests_filters(api: Any, fake: ComputeFake) -> None:
    fake.faults.fail_requests(times=5, status=503, method="POST", path_contains="/firewalls")
    api.call("GET", f"{HCS}/hc")
    api.call("POST", HCS, {"name": "other"})
    with pytest.raises(gexc.ServiceUnavailable):
        api.call("POST", f"projects/{P}/global/firewalls", {"name": "fw"})
    fake.faults.clear()
    body = {"name": "fw", "allowed": [{"IPProtocol": "tcp"}]}
    api.call("POST", f"projects/{P}/global/firewalls", body)


def test_fail_operations(clients: Any, fake: ComputeFake) -> None:
    fake.add_target_pool(P, R, "pool")
    fake.faults.fail_operations(
        times=1,
        status=400,
        reason="resourceInUseByAnotherResource",
        message="in use",
        operation_type="addHealthCheck",
    )
    clients.firewalls.insert_unary(project=P, firewall_resource=fw_body("fw"), retry=None)
    assert "fw" in fake.firewalls(P)  # other operation types are untouched
    req = compute_v1.TargetPoolsAddHealthCheckRequest(
        health_checks=[compute_v1.HealthCheckReference(health_check="global/httpHealthChecks/hc")]
    )
    op = clients.target_pools.add_health_check_unary(
        project=P,
        region=R,
        target_pool="pool",
        target_pools_add_health_check_request_resource=req,
        retry=None,
    )
    assert op.status == compute_v1.Operation.Status.DONE
    assert (op.http_error_status_code, op.http_error_message) == (400, "BAD REQUEST")
    assert op.error.errors[0].code == "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"
    assert op.error.errors[0].message == "in use"
    assert "healthChecks" not in fake.target_pools(P, R)["pool"]  # NOT applied
    polled = clients.region_ops.get(project=P, region=R, operation=op.name, retry=None)
    assert polled.http_error_status_code == 400
    again = clients.target_pools.add_health_check_unary(
        project=P,
        region=R,
        target_pool="pool",
        target_pools_add_health_check_request_resource=req,
        retry=None,
    )
    assert not again.error.errors
    assert fake.target_pools(P, R)["pool"]["healthChecks"]


def test_rate_limit_on_the_fake_clock(api: Any, fake: ComputeFake, clock: Any) -> None:
    fake.faults.rate_limit(per_second=1.0, burst=3, mutating_only=True)
    for i in range(3):
        api.call("POST", HCS, {"name": f"c{i}"})
    with pytest.raises(gexc.Forbidden) as info:
        api.call("POST", HCS, {"name": "c3"})
    assert info.value.errors[0] == {
        "message": info.value.errors[0]["message"],
        "domain": "usageLimits",
        "reason": "rateLimitExceeded",
    }
    for _ in range(5):
        api.call("GET", f"{HCS}/hc")  # reads are not limited with mutating_only
    clock.advance(1.0)
    api.call("POST", HCS, {"name": "c3"})  # one token refilled
    with pytest.raises(gexc.Forbidden):
        api.call("POST", HCS, {"name": "c4"})
    fake.faults.rate_limit(per_second=None)
    api.call("POST", HCS, {"name": "c4"})
    assert len(fake.http_health_checks(P)) == 6


def test_rate_limit_all_requests(api: Any, fake: ComputeFake) -> None:
    fake.faults.rate_limit(per_second=1.0, burst=1, mutating_only=False)
    api.call("GET", f"{HCS}/hc")
    with pytest.raises(gexc.Forbidden):
        api.call("GET", f"{HCS}/hc")


def test_latency(api: Any, fake: ComputeFake) -> None:
    fake.faults.latency(0.15)
    started = time.monotonic()
    api.call("GET", f"{HCS}/hc")
    assert time.monotonic() - started >= 0.15
    fake.faults.latency(0)
    assert fake.faults.extra_latency() == 0
    assert fake.faults.injected() == {"latency": 1}


def add_check_request() -> compute_v1.TargetPoolsAddHealthCheckRequest:
    ref = compute_v1.HealthCheckReference(health_check="global/httpHealthChecks/hc")
    return compute_v1.TargetPoolsAddHealthCheckRequest(health_checks=[ref])


def add_check(clients: Any, pool: str = "pool") -> compute_v1.Operation:
    return clients.target_pools.add_health_check_unary(
        project=P,
        region=R,
        target_pool=pool,
        target_pools_add_health_check_request_resource=add_check_request(),
        retry=None,
    )


def test_stalled_operation_stays_running_then_applies(
    api: Any, fake: ComputeFake, clock: Any
) -> None:
    fake.faults.stall_operations(times=1, seconds=30.0, operation_type="insert")
    op = api.call("POST", HCS, {"name": "stuck"})
    clock.advance(29.0)
    polled = api.call("GET", f"projects/{P}/global/operations/{op['name']}")
    assert polled["status"] == "RUNNING"
    with pytest.raises(gexc.NotFound):
        api.call("GET", f"{HCS}/stuck")  # the effect waits for DONE
    with pytest.raises(gexc.Conflict):
        api.call("POST", HCS, {"name": "stuck"})  # the name stays reserved meanwhile
    api.call("POST", HCS, {"name": "other"})  # the stall was for one operation only
    assert "other" in fake.http_health_checks(P)
    clock.advance(1.0)
    assert api.call("GET", f"projects/{P}/global/operations/{op['name']}")["status"] == "DONE"
    assert "stuck" in fake.http_health_checks(P)
    assert fake.faults.injected() == {"operation_stall": 1}


def test_operation_stalled_for_ever_never_finishes_but_a_new_one_does(
    clients: Any, fake: ComputeFake, clock: Any
) -> None:
    fake.wait_timeout = 5.0
    fake.add_target_pool(P, R, "pool")
    fake.faults.stall_operations(operation_type="addHealthCheck")
    stuck = add_check(clients)
    clock.advance(1e6)
    assert fake.waiters == 0
    waited = clients.region_ops.get(project=P, region=R, operation=stuck.name, retry=None)
    assert waited.status == compute_v1.Operation.Status.RUNNING
    assert "healthChecks" not in fake.target_pools(P, R)["pool"]
    again = add_check(clients)  # another request (no requestId): a fresh operation
    assert again.status == compute_v1.Operation.Status.DONE
    assert fake.target_pools(P, R)["pool"]["healthChecks"]


def test_wait_on_a_stalled_operation_answers_running_after_wait_timeout(
    make_clients: Any,
) -> None:
    """Real time: `wait` gives up after the fake's wait_timeout, as the real API does."""
    fake = ComputeFake()
    fake.wait_timeout = 0.2
    fake.add_network(P, "default")
    fake.faults.stall_operations()
    with ComputeFakeServer(fake) as server:
        clients = make_clients(server.url)
        op = clients.firewalls.insert_unary(project=P, firewall_resource=fw_body("fw"), retry=None)
        waited = clients.global_ops.wait(project=P, operation=op.name, retry=None, timeout=10)
        assert waited.status == compute_v1.Operation.Status.RUNNING
        assert fake.firewalls(P) == {}


def test_slow_request_is_served_late(server_api: Any, fake: ComputeFake) -> None:
    """Held before serving: a client that times out first left nothing behind yet, and the
    request still lands when the hold ends."""
    fake.faults.slow_requests(0.6, method="POST", path_contains="/httpHealthChecks")
    url = f"{server_api.base_url}/compute/v1/{HCS}"
    with pytest.raises(requests.Timeout):
        server_api.session.request("POST", url, json={"name": "late"}, timeout=0.2)
    assert "late" not in fake.http_health_checks(P)
    wait_for(lambda: "late" in fake.http_health_checks(P), 10, "the held request to land")
    assert fake.faults.injected() == {"slow_request": 1}


def test_slow_response_after_apply_keeps_the_request_id(server_api: Any, fake: ComputeFake) -> None:
    """Held after serving: the insert landed though the client timed out, and a retry with
    the same requestId gets the original operation, not a second insert or alreadyExists."""
    fake.faults.slow_requests(
        1.0, method="POST", path_contains="/httpHealthChecks", after_apply=True
    )
    url = f"{server_api.base_url}/compute/v1/{HCS}"
    rid = {"requestId": str(uuid.uuid4())}
    with pytest.raises(requests.Timeout):
        server_api.session.request("POST", url, json={"name": "x"}, params=rid, timeout=0.2)
    assert "x" in fake.http_health_checks(P)
    retry = server_api.session.request("POST", url, json={"name": "x"}, params=rid, timeout=5)
    assert retry.status_code == 200 and retry.json()["status"] == "DONE"
    inserts = [op for op in fake.operations(P) if op["operationType"] == "insert"]
    assert len(inserts) == 1 and inserts[0]["name"] == retry.json()["name"]
    assert fake.faults.injected() == {"slow_response": 1}


def test_on_request_changes_the_world_before_the_request_is_served(
    clients: Any, fake: ComputeFake
) -> None:
    fake.add_target_pool(P, R, "pool")

    def pool_deleted() -> None:
        status, _, body = fake.handle(
            "DELETE", f"/compute/v1/projects/{P}/regions/{R}/targetPools/pool"
        )
        assert status == 200, body

    fake.faults.on_request(pool_deleted, method="POST", path_contains="/pool/addHealthCheck")
    with pytest.raises(gexc.NotFound):
        add_check(clients)
    assert fake.target_pools(P, R) == {}
    fake.add_target_pool(P, R, "pool")
    add_check(clients)  # the action ran once
    assert fake.target_pools(P, R)["pool"]["healthChecks"]
    assert fake.faults.injected() == {"action": 1}


def test_injected_counts_every_kind(api: Any, fake: ComputeFake) -> None:
    fake.faults.fail_requests(times=2, status=503, method="GET")
    fake.faults.fail_requests(times=1, status=503, method="POST", after_apply=True)
    fake.faults.fail_operations(times=1, operation_type="delete")
    for _ in range(2):
        with pytest.raises(gexc.ServiceUnavailable):
            api.call("GET", f"{HCS}/hc")
    with pytest.raises(gexc.ServiceUnavailable):
        api.call("POST", HCS, {"name": "landed"})
    op = api.call("DELETE", f"{HCS}/landed")
    assert op["httpErrorStatusCode"] == 400
    fake.faults.clear()
    assert fake.faults.injected() == {
        "request_error": 2,
        "lost_response": 1,
        "operation_error": 1,
    }


def test_last_ended_is_when_the_latest_fault_stopped_acting(
    api: Any, fake: ComputeFake, clock: Any
) -> None:
    assert fake.faults.last_ended() == 0.0
    fake.faults.fail_requests(times=1, status=503)
    with pytest.raises(gexc.ServiceUnavailable):
        api.call("GET", f"{HCS}/hc")
    assert fake.faults.last_ended() == clock()
    fake.faults.stall_operations(times=1, seconds=30.0)
    api.call("POST", HCS, {"name": "stuck"})
    assert fake.faults.last_ended() == clock() + 30.0
    clock.advance(100.0)
    fake.faults.stall_operations(times=1)  # for ever: counts from its start
    api.call("POST", HCS, {"name": "stuck-for-ever"})
    assert fake.faults.last_ended() == clock()


def test_end_stalls_lets_a_stuck_operation_finish(api: Any, fake: ComputeFake) -> None:
    fake.faults.stall_operations(times=1, operation_type="insert")
    op = api.call("POST", HCS, {"name": "stuck"})
    assert "stuck" not in fake.http_health_checks(P)
    assert fake.end_stalls() == 1
    assert "stuck" in fake.http_health_checks(P)
    done = api.call("GET", f"projects/{P}/global/operations/{op['name']}")
    assert done["status"] == "DONE" and "error" not in done
    assert fake.end_stalls() == 0
