"""Takeover mode and its ledger: what lbhc replaced is recorded in its own check before any
pool is touched, and given back on a mode change, in fallback, for a pool that is no longer
eligible, and after a crash between the remove and the add. Each case plans, "applies" the
plan to the snapshot (planner/applied.py) and plans again until nothing changes."""

from __future__ import annotations

import dataclasses

import pytest

from lbhc.model.cloud import CloudSnapshot, HttpHealthCheck, resource_name, resource_path
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Action, Attach, Kind, Plan
from lbhc.planner.applied import cloud_after
from lbhc.planner.config import HealthCheckMode, PlannerConfig
from lbhc.planner.ledger import MAX_DESCRIPTION, TakeoverLedger
from lbhc.planner.planner import plan
from lbhc.planner.shared import ownership_description, read_ledger
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    check_url,
    cloud,
    cluster,
    config,
    kube_proxy_pod,
    names,
    node,
    our_check,
    our_firewall,
    pool_for,
    service,
)

CLUSTER_ID, NAME, URL = names()
TAKEOVER = config(health_check_mode=HealthCheckMode.TAKEOVER)
COEXIST = config()
WEB, API = service("web"), service("api")


def converge(
    snapshot: ClusterSnapshot, world: CloudSnapshot, cfg: PlannerConfig, passes: int = 5
) -> tuple[CloudSnapshot, list[Plan]]:
    plans = []
    for _ in range(passes):
        result = plan(snapshot, world, cfg)
        plans.append(result)
        if not result.changes:
            return world, plans
        world = cloud_after(world, result.changes)
    raise AssertionError(f"no convergence in {passes} passes: {plans[-1].changes}")


def carried(world: CloudSnapshot) -> dict[str, tuple[str, ...]]:
    return {p.name: tuple(resource_name(u) for u in p.health_checks) for p in world.target_pools}


def cp_world(*svcs: object) -> CloudSnapshot:
    return cloud(
        pools=tuple(pool_for(s, health_checks=(CP.self_link,)) for s in svcs), checks=(CP,)
    )  # type: ignore[arg-type]


def test_takeover_then_coexist_gives_the_cloud_providers_check_back() -> None:
    snapshot = cluster(services=(WEB, API))
    world, _ = converge(snapshot, cp_world(WEB, API), TAKEOVER)
    assert set(carried(world).values()) == {(NAME,)}
    assert len(read_ledger(world.health_check)) == 2

    world, plans = converge(snapshot, world, COEXIST)
    first = plans[0].changes
    assert {c.action for c in first if c.kind is Kind.TARGET_POOL} == {Action.DETACH}
    assert all(c.restores == CP.self_link for c in first if c.kind is Kind.TARGET_POOL)
    # Given back, lbhc's check is no longer needed: collected, check before firewall.
    assert set(carried(world).values()) == {(CP.name,)}
    assert world.health_check is None and world.firewall is None


@pytest.mark.parametrize(
    ("cfg", "expect"),
    [
        (COEXIST, (Action.ATTACH, CP.self_link)),  # give back what the ledger records
        (TAKEOVER, (Action.ATTACH, URL)),  # finish the takeover, keeping the record
    ],
    ids=["coexist-gives-back", "takeover-finishes"],
)
def test_a_crash_between_remove_and_add_loses_nothing(
    cfg: PlannerConfig, expect: tuple[Action, str]
) -> None:
    """The remove happened, the add did not: the pool carries nothing, the ledger knows."""
    ledger = TakeoverLedger().with_records({pool_for(WEB).name: CP.self_link})
    check = our_check(description=_described(ledger))
    world = cloud(check=check, firewall=our_firewall(), pools=(pool_for(WEB),), checks=(CP,))
    result = plan(cluster(services=(WEB,)), world, cfg)
    (change,) = [c for c in result.changes if c.kind is Kind.TARGET_POOL]
    assert (change.action, change.health_check_url) == expect
    assert not change.replaces  # nothing is on the pool to replace
    after, _ = converge(cluster(services=(WEB,)), world, cfg)
    if cfg is TAKEOVER:
        assert read_ledger(after.health_check).recorded_for(pool_for(WEB).name) is not None
        assert carried(after) == {pool_for(WEB).name: (NAME,)}
    else:
        assert carried(after) == {pool_for(WEB).name: (CP.name,)}


def test_fallback_in_takeover_mode_gives_back_rather_than_leaving_pools_unchecked() -> None:
    snapshot = cluster(services=(WEB,))
    world, _ = converge(snapshot, cp_world(WEB), TAKEOVER)
    old = cluster(
        services=(WEB,),
        nodes=(node("a"), node("b")),
        pods=(kube_proxy_pod("b", image="registry.k8s.io/kube-proxy:v1.6.13"),),
    )
    result = plan(old, world, TAKEOVER)
    assert result.fallback is not None and result.fallback.others_stay == 0
    (detach,) = [c for c in result.changes if c.action is Action.DETACH]
    assert detach.restores == CP.self_link


def test_an_opted_out_pool_gets_its_check_back() -> None:
    snapshot = cluster(services=(WEB, API))
    world, _ = converge(snapshot, cp_world(WEB, API), TAKEOVER)
    opted = service("web", annotations={"lbhc.dev/ignore": "true"})
    result = plan(cluster(services=(opted, API)), world, TAKEOVER)
    (detach,) = [c for c in result.changes if c.action is Action.DETACH]
    assert detach.name == pool_for(WEB).name and detach.restores == CP.self_link


