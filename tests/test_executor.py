"""The executor against the Compute fake: ordering, isolation of failures, end-state checks."""

from __future__ import annotations

import json

from lbhc.executor import ApplyResult, Executor, Status
from lbhc.gce.client import GceClient
from lbhc.model.cloud import firewall_to_json
from lbhc.model.cluster import ClusterSnapshot, Service
from lbhc.model.plan import Action, Kind, Plan
from lbhc.planner.config import HealthCheckMode
from lbhc.planner.planner import plan
from lbhc.planner.shared import ownership_description, read_ledger
from tests.builders import PROJECT, cluster, config, names, our_check, our_firewall, service
from tests.conftest import ComputeEnv

CLUSTER_ID, NAME, URL = names()


def converge(
    env: ComputeEnv, snapshot: ClusterSnapshot, client: GceClient | None = None
) -> ApplyResult:
    gce = client or env.client()
    return Executor(gce, max_concurrency=4).apply(plan(snapshot, gce.read_snapshot(NAME), config()))


def services(n: int) -> tuple[Service, ...]:
    return tuple(service(f"svc-{i}") for i in range(n))


def test_converges_from_nothing_with_one_insert_each(compute: ComputeEnv) -> None:
    svcs = services(5)
    pools = [compute.add_service_pool(s) for s in svcs]
    result = converge(compute, cluster(services=svcs))
    assert result.ok and result.count(Status.DONE) == 7
    methods = [(e.method, e.path.rsplit("/", 1)[-1]) for e in compute.fake.mutating_requests()]
    assert methods.count(("POST", "httpHealthChecks")) == 1
    assert methods.count(("POST", "firewalls")) == 1
    assert methods.count(("POST", "addHealthCheck")) == 5
    assert all(compute.pool_checks(p) == [URL] for p in pools)
    # Firewall first, then the check, then attaches.
    assert methods.index(("POST", "firewalls")) < methods.index(("POST", "httpHealthChecks"))
    assert methods.index(("POST", "httpHealthChecks")) < methods.index(("POST", "addHealthCheck"))


def test_gc_detaches_then_deletes_check_then_firewall(compute: ComputeEnv) -> None:
    svcs = services(3)
    for s in svcs:
        compute.add_service_pool(s)
    assert converge(compute, cluster(services=svcs)).ok
    compute.fake.clear_journal()

    flipped = tuple(service(s.metadata.name, policy="Local") for s in svcs)
    result = converge(compute, cluster(services=flipped))
    assert result.ok
    order = [(e.method, e.path) for e in compute.fake.mutating_requests()]
    kinds = [
        "remove"
        if p.endswith("removeHealthCheck")
        else "check"
        if "httpHealthChecks" in p
        else "firewall"
        for _, p in order
    ]
    assert kinds == ["remove"] * 3 + ["check", "firewall"]
    assert compute.fake.http_health_checks(PROJECT) == {}
    assert compute.fake.firewalls(PROJECT) == {}


def test_gc_after_services_and_their_pools_are_gone(compute: ComputeEnv) -> None:
    svcs = services(2)
    pools = [compute.add_service_pool(s) for s in svcs]
    assert converge(compute, cluster(services=svcs)).ok

    # Services deleted; the cloud provider has not deleted their pools yet: GC waits.
    waiting = converge(compute, cluster(services=()))
    assert waiting.outcomes == ()
    assert NAME in compute.fake.http_health_checks(PROJECT)

    for name in pools:
        compute.delete_load_balancer(name)
    assert converge(compute, cluster(services=())).ok
    assert compute.fake.http_health_checks(PROJECT) == {}
    assert compute.fake.firewalls(PROJECT) == {}


