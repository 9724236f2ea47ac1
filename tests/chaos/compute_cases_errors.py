"""Compute fault cases where the API itself misbehaves: bursts of 429, 403 rateLimitExceeded
and 5xx; a quota lbhc runs into (or paces under); operations that end DONE with an error,
stay RUNNING for a while or for ever; requests and responses slower than lbhc's request
timeout; latency spikes on every request and every operation."""

from __future__ import annotations

import math
import random

from lbhc.sandbox.compute_fake import JournalEntry
from tests.chaos.compute_cases import (
    ATTEMPTS,
    OP_TIMEOUT,
    REQUEST_TIMEOUT,
    START,
    Arm,
    Case,
    Run,
    Scale,
    clean_changes,
    converge_first,
    no_removal,
    now,
)
from tests.chaos.compute_checks import attempts_per_request
from tests.chaos.compute_world import API, FaultWorld
from tests.controller.harness import NAME
from tests.waiting import wait_for


# ---- bursts of error answers -----------------------------------------------------------
def burst(status: int, reason: str | None, method: str | None) -> Arm:
    """`times` consecutive matching requests fail. A pass fails only when some call spent
    its whole budget (gce_max_attempts faults), so at most times // attempts passes fail."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        low, high = scale.burst
        times = rng.randint(low * ATTEMPTS + 1, high * ATTEMPTS + ATTEMPTS // 2)
        fw.compute.faults.fail_requests(times=times, status=status, reason=reason, method=method)
        fw.start(START)
        return Run(
            changes=clean_changes(fw),
            failed_passes=times // ATTEMPTS,
            check=no_removal,
            figures={"burst": times},
        )

    return arm


# ---- a quota: lbhc beyond it, and lbhc paced under it ----------------------------------
QUOTA_PER_SEC, QUOTA_BURST = 2.0, 3


def quota_exceeded(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """lbhc paces at 10 mutations/s against a quota of 2/s: 403 rateLimitExceeded. After a
    failed pass the backoff (>= 0.5 s) refills a token, so every failed pass but the first
    lands at least one mutation: no more failed passes than changes."""
    fw.compute.faults.rate_limit(per_second=QUOTA_PER_SEC, burst=QUOTA_BURST)
    fw.start(START)
    changes = clean_changes(fw)
    return Run(changes=changes, failed_passes=changes, check=no_removal)


def quota_paced_under(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """With gce_mutations_per_second under the quota, the token bucket alone keeps lbhc
    inside it: not one 403."""
    fw.compute.faults.rate_limit(per_second=QUOTA_PER_SEC, burst=QUOTA_BURST)
    fw.start({**START, "gce_mutations_per_second": QUOTA_PER_SEC / 2})

    def never_limited(fw: FaultWorld) -> None:
        assert fw.compute.faults.injected().get("rate_limited", 0) == 0
        no_removal(fw)

    return Run(changes=clean_changes(fw), check=never_limited)


# ---- operations that end DONE with an error --------------------------------------------
def operation_errors(status: int, reason: str, operation_type: str) -> Arm:
    """Operation errors are not retried inside a pass (the next pass decides afresh with a
    new requestId): each can fail one pass at most."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        times = rng.randint(1, scale.burst[1])
        fw.compute.faults.fail_operations(
            times=times, status=status, reason=reason, operation_type=operation_type
        )
        fw.start(START)
        return Run(
            changes=clean_changes(fw) + times,
            failed_passes=times,
            check=no_removal,
            figures={"burst": times},
        )

    return arm


# ---- operations that stall -------------------------------------------------------------
def stall_attach(wait_timeout: float) -> Arm:
    """One attach never finishes. lbhc's operation timeout ends its wait (whether the API's
    `wait` answers RUNNING, or lbhc's own poll times out first), that pass fails, the next
    attaches with a new request. The stuck operation stays RUNNING for ever."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        fw.compute.wait_timeout = wait_timeout
        fw.compute.faults.stall_operations(times=1, operation_type="addHealthCheck")
        fw.start({**START, "gce_operation_timeout_sec": OP_TIMEOUT})
        return Run(
            changes=clean_changes(fw) + 1, failed_passes=1, waits=OP_TIMEOUT, check=no_removal
        )

    return arm


def stall_insert(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """The firewall insert stays RUNNING `stall` seconds: lbhc gives up after its operation
    timeout; until the insert lands the name is taken (409) yet nothing is readable, so
    passes keep failing, at most as many as pass backoffs fit in the stall, plus two."""
    fw.compute.wait_timeout = 0.3
    fw.compute.faults.stall_operations(times=1, seconds=scale.stall, operation_type="insert")
    fw.start({**START, "gce_operation_timeout_sec": OP_TIMEOUT})
    failed = int(math.log2(2 * scale.stall + 1)) + 2

    def stall_ended(fw: FaultWorld) -> None:
        inserts = [m for m in fw.lbhc_mutations() if m.path == f"{API}/global/firewalls"]
        run.fault_end = inserts[0].time + scale.stall
        no_removal(fw)

    run = Run(
        changes=clean_changes(fw) + failed,
        failed_passes=failed,
        waits=scale.stall + OP_TIMEOUT,
        check=stall_ended,
    )
    return run


def stall_delete(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Garbage collection: the check's delete never finishes. The wait ends at the operation
    timeout, the firewall is kept (it goes only after the check), and the next pass deletes
    the check with a new request, then the firewall."""
    fw.compute.wait_timeout = 0.3
    converge_first(fw, {"gce_operation_timeout_sec": OP_TIMEOUT})
    attached = len(fw.cluster_pools)
    fw.compute.faults.stall_operations(times=1, operation_type="delete")
    for pool in list(fw.cluster_pools):
        fw.flip(pool, "Local")

    def firewall_after_check(fw: FaultWorld) -> None:
        deletes = [m.path.rsplit("/", 2)[-2] for m in fw.lbhc_mutations() if m.method == "DELETE"]
        assert deletes == ["httpHealthChecks", "httpHealthChecks", "firewalls"], deletes

    return Run(
        changes=2 + attached + attached + 3,
        failed_passes=1,
        waits=OP_TIMEOUT,
        fault_end=now(),
        check=firewall_after_check,
    )


