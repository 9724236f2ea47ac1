"""GceClient through the real google-cloud-compute client and AuthorizedSession, over a real
socket, against the Compute fake: retries, idempotency, operation errors, pacing, paging."""

from __future__ import annotations

import time

import pytest
from google.api_core import exceptions as core

from lbhc.gce.client import POOL_FIELDS, RULE_FIELDS
from lbhc.gce.errors import (
    GceAccessDenied,
    GceOperationError,
    GceTimeout,
    ReadOnlyViolation,
    is_forbidden,
    is_in_use,
)
from lbhc.model.cloud import COMPUTE_URL_PREFIX, http_health_check_url
from tests.builders import PROJECT, REGION, our_check, our_firewall, service
from tests.conftest import ComputeEnv

CHECK_PATH = "/global/httpHealthChecks"
COMPUTE = f"{COMPUTE_URL_PREFIX}projects/{PROJECT}/"


def mutations(env: ComputeEnv) -> list[tuple[str, str]]:
    return [(e.method, e.path) for e in env.fake.mutating_requests()]


@pytest.mark.parametrize(
    ("status", "reason"),
    [(429, None), (503, None), (500, None), (403, "rateLimitExceeded")],
    ids=["429", "503", "500", "403-rateLimitExceeded"],
)
def test_mutation_retried_on_transient_errors_with_one_request_id(
    compute: ComputeEnv, status: int, reason: str | None
) -> None:
    compute.fake.faults.fail_requests(
        times=2, status=status, reason=reason, method="POST", path_contains=CHECK_PATH
    )
    compute.client().insert_http_health_check(our_check())

    inserts = [e for e in compute.fake.journal if e.method == "POST" and CHECK_PATH in e.path]
    assert [e.status for e in inserts] == [status, status, 200]
    assert len({e.query["requestId"] for e in inserts}) == 1  # one id across retries
    assert set(compute.fake.http_health_checks(PROJECT)) == {our_check().name}


def test_reads_retried_too(compute: ComputeEnv) -> None:
    compute.fake.faults.fail_requests(times=3, status=503, method="GET", path_contains="firewalls")
    assert compute.client().get_firewall("absent") is None
    assert [e.status for e in compute.fake.journal] == [503, 503, 503, 404]


def test_gives_up_after_max_attempts(compute: ComputeEnv) -> None:
    compute.fake.faults.fail_requests(times=10, status=429)
    with pytest.raises(core.TooManyRequests):
        compute.client(max_attempts=3).get_http_health_check("x")
    assert len(compute.fake.journal) == 3


@pytest.mark.parametrize(("status", "reason"), [(403, "forbidden"), (400, "invalid")])
def test_permanent_errors_are_not_retried(compute: ComputeEnv, status: int, reason: str) -> None:
    compute.fake.faults.fail_requests(times=5, status=status, reason=reason)
    with pytest.raises(core.GoogleAPICallError):
        compute.client().insert_firewall(our_firewall())
    assert len(compute.fake.journal) == 1


def test_failing_operation_raises_with_its_reason(compute: ComputeEnv) -> None:
    compute.fake.faults.fail_operations(
        times=1,
        status=400,
        reason="resourceInUseByAnotherResource",
        message="in use",
        operation_type="insert",
    )
    with pytest.raises(GceOperationError) as caught:
        compute.client().insert_firewall(our_firewall())
    assert is_in_use(caught.value)
    assert compute.fake.firewalls(PROJECT) == {}


def test_operations_are_waited_until_done(compute: ComputeEnv) -> None:
    compute.fake.operation_latency = 0.3
    compute.client().insert_http_health_check(our_check())
    # The call returned only once the op was DONE, so the resource is visible now.
    assert our_check().name in compute.fake.http_health_checks(PROJECT)
    waits = [e for e in compute.fake.journal if e.path.endswith("/wait")]
    assert waits and all("/global/operations/" in e.path for e in waits)