def test_one_failing_pool_does_not_block_the_others(compute: ComputeEnv) -> None:
    svcs = services(4)
    pools = [compute.add_service_pool(s) for s in svcs]
    compute.fake.faults.fail_requests(
        times=1, status=400, reason="invalid", path_contains=f"{pools[1]}/addHealthCheck"
    )
    result = converge(compute, cluster(services=svcs))
    failed = [o.change.name for o in result.outcomes if o.status is Status.FAILED]
    assert failed == [pools[1]]
    assert [compute.pool_checks(p) == [URL] for p in pools] == [True, False, True, True]
    # The next pass repairs it: level-based, nothing remembered but what GCE holds.
    assert converge(compute, cluster(services=svcs)).ok
    assert compute.pool_checks(pools[1]) == [URL]


def test_attaches_skipped_when_the_check_cannot_be_created(compute: ComputeEnv) -> None:
    pool = compute.add_service_pool(service("web"))
    compute.fake.faults.fail_requests(
        times=1, status=400, reason="invalid", method="POST", path_contains="/httpHealthChecks"
    )
    result = converge(compute, cluster(services=(service("web"),)))
    statuses = {(o.change.action, o.status) for o in result.outcomes}
    assert (Action.ATTACH, Status.SKIPPED) in statuses
    assert compute.pool_checks(pool) == []
    assert not any("addHealthCheck" in e.path for e in compute.fake.journal)


def test_check_still_in_use_defers_both_deletes(compute: ComputeEnv) -> None:
    compute.add_service_pool(service("web"))
    assert converge(compute, cluster(services=(service("web"),))).ok
    # A pool this cluster cannot see (another region) still uses the check.
    compute.fake.add_target_pool(PROJECT, "europe-west1", "elsewhere", health_checks=(URL,))
    for mode in ("http", "operation"):
        compute.fake.in_use_delete_mode = mode
        result = converge(compute, cluster(services=(service("web", policy="Local"),)))
        by_kind = {
            o.change.kind.value: o for o in result.outcomes if o.change.action is Action.DELETE
        }
        assert by_kind["HttpHealthCheck"].status is Status.SKIPPED, mode
        assert "in use" in by_kind["HttpHealthCheck"].detail
        assert by_kind["HttpHealthCheck"].blocked, "reported as blocked garbage collection"
        assert by_kind["Firewall"].status is Status.SKIPPED, mode
        assert not by_kind["Firewall"].blocked  # held back by the check, not refused
        assert NAME in compute.fake.firewalls(PROJECT)


def test_already_exists_is_success_only_when_ours(compute: ComputeEnv) -> None:
    compute.add_service_pool(service("web"))
    snapshot = cluster(services=(service("web"),))
    gce = compute.client()
    stale = plan(snapshot, gce.read_snapshot(NAME), config())  # says: create
    gce.insert_http_health_check(our_check())  # a concurrent replica got there first
    result = Executor(gce).apply(stale)
    create = next(o for o in result.outcomes if o.change.kind.value == "HttpHealthCheck")
    assert (create.status, create.detail) == (Status.DONE, "already existed")
    assert result.ok


def test_already_exists_foreign_is_a_failure_not_a_takeover(compute: ComputeEnv) -> None:
    compute.add_service_pool(service("web"))
    snapshot = cluster(services=(service("web"),))
    gce = compute.client()
    stale = plan(snapshot, gce.read_snapshot(NAME), config())
    compute.fake.add_http_health_check(PROJECT, NAME, description="made by hand")
    result = Executor(gce).apply(stale)
    create = next(o for o in result.outcomes if o.change.kind.value == "HttpHealthCheck")
    assert create.status is Status.FAILED
    assert compute.fake.http_health_checks(PROJECT)[NAME]["description"] == "made by hand"
    assert not any("addHealthCheck" in e.path for e in compute.fake.journal)


def plan_replacing_a_foreign_check(compute: ComputeEnv) -> tuple[str, str, GceClient, Plan]:
    """A pool carrying a hand-made check, and the plan that takes it over (takeover mode)."""
    foreign: str = compute.fake.add_http_health_check(PROJECT, "legacy-check")["selfLink"]
    pool = compute.add_service_pool(service("web"), health_checks=(foreign,))
    gce = compute.client()
    config_ = config(health_check_mode=HealthCheckMode.TAKEOVER)
    return (
        foreign,
        pool,
        gce,
        plan(cluster(services=(service("web"),)), gce.read_snapshot(NAME), config_),
    )