def test_a_recorded_check_that_is_gone_for_now_keeps_its_record() -> None:
    """The cloud provider deletes its node check once no pool uses it (which taking over
    every pool allows) and makes it again, same name, with its next load balancer. Meanwhile
    the pool keeps lbhc's check (better than none), lbhc says why, and the record stays, so
    the check goes back once it exists again."""
    snapshot = cluster(services=(WEB,))
    taken, _ = converge(snapshot, cp_world(WEB), TAKEOVER)
    gone = dataclasses.replace(taken, health_checks={})  # listed in full: CP is gone
    result = plan(snapshot, gone, COEXIST)
    assert result.changes == ()
    assert any("no longer exists" in w for w in result.warnings)
    back, plans = converge(snapshot, taken, COEXIST)  # the cloud provider made it again
    assert carried(back) == {pool_for(WEB).name: (CP.name,)}
    assert plans[0].changes[0].restores == CP.self_link


def test_a_pool_taken_over_again_keeps_one_record() -> None:
    snapshot = cluster(services=(WEB, API))
    world, _ = converge(snapshot, cp_world(WEB, API), TAKEOVER)
    # Someone put the cloud provider's check back on web by hand; lbhc takes it over again
    # and the record stays one per pool.
    pools = tuple(
        dataclasses.replace(p, health_checks=(CP.self_link,)) if p.name == pool_for(WEB).name else p
        for p in world.target_pools
    )
    world, _ = converge(snapshot, dataclasses.replace(world, target_pools=pools), TAKEOVER)
    assert len(read_ledger(world.health_check)) == 2


@pytest.mark.parametrize("web_now", ["carries-another-check", "gone"])
def test_the_ledger_forgets_a_pool_once_its_record_has_served(web_now: str) -> None:
    world, _ = converge(cluster(services=(WEB, API)), cp_world(WEB, API), TAKEOVER)
    web = pool_for(WEB).name
    if web_now == "gone":  # the Service and its load balancer deleted
        snapshot = cluster(services=(API,))
        pools = tuple(p for p in world.target_pools if p.name != web)
    else:  # opted out, and the cloud provider's check put back on it by hand
        snapshot = cluster(services=(service("web", annotations={"lbhc.dev/ignore": "true"}), API))
        pools = tuple(
            dataclasses.replace(p, health_checks=(CP.self_link,)) if p.name == web else p
            for p in world.target_pools
        )
    result = plan(snapshot, dataclasses.replace(world, target_pools=pools), TAKEOVER)
    (update,) = [c for c in result.changes if c.kind is Kind.HTTP_HEALTH_CHECK]
    assert update.action is Action.UPDATE and isinstance(update.desired, HttpHealthCheck)
    ledger = read_ledger(update.desired)
    assert ledger.recorded_for(web) is None
    assert ledger.recorded_for(pool_for(API).name) == resource_path(CP.self_link)


def test_takeovers_beyond_the_ledgers_room_wait_and_are_reported() -> None:
    services = tuple(service(f"s{i}") for i in range(400))
    snapshot = cluster(services=services)
    world = cp_world(*services)
    result = plan(snapshot, world, TAKEOVER)
    create = next(c for c in result.changes if c.kind is Kind.HTTP_HEALTH_CHECK)
    takeovers = [c for c in result.changes if isinstance(c, Attach) and c.replaces]
    assert create.desired is not None and len(create.desired.description) <= MAX_DESCRIPTION
    assert 150 < len(takeovers) < 400
    assert len(read_ledger(create.desired)) == len(takeovers)  # nothing unrecorded
    assert any("ledger" in w and "full" in w for w in result.warnings)


def test_takeover_never_touches_a_local_pools_check() -> None:
    local = service("local", policy="Local")
    world = cloud(pools=(pool_for(local, health_checks=(check_url("alocal"),)),))
    result = plan(cluster(services=(local,)), world, TAKEOVER)
    assert result.changes == ()


def _described(ledger: TakeoverLedger) -> str:
    return ownership_description(CLUSTER_ID, ledger)


def test_an_empty_pool_left_by_a_cut_takeover_gets_its_check_back_before_the_ledger_goes() -> None:
    """Cut between remove and add, then its Service deleted: no Service claims the pool any
    more, but lbhc provably emptied it. The give-back comes before the check (and with it
    the ledger) is collected; the executor deletes only once it is done."""
    ledger = TakeoverLedger().with_records({pool_for(WEB).name: CP.self_link})
    world = cloud(
        check=our_check(description=_described(ledger)),
        firewall=our_firewall(),
        pools=(pool_for(WEB),),
        checks=(CP,),
    )
    result = plan(cluster(services=()), world, COEXIST)
    kinds = [(c.action, c.kind) for c in result.changes]
    assert kinds == [
        (Action.ATTACH, Kind.TARGET_POOL),
        (Action.DELETE, Kind.HTTP_HEALTH_CHECK),
        (Action.DELETE, Kind.FIREWALL),
    ]
    assert result.changes[0].restores == CP.self_link


def test_a_pool_whose_service_went_local_is_never_given_the_node_check() -> None:
    snapshot = cluster(services=(WEB,))
    world, _ = converge(snapshot, cp_world(WEB), TAKEOVER)
    local = service("web", policy="Local")
    result = plan(cluster(services=(local,)), world, COEXIST)
    (detach,) = [c for c in result.changes if c.action is Action.DETACH]
    assert detach.restores == ""