def test_read_only_client_refuses_every_mutation_before_the_network(compute: ComputeEnv) -> None:
    client = compute.client(read_only=True)
    url = http_health_check_url(PROJECT, "x")
    calls = [
        lambda: client.insert_http_health_check(our_check()),
        lambda: client.update_http_health_check(our_check()),
        lambda: client.delete_http_health_check("x"),
        lambda: client.insert_firewall(our_firewall()),
        lambda: client.update_firewall(our_firewall()),
        lambda: client.delete_firewall("x"),
        lambda: client.add_health_check("pool", url),
        lambda: client.remove_health_check("pool", url),
    ]
    for call in calls:
        with pytest.raises(ReadOnlyViolation):
            call()
    assert compute.fake.journal == []


def test_round_trips_the_shared_resources(compute: ComputeEnv) -> None:
    client = compute.client()
    client.insert_http_health_check(our_check())
    client.insert_firewall(our_firewall())
    check = client.get_http_health_check(our_check().name)
    firewall = client.get_firewall(our_firewall().name)
    assert check is not None and firewall is not None
    assert check == our_check(self_link=check.self_link)
    assert firewall.allowed == our_firewall().allowed
    assert sorted(firewall.source_ranges) == sorted(our_firewall().source_ranges)
    assert firewall.target_tags == our_firewall().target_tags


def test_attach_and_detach_in_place(compute: ComputeEnv) -> None:
    client = compute.client()
    pool = compute.add_service_pool(service("web"))
    client.insert_http_health_check(our_check())
    url = http_health_check_url(PROJECT, our_check().name)
    client.add_health_check(pool, url)
    assert compute.pool_checks(pool) == [url]
    client.remove_health_check(pool, url)
    assert compute.pool_checks(pool) == []
    assert all("targetPools" not in p or "HealthCheck" in p for _, p in mutations(compute))


def test_lists_every_page(compute: ComputeEnv) -> None:
    for i in range(1203):
        compute.fake.add_target_pool(PROJECT, REGION, f"pool-{i:04d}")
    pools = compute.client().list_target_pools()
    assert len({p.name for p in pools}) == 1203
    pages = [e for e in compute.fake.journal if e.path.endswith("/targetPools")]
    assert len(pages) == 3
    assert all(e.query.get("maxResults") == "500" for e in pages)


def test_region_lists_ask_for_partial_responses_without_instance_lists(
    compute: ComputeEnv,
) -> None:
    svc = service("web")
    name = compute.add_service_pool(svc, health_checks=(http_health_check_url(PROJECT, "hc"),))
    compute.fake.add_target_pool(
        PROJECT,
        REGION,
        "big",
        instances=[f"{COMPUTE}zones/{REGION}-a/instances/node-{i}" for i in range(100)],
    )
    snapshot = compute.client().read_snapshot("k8s-l4-healthcheck-x")
    pool = next(p for p in snapshot.target_pools if p.name == name)
    rule = next(r for r in snapshot.forwarding_rules if r.name == name)
    seeded = compute.fake.target_pools(PROJECT, REGION)[name]
    assert (pool.description, pool.health_checks, pool.region, pool.self_link) == (
        seeded["description"],
        (http_health_check_url(PROJECT, "hc"),),
        seeded["region"],
        seeded["selfLink"],
    )
    assert (rule.description, rule.target) == (seeded["description"], seeded["selfLink"])
    masks = {e.path.rsplit("/", 1)[-1]: e.field_mask for e in compute.fake.journal}
    assert masks["targetPools"] == POOL_FIELDS and "instances" not in POOL_FIELDS
    assert masks["forwardingRules"] == RULE_FIELDS


def test_snapshot_marks_a_failed_list_as_a_gap(compute: ComputeEnv) -> None:
    compute.fake.faults.fail_requests(times=100, status=503, path_contains="/forwardingRules")
    snapshot = compute.client(max_attempts=2).read_snapshot("k8s-l4-healthcheck-x")
    assert not snapshot.complete
    assert "forwarding rules" in snapshot.gaps[0]


def test_a_failed_read_of_a_shared_resource_raises(compute: ComputeEnv) -> None:
    client = compute.client()
    client.list_target_pools()  # a read that worked: later refusals are the API's own errors
    compute.fake.faults.fail_requests(
        times=100, status=403, reason="forbidden", path_contains=CHECK_PATH
    )
    with pytest.raises(core.Forbidden):
        client.read_snapshot("k8s-l4-healthcheck-x")