def test_replacing_a_foreign_check_removes_it_first(compute: ComputeEnv) -> None:
    _, pool, gce, the_plan = plan_replacing_a_foreign_check(compute)
    assert Executor(gce).apply(the_plan).ok
    assert compute.pool_checks(pool) == [URL]
    assert "legacy-check" in compute.fake.http_health_checks(PROJECT)  # detached, not deleted
    # Recorded in our check before the pool was touched: the journal shows the order.
    ledger = read_ledger(gce.get_http_health_check(NAME))
    assert ledger.recorded_for(pool) is not None
    paths = [e.path for e in compute.fake.mutating_requests()]
    first_check_write = next(i for i, p in enumerate(paths) if "httpHealthChecks" in p)
    remove = next(i for i, p in enumerate(paths) if p.endswith("/removeHealthCheck"))
    assert first_check_write < remove


def test_a_give_back_that_cannot_go_on_puts_lbhcs_check_back(compute: ComputeEnv) -> None:
    foreign, pool, gce, the_plan = plan_replacing_a_foreign_check(compute)
    assert Executor(gce).apply(the_plan).ok
    back = plan(cluster(services=(service("web"),)), gce.read_snapshot(NAME), config())
    (detach,) = [c for c in back.changes if c.action is Action.DETACH]
    assert detach.restores.endswith("/legacy-check")
    compute.fake.faults.fail_requests(
        times=1, status=400, reason="invalid", path_contains=f"{pool}/addHealthCheck"
    )
    result = Executor(gce).apply(back)
    outcome = next(o for o in result.outcomes if o.change.action is Action.DETACH)
    assert outcome.status is Status.FAILED and "lbhc's check put back" in outcome.detail
    assert compute.pool_checks(pool) == [URL]
    # The check, and the ledger in it, stays until the give-back has happened.
    assert NAME in compute.fake.http_health_checks(PROJECT)
    assert (
        Executor(gce)
        .apply(plan(cluster(services=(service("web"),)), gce.read_snapshot(NAME), config()))
        .ok
    )
    assert compute.pool_checks(pool) == [foreign]


def test_drifted_firewall_is_restored_through_a_real_update(compute: ComputeEnv) -> None:
    compute.add_service_pool(service("web"))
    assert converge(compute, cluster(services=(service("web"),))).ok
    drift = {
        "sourceTags": ["anything"],
        "destinationRanges": ["203.0.113.7/32"],
        "sourceRanges": ["0.0.0.0/0"],
    }
    status, _, body = compute.fake.handle(
        "PATCH",
        f"/compute/v1/projects/{PROJECT}/global/firewalls/{NAME}",
        None,
        {"Content-Type": "application/json"},
        json.dumps(drift).encode(),
    )
    assert status == 200, body
    assert converge(compute, cluster(services=(service("web"),))).ok
    firewall = compute.fake.firewalls(PROJECT)[NAME]
    assert "sourceTags" not in firewall and "destinationRanges" not in firewall
    assert sorted(firewall["sourceRanges"]) == [
        "209.85.152.0/22",
        "209.85.204.0/22",
        "35.191.0.0/16",
    ]
    assert converge(compute, cluster(services=(service("web"),))).outcomes == ()


def test_attach_to_a_pool_deleted_since_planning_is_skipped(compute: ComputeEnv) -> None:
    pool = compute.add_service_pool(service("web"))
    gce = compute.client()
    stale = plan(cluster(services=(service("web"),)), gce.read_snapshot(NAME), config())
    compute.delete_load_balancer(pool)
    result = Executor(gce).apply(stale)
    attach = next(o for o in result.outcomes if o.change.action is Action.ATTACH)
    assert (attach.status, attach.detail) == (Status.SKIPPED, "target pool no longer exists")
    assert result.ok