# ---- slow requests and responses -------------------------------------------------------
def slow(method: str, path: str, after_apply: bool, timeout: float | None = REQUEST_TIMEOUT) -> Arm:
    """One request held longer than lbhc's request timeout (a real socket timeout: made
    `timeout`, or the client's own 30 s default when None): before it is served (it lands
    late), or after (it landed; the answer is lost). lbhc retries; a mutation's retry
    carries the same requestId, so the insert happens once and lbhc never sees
    alreadyExists."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        fw.start(START, request_timeout=timeout)
        limit = fw.app.gce.config.request_timeout_sec if fw.app else 0.0
        fw.compute.faults.slow_requests(
            limit + 1.0, method=method, path_contains=path, after_apply=after_apply
        )

        def retried(fw: FaultWorld) -> None:
            def sent() -> list[JournalEntry]:
                return [e for e in fw.lbhc_requests() if (e.method, e.path) == (method, API + path)]

            # A held request is journaled when it is answered, after lbhc has moved on.
            wait_for(lambda: len(sent()) >= 2, timeout=limit + 10, what="the request and its retry")
            if method == "POST":
                ids = {e.query["requestId"] for e in sent()}
                assert len(ids) == 1, "a retried insert must keep its requestId"
                assert 409 not in {e.status for e in fw.lbhc_requests()}
            no_removal(fw)

        return Run(changes=clean_changes(fw) + 1, waits=limit, check=retried)

    return arm


# ---- latency spikes --------------------------------------------------------------------
def latency_spike(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Every request slower by `spike` (below the request timeout): slower, not failing, so
    not a single retry."""
    fw.compute.faults.latency(scale.spike)
    fw.start(START)
    changes = clean_changes(fw)
    waits = scale.spike * (12 + changes)
    return Run(changes=changes, waits=waits, during=True, check=_calm_after_spike)


def operation_latency_spike(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Every operation takes `op_latency` to finish: lbhc waits them out, retries nothing."""
    fw.compute.operation_latency = scale.op_latency
    fw.start(START)
    changes = clean_changes(fw)
    waits = scale.op_latency * changes
    return Run(changes=changes, waits=waits, during=True, check=_calm_after_spike)


def _calm_after_spike(fw: FaultWorld) -> None:
    fw.compute.faults.latency(0)
    fw.compute.operation_latency = 0.0
    assert max(attempts_per_request(fw).values()) == 1, "a slow answer is not a failure"
    assert fw.failed_passes() == 0
    no_removal(fw)


CASES = [
    Case("burst-429-every-request", "429 burst", burst(429, None, None)),
    Case("burst-403-rate-limit-mutations", "403 rateLimitExceeded burst", burst(403, None, "POST")),
    Case("burst-500-mutations", "5xx burst", burst(500, None, "POST"), short=False),
    Case("burst-503-reads", "5xx burst", burst(503, None, "GET")),
    Case("burst-503-every-request", "5xx burst", burst(503, None, None), short=False),
    Case("quota-exceeded", "403 rateLimitExceeded quota", quota_exceeded),
    Case("quota-paced-under", "403 rateLimitExceeded quota", quota_paced_under, short=False),
    Case(
        "operation-error-insert-500",
        "operation DONE with error",
        operation_errors(500, "backendError", "insert"),
    ),
    Case(
        "operation-error-attach-503",
        "operation DONE with error",
        operation_errors(503, "backendError", "addHealthCheck"),
        short=False,
    ),
    Case(
        "operation-error-insert-quota",
        "operation DONE with error",
        operation_errors(403, "quotaExceeded", "insert"),
        short=False,
    ),
    Case("operation-never-done-attach", "operation never finishes", stall_attach(0.3)),
    Case(
        "operation-never-done-attach-poll-timeout",
        "operation never finishes",
        stall_attach(OP_TIMEOUT * 5),
        short=False,
    ),
    Case("operation-stuck-insert", "operation never finishes", stall_insert, short=False),
    Case("operation-never-done-delete", "operation never finishes", stall_delete),
    Case(
        "slow-read-beyond-timeout",
        "latency spike",
        slow("GET", f"/global/httpHealthChecks/{NAME}", after_apply=False),
        short=False,
    ),
    Case(
        "slow-insert-response-beyond-timeout",
        "alreadyExists after a timed-out insert",
        slow("POST", "/global/firewalls", after_apply=True),
    ),
    Case(
        "slow-insert-request-beyond-timeout",
        "alreadyExists after a timed-out insert",
        slow("POST", "/global/httpHealthChecks", after_apply=False),
        short=False,
    ),
    Case(
        "slow-insert-response-beyond-default-timeout",
        "alreadyExists after a timed-out insert",
        slow("POST", "/global/firewalls", after_apply=True, timeout=None),
        short=False,
        max_seeds=1,
    ),
    Case("latency-spike-every-request", "latency spike", latency_spike),
    Case("latency-spike-operations", "latency spike", operation_latency_spike, short=False),
]