def test_a_first_read_refused_names_the_identity_and_the_permission(compute: ComputeEnv) -> None:
    compute.fake.faults.fail_requests(
        times=100, status=403, reason="forbidden", path_contains=CHECK_PATH
    )
    with pytest.raises(GceAccessDenied) as caught:
        compute.client().read_snapshot("k8s-l4-healthcheck-x")
    assert is_forbidden(caught.value)  # still a 403 to callers that tell them apart
    assert "anonymous credentials" in str(caught.value)
    assert "compute.httpHealthChecks.get" in str(caught.value)


def test_a_wait_that_answers_not_done_is_polled_again_not_counted_as_a_failure(
    compute: ComputeEnv,
) -> None:
    # Each wait request is answered RUNNING after 0.2 s (the API's own ~2 min) while the
    # operation needs 1 s: five or so polls, none of which may spend the single attempt the
    # retry budget allows.
    compute.fake.operation_latency = 1.0
    compute.fake.wait_timeout = 0.2
    client = compute.client(max_attempts=1)
    client.insert_http_health_check(our_check())
    assert our_check().name in compute.fake.http_health_checks(PROJECT)
    waits = [e for e in compute.fake.journal if e.path.endswith("/wait")]
    assert len(waits) >= 2


def test_a_silent_poll_ends_the_wait_in_its_bound_with_one_line_naming_the_endpoint(
    compute: ComputeEnv,
) -> None:
    """A poll nobody answers (the endpoint went silent once the mutation landed) is not
    "not done yet" for ever: it is retried like any call, within a call's deadline plus one
    poll, and the change fails saying which endpoint did not answer and for how long."""
    compute.fake.operation_latency = 30.0
    compute.fake.faults.slow_requests(1.5, times=10, path_contains="/wait")
    client = compute.client(
        operation_poll_timeout_sec=0.3, call_timeout_sec=0.5, operation_timeout_sec=60
    )
    started = time.monotonic()
    with pytest.raises(GceTimeout) as caught:
        client.insert_http_health_check(our_check())
    took = time.monotonic() - started
    assert took < 0.3 + 0.5 + 1.0, took  # one poll and the call's deadline, plus slack
    message = str(caught.value)
    assert message.startswith(f"the Compute API at {compute.url} did not answer within 0.3 s")
    assert "(read timeout, " in message and "--gce-endpoint" in message
    assert isinstance(caught.value, OSError)  # a gap where the controller reads, not a crash


@pytest.mark.parametrize("latency", [0.0, 0.2], ids=["op-done-at-once", "op-pending"])
def test_retry_after_a_lost_response_does_not_repeat_the_mutation(
    compute: ComputeEnv, latency: float
) -> None:
    """The insert lands, its response is lost (503), lbhc retries: the same requestId gets
    the original operation back, so exactly one check exists and the call succeeds."""
    compute.fake.operation_latency = latency
    compute.fake.faults.fail_requests(
        times=1, status=503, method="POST", path_contains=CHECK_PATH, after_apply=True
    )
    compute.client().insert_http_health_check(our_check())
    inserts = [
        e for e in compute.fake.journal if e.method == "POST" and e.path.endswith(CHECK_PATH)
    ]
    assert [e.status for e in inserts] == [503, 200]
    assert len({e.query["requestId"] for e in inserts}) == 1
    assert list(compute.fake.http_health_checks(PROJECT)) == [our_check().name]
    ops = [o for o in compute.fake.operations(PROJECT) if o["operationType"] == "insert"]
    assert len(ops) == 1


def test_attach_retried_after_a_lost_response_is_applied_once(compute: ComputeEnv) -> None:
    client = compute.client()
    pool = compute.add_service_pool(service("web"))
    client.insert_http_health_check(our_check())
    url = http_health_check_url(PROJECT, our_check().name)
    compute.fake.faults.fail_requests(
        times=1, status=500, path_contains="addHealthCheck", after_apply=True
    )
    client.add_health_check(pool, url)
    assert compute.pool_checks(pool) == [url]
