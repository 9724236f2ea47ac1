"""Fault injection: failing requests, failing operations, rate limiting, latency."""

from __future__ import annotations

import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake

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