def test_failed_replacement_restores_the_foreign_check(compute: ComputeEnv) -> None:
    foreign, pool, gce, the_plan = plan_replacing_a_foreign_check(compute)
    compute.fake.faults.fail_requests(
        times=1, status=400, reason="invalid", path_contains=f"{pool}/addHealthCheck"
    )
    result = Executor(gce).apply(the_plan)
    attach = next(o for o in result.outcomes if o.change.action is Action.ATTACH)
    assert attach.status is Status.FAILED and "previous check restored" in attach.detail
    assert compute.pool_checks(pool) == [foreign]


def test_already_exists_while_that_insert_still_runs_is_retried_not_called_foreign(
    compute: ComputeEnv,
) -> None:
    compute.add_service_pool(service("web"))
    gce = compute.client()
    stale = plan(cluster(services=(service("web"),)), gce.read_snapshot(NAME), config())
    compute.fake.operation_latency = 30.0  # a predecessor's insert, still RUNNING
    status, _, _ = compute.fake.handle(
        "POST",
        f"/compute/v1/projects/{PROJECT}/global/firewalls",
        body=json.dumps(firewall_to_json(our_firewall())),
    )
    assert status == 200
    compute.fake.operation_latency = 0.0  # lbhc's own operations finish at once
    result = Executor(gce).apply(stale)
    create = next(o for o in result.outcomes if o.change.kind.value == "Firewall")
    assert create.status is Status.FAILED and "still in progress" in create.detail
    assert "not ours" not in create.detail
    assert all(o.status is Status.SKIPPED for o in result.outcomes if o.change.name != NAME)


def test_an_attach_whose_check_was_deleted_meanwhile_fails_to_be_retried(
    compute: ComputeEnv,
) -> None:
    """Unlike a pool deleted meanwhile (skipped: its Service went), a check deleted by hand
    between plan and attach fails the pass, so it is retried soon and the check recreated."""
    gone = compute.add_service_pool(service("gone"))
    web = compute.add_service_pool(service("web"))
    gce = compute.client()
    gce.insert_firewall(our_firewall())
    gce.insert_http_health_check(our_check())
    snapshot = cluster(services=(service("gone"), service("web")))
    stale = plan(snapshot, gce.read_snapshot(NAME), config())  # says: attach both
    compute.delete_load_balancer(gone)
    gce.delete_http_health_check(NAME)
    outcomes = {o.change.name: o for o in Executor(gce).apply(stale).outcomes}
    assert (outcomes[gone].status, outcomes[gone].detail) == (
        Status.SKIPPED,
        "target pool no longer exists",
    )
    assert (outcomes[web].status, outcomes[web].detail) == (
        Status.FAILED,
        "the health check no longer exists",
    )


def test_a_check_made_by_a_predecessor_without_this_passs_records_holds_the_takeover_back(
    compute: ComputeEnv,
) -> None:
    """A killed leader's insert landed with an older ledger; the successor's plan (made before
    it could read that check) creates it with a record and takes a pool over. alreadyExists
    with the record missing is a failure: the pool is not touched until a later pass has
    recorded it."""
    foreign, pool, gce, the_plan = plan_replacing_a_foreign_check(compute)
    compute.fake.add_http_health_check(
        PROJECT, NAME, description=ownership_description(CLUSTER_ID), port=10256
    )
    result = Executor(gce).apply(the_plan)
    create = next(o for o in result.outcomes if o.change.kind is Kind.HTTP_HEALTH_CHECK)
    assert create.status is Status.FAILED and "takeover records" in create.detail
    assert compute.pool_checks(pool) == [foreign]  # untouched
    again = plan(
        cluster(services=(service("web"),)),
        gce.read_snapshot(NAME),
        config(health_check_mode=HealthCheckMode.TAKEOVER),
    )
    assert Executor(gce).apply(again).ok
    assert compute.pool_checks(pool) == [URL]
    assert read_ledger(gce.get_http_health_check(NAME)).recorded_for(pool) is not None
