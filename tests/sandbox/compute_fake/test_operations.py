"""Operation lifecycle (driven by an injected clock), wait, requestId idempotency."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.waiting import wait_for

P = "proj"
R = "us-central1"
HCS = f"projects/{P}/global/httpHealthChecks"
LATENCY = 10.0
Status = compute_v1.Operation.Status


@pytest.fixture
def fake(clock: Any) -> ComputeFake:
    """Overrides the shared fixture: ops take LATENCY seconds of the injected clock."""
    fake = ComputeFake(operation_latency=LATENCY, clock=clock)
    fake.add_network(P, "default")
    return fake


def op_path(op: dict[str, Any]) -> str:
    return f"projects/{P}/global/operations/{op['name']}"


def test_insert_goes_pending_running_done(api: Any, fake: ComputeFake, clock: Any) -> None:
    op = api.call("POST", HCS, {"name": "hc"})
    assert (op["status"], op["progress"]) == ("PENDING", 0)
    assert "startTime" not in op and "endTime" not in op
    with pytest.raises(gexc.NotFound):
        api.call("GET", f"{HCS}/hc")  # not created until DONE
    with pytest.raises(gexc.Conflict):
        api.call("POST", HCS, {"name": "hc"})  # but the name is already reserved
    clock.advance(LATENCY / 2)
    running = api.call("GET", op_path(op))
    assert running["status"] == "RUNNING" and "startTime" in running
    assert fake.http_health_checks(P) == {}
    clock.advance(LATENCY / 2)
    done = api.call("GET", op_path(op))
    assert (done["status"], done["progress"]) == ("DONE", 100)
    assert done["insertTime"] <= done["startTime"] <= done["endTime"]
    assert "error" not in done
    assert api.call("GET", f"{HCS}/hc")["id"] == op["targetId"]


def test_delete_applies_at_done(api: Any, fake: ComputeFake, clock: Any) -> None:
    fake.add_http_health_check(P, "hc")
    first = api.call("DELETE", f"{HCS}/hc")
    second = api.call("DELETE", f"{HCS}/hc")  # still exists, so accepted too
    assert "hc" in fake.http_health_checks(P)
    clock.advance(LATENCY)
    assert fake.http_health_checks(P) == {}
    assert "error" not in api.call("GET", op_path(first))
    # The effect is re-validated when the op completes: the second delete finds nothing.
    failed = api.call("GET", op_path(second))
    assert failed["httpErrorStatusCode"] == 404
    assert failed["error"]["errors"][0]["code"] == "RESOURCE_NOT_FOUND"


def test_wait_blocks_until_done(clients: Any, fake: ComputeFake, clock: Any) -> None:
    body = compute_v1.Firewall(name="fw", allowed=[compute_v1.Allowed(I_p_protocol="tcp")])
    op = clients.firewalls.insert_unary(project=P, firewall_resource=body, retry=None)
    assert op.status == Status.PENDING
    result: list[compute_v1.Operation] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            clients.global_ops.wait(project=P, operation=op.name, retry=None, timeout=30)
        )
    )
    waiter.start()
    wait_for(lambda: fake.waiters == 1)
    clock.advance(LATENCY)
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    assert result[0].status == Status.DONE
    assert "fw" in fake.firewalls(P)


def test_wait_gives_up_after_wait_timeout(clients: Any, fake: ComputeFake, clock: Any) -> None:
    fake.wait_timeout = 30.0
    fake.operation_latency = 100.0
    fake.add_target_pool(P, R, "pool")
    fake.add_http_health_check(P, "hc")
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
    result: list[compute_v1.Operation] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            clients.region_ops.wait(project=P, region=R, operation=op.name, retry=None, timeout=30)
        )
    )
    waiter.start()
    wait_for(lambda: fake.waiters == 1)  # the wait must have started before time moves
    clock.advance(31)
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    assert result[0].status == Status.PENDING  # like the real API after ~2 min: not DONE yet
    clock.advance(100)
    done = clients.region_ops.get(project=P, region=R, operation=op.name, retry=None)
    assert done.status == Status.DONE
    assert fake.target_pools(P, R)["pool"]["healthChecks"]


def test_wait_with_real_time_latency(make_clients: Any) -> None:
    fake = ComputeFake(operation_latency=0.2)
    fake.add_network(P, "default")
    with ComputeFakeServer(fake) as server:
        clients = make_clients(server.url)
        body = compute_v1.Firewall(name="fw", allowed=[compute_v1.Allowed(I_p_protocol="tcp")])
        started = time.monotonic()
        op = clients.firewalls.insert_unary(project=P, firewall_resource=body, retry=None)
        done = clients.global_ops.wait(project=P, operation=op.name, retry=None, timeout=10)
        assert done.status == Status.DONE
        assert time.monotonic() - started >= 0.2
        assert "fw" in fake.firewalls(P)


def test_operations_are_scoped(api: Any, fake: ComputeFake, clock: Any) -> None:
    fake.add_target_pool(P, R, "pool")
    api.call("POST", HCS, {"name": "hc"})
    clock.advance(LATENCY)
    body = {"healthChecks": [{"healthCheck": "global/httpHealthChecks/hc"}]}
    op = api.call("POST", f"projects/{P}/regions/{R}/targetPools/pool/addHealthCheck", body)
    with pytest.raises(gexc.NotFound):
        api.call("GET", op_path(op))  # a regional op is not a global one
    assert (
        api.call("GET", f"projects/{P}/regions/{R}/operations/{op['name']}")["name"] == op["name"]
    )
    with pytest.raises(gexc.NotFound):
        api.call("POST", f"projects/{P}/global/operations/operation-123-nope/wait")


def test_request_id_returns_the_original_operation(api: Any, fake: ComputeFake, clock: Any) -> None:
    rid = str(uuid.uuid4())
    first = api.call("POST", HCS, {"name": "hc"}, params={"requestId": rid})
    retry = api.call("POST", HCS, {"name": "hc"}, params={"requestId": rid})
    assert retry["name"] == first["name"] and retry["status"] == "PENDING"
    clock.advance(LATENCY)
    # After completion a retry still answers the original op instead of alreadyExists.
    again = api.call("POST", HCS, {"name": "hc"}, params={"requestId": rid})
    assert (again["name"], again["status"]) == (first["name"], "DONE")
    assert len(fake.http_health_checks(P)) == 1
    assert len(fake.operations(P)) == 1
    assert len(fake.mutating_requests()) == 3  # every request journaled
    # A new requestId is a new request.
    with pytest.raises(gexc.Conflict):
        api.call("POST", HCS, {"name": "hc"}, params={"requestId": str(uuid.uuid4())})


def test_request_id_through_the_client(clients: Any, fake: ComputeFake, clock: Any) -> None:
    fake.operation_latency = 0
    rid = str(uuid.uuid4())
    body = compute_v1.Firewall(name="fw", allowed=[compute_v1.Allowed(I_p_protocol="tcp")])
    request = compute_v1.InsertFirewallRequest(project=P, firewall_resource=body, request_id=rid)
    one = clients.firewalls.insert_unary(request=request, retry=None)
    two = clients.firewalls.insert_unary(request=request, retry=None)
    assert one.name == two.name and one.id == two.id
    assert [e.query["requestId"] for e in fake.mutating_requests()] == [rid, rid]


@pytest.mark.parametrize("rid", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_request_id_must_be_a_uuid(api: Any, rid: str) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        api.call("POST", HCS, {"name": "hc"}, params={"requestId": rid})
    assert info.value.errors[0]["reason"] == "invalid"


def test_failed_operation_releases_the_name(api: Any, fake: ComputeFake, clock: Any) -> None:
    fake.faults.fail_operations(
        times=1, status=409, reason="alreadyExists", message="boom", operation_type="insert"
    )
    op = api.call("POST", HCS, {"name": "hc"})
    clock.advance(LATENCY)
    failed = api.call("GET", op_path(op))
    assert failed["status"] == "DONE"
    assert (failed["httpErrorStatusCode"], failed["httpErrorMessage"]) == (409, "CONFLICT")
    assert failed["error"]["errors"] == [{"code": "RESOURCE_ALREADY_EXISTS", "message": "boom"}]
    assert fake.http_health_checks(P) == {}
    api.call("POST", HCS, {"name": "hc"})  # the count is spent, the name free again
    clock.advance(LATENCY)
    assert set(fake.http_health_checks(P)) == {"hc"}
