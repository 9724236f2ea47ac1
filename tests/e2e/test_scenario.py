"""lbhc end to end, through its real CLI, once per environment (see conftest.world):
create and attach, an empty plan after apply, a node being deleted drained by GCE's own
health checking within the bound, fallback on an old kube-proxy and back, and clean-up.

Every test starts from a world where lbhc has done nothing yet and ends with World.clean_up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.world import TRANSIENT, World, resource_key
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

# Google's health checkers for target-pool network load balancers (Google Cloud, "Health
# check firewall rules": cloud.google.com/load-balancing/docs/health-checks).
HEALTH_CHECKER_RANGES = {"35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"}
KUBE_PROXY_HEALTH_PORT = 10256


def changes(plan: dict[str, Any], action: str | None = None) -> list[tuple[str, str, str]]:
    return [
        (c["action"], c["kind"], c["name"])
        for c in plan["changes"]
        if action is None or c["action"] == action
    ]


def apply_and_check_attached(world: World) -> dict[str, Any]:
    """`lbhc apply` from a snapshot; the check is on the Cluster pool and nowhere else."""
    result: dict[str, Any] = world.apply(view="snapshot")
    assert all(r["status"] == "done" for r in result["results"]), result["results"]
    assert world.pools_carrying_check() == {world.cluster_pool}
    return result


def wait_healthy(world: World, nodes: tuple[str, ...]) -> None:
    for node in nodes:
        wait_for(
            lambda n=node: world.lb_states(n) == {"HEALTHY"},  # type: ignore[misc]
            world.settle_timeout,
            f"{node} HEALTHY in {world.cluster_pool} (getHealth)",
            every=world.poll_every,
            tolerate=TRANSIENT,
        )


def test_apply_creates_the_check_and_firewall_and_attaches_cluster_pools_only(
    world: World,
) -> None:
    before = world.lbhc("plan", "--output", "json", "--detailed-exitcode")
    assert before.code == 2, str(before)
    name = world.check_name
    assert set(changes(before.json())) == {
        ("create", "Firewall", name),
        ("create", "HttpHealthCheck", name),
        ("attach", "TargetPool", world.cluster_pool),
    }
    if world.cluster_id:
        assert name == f"k8s-l4-healthcheck-{world.cluster_id}"

    result = apply_and_check_attached(world)
    assert {(r["action"], r["kind"], r["name"]) for r in result["results"]} == set(
        changes(before.json())
    )

    check = world.gce.get_http_health_check(name)
    assert check is not None
    assert (check.port, check.request_path, check.host) == (KUBE_PROXY_HEALTH_PORT, "/healthz", "")
    timings = (
        check.check_interval_sec,
        check.timeout_sec,
        check.healthy_threshold,
        check.unhealthy_threshold,
    )
    assert timings == (8, 1, 1, 3)

    firewall = world.gce.get_firewall(name)
    assert firewall is not None
    assert firewall.network.endswith(f"/global/networks/{world.network}"), firewall.network
    assert firewall.direction == "INGRESS" and not firewall.disabled
    assert [(a.ip_protocol, a.ports) for a in firewall.allowed] == [
        ("tcp", (str(KUBE_PROXY_HEALTH_PORT),))
    ]
    assert set(firewall.source_ranges) == HEALTH_CHECKER_RANGES
    assert firewall.target_tags == (world.node_tag,)
    # Opened to the health checkers only: never pinned to, or widened beyond, that.
    assert not firewall.destination_ranges and not firewall.source_tags
    assert not firewall.source_service_accounts and not firewall.target_service_accounts

    pools = world.pools()
    assert [resource_key(u) for u in pools[world.cluster_pool].health_checks] == [world.check_key]
    local = pools[world.local_pool]
    assert not world.carries_our_check(local)
    # Whatever the Local pool carried (its per-Service check, if any) is untouched.
    local_checks = tuple(sorted(resource_key(u) for u in local.health_checks))
    assert local_checks == world.baseline[f"pool/{world.local_pool}"].health_checks
    if (log := world.mutation_log()) is not None:
        made = [_kind(method, path, world) for method, path in log]
        assert sorted(made) == ["attach", "create-check", "create-firewall"], log


def test_plan_is_empty_after_apply(world: World) -> None:
    apply_and_check_attached(world)
    for view in ("snapshot", "complete"):
        plan = world.lbhc("plan", "--output", "json", "--detailed-exitcode", view=view)
        assert plan.code == 0, str(plan)
        body = plan.json()
        assert body["changes"] == [] and body["withheld"] == [] and body["fallback"] is None
    again = world.apply(view="complete")
    assert again["results"] == []
    if (log := world.mutation_log()) is not None:
        assert len(log) == 3, log  # firewall, check, attach, once each: nothing repeated


def test_node_being_deleted_turns_unhealthy_in_get_health_within_the_bound_and_back(
    world: World, record_measurement: Callable[..., None]
) -> None:
    apply_and_check_attached(world)
    wait_healthy(world, world.nodes)
    check = world.gce.get_http_health_check(world.check_name)
    assert check is not None
    interval = check.check_interval_sec * world.time_scale
    bound = interval * (check.unhealthy_threshold + 1)
    victim = world.nodes[1 % len(world.nodes)]
    others = tuple(n for n in world.nodes if n != victim)

    marked_at = world.mark_being_deleted(victim)
    seen_at = wait_for(
        lambda: world.lb_states(victim) == {"UNHEALTHY"} and time.monotonic(),
        2 * (bound + world.drain_margin) + 10,
        f"{victim} UNHEALTHY in getHealth",
        every=world.poll_every,
        tolerate=TRANSIENT,
    )
    drain = float(seen_at) - marked_at
    limit = bound + world.drain_margin
    record_measurement(
        world,
        "time to UNHEALTHY",
        drain,
        limit,
        f"(bound {bound:.2f} s = {interval:.2f} s x ({check.unhealthy_threshold} + 1), "
        f"margin {world.drain_margin:.2f} s, polled every {world.poll_every} s)",
    )
    assert drain <= limit, f"{victim} drained after {drain:.2f} s; bound+margin {limit:.2f} s"
    exact = world.exact_transition(victim, "UNHEALTHY", marked_at)
    if exact is not None:  # the emulated checker's own record: within the bound, no slack
        assert exact - marked_at <= bound, (exact - marked_at, bound)
        # Three failed probes take two intervals or more; one interval of slack for load.
        assert exact - marked_at >= (check.unhealthy_threshold - 2) * interval
    for node in others:
        assert world.lb_states(node) == {"HEALTHY"}, f"{node} must keep serving"

    status = world.lbhc("status", "--output", "json")
    assert status.code == 0, str(status)
    nodes = {n["node"]: n["drain"] for n in status.json()["nodes"]}
    drain_states = {name: drain["state"] for name, drain in nodes.items()}
    # The Cluster pool's check drains it; the Local pool's follows the node's ready endpoints
    # (none here would be the autoscaler's eviction), so lbhc says partially and names it.
    assert drain_states[victim] == "partially-draining", drain_states
    assert [p["targetPool"] for p in nodes[victim]["poolsNotDraining"]] == [world.local_pool]
    assert nodes[victim]["boundSeconds"] == check.check_interval_sec * (
        check.unhealthy_threshold + 1
    )
    assert all(drain_states[n] == "serving" for n in others), drain_states

    restored_at = world.restore(victim)
    back_at = wait_for(
        lambda: world.lb_states(victim) == {"HEALTHY"} and time.monotonic(),
        2 * (bound + world.drain_margin) + 10,
        f"{victim} HEALTHY again in getHealth",
        every=world.poll_every,
        tolerate=TRANSIENT,
    )
    recovery = float(back_at) - restored_at
    recovery_limit = interval * (check.healthy_threshold + 1) + world.drain_margin
    record_measurement(world, "time to HEALTHY again", recovery, recovery_limit)
    assert recovery <= recovery_limit


def test_an_old_kube_proxy_detaches_the_check_cluster_wide_and_back(world: World) -> None:
    apply_and_check_attached(world)
    old = world.add_old_node()

    # A dump never detaches: the fallback is planned, and withheld.
    dump = world.lbhc("apply", "--output", "json")
    assert dump.code == 0, str(dump)
    body = dump.json()
    assert body["fallback"] is not None
    assert [n["name"] for n in body["fallback"]["nodes"]] == [old]
    assert ("detach", "TargetPool", world.cluster_pool) in [
        (c["action"], c["kind"], c["name"]) for c in body["withheld"]
    ]
    assert world.pools_carrying_check() == {world.cluster_pool}

    # The complete view: detached from every pool; the check and firewall stay for later.
    fallback = world.apply(view="complete")
    assert [(r["action"], r["name"], r["status"]) for r in fallback["results"]] == [
        ("detach", world.cluster_pool, "done")
    ]
    assert old in fallback["fallback"]["reason"]
    assert world.pools_carrying_check() == set()
    assert world.gce.get_http_health_check(world.check_name) is not None
    assert world.gce.get_firewall(world.check_name) is not None

    world.remove_node(old)
    back = world.apply(view="complete")
    assert back["fallback"] is None
    assert [(r["action"], r["name"], r["status"]) for r in back["results"]] == [
        ("attach", world.cluster_pool, "done")
    ]
    assert world.pools_carrying_check() == {world.cluster_pool}
    plan = world.lbhc("plan", "--detailed-exitcode", view="complete")
    assert plan.code == 0, str(plan)


def test_clean_up_deletes_the_check_then_the_firewall_and_nothing_else(world: World) -> None:
    apply_and_check_attached(world)
    log_before = world.mutation_log()
    world.mark_services_deleted()

    result = world.apply(view="complete")
    steps = [(r["action"], r["kind"], r["name"], r["status"]) for r in result["results"]]
    name = world.check_name
    assert steps == [
        ("detach", "TargetPool", world.cluster_pool, "done"),
        ("delete", "HttpHealthCheck", name, "done"),
        ("delete", "Firewall", name, "done"),
    ]
    assert world.gce.get_http_health_check(name) is None
    assert world.gce.get_firewall(name) is None
    assert world.pools_carrying_check() == set()
    # Terraform's (the cloud provider's) pools and rules: all there, exactly as before.
    assert world.load_balancers_changed() == {}

    log = world.mutation_log()
    if log is not None and log_before is not None:
        made = log[len(log_before) :]
        kinds = [_kind(method, path, world) for method, path in made]
        assert kinds == ["detach", "delete-check", "delete-firewall"], made

    plan = world.lbhc("plan", "--detailed-exitcode", view="complete")
    assert plan.code == 0, str(plan)


def _kind(method: str, path: str, world: World) -> str:
    """Which of lbhc's own mutations a Compute request is (anything else is a finding)."""
    name, pool = world.check_name, f"/regions/{world.region}/targetPools/{world.cluster_pool}"
    if method == "POST" and path.endswith(f"{pool}/addHealthCheck"):
        return "attach"
    if method == "POST" and path.endswith(f"{pool}/removeHealthCheck"):
        return "detach"
    if method == "POST" and path.endswith("/global/httpHealthChecks"):
        return "create-check"
    if method == "POST" and path.endswith("/global/firewalls"):
        return "create-firewall"
    if method == "DELETE" and path.endswith(f"/global/httpHealthChecks/{name}"):
        return "delete-check"
    if method == "DELETE" and path.endswith(f"/global/firewalls/{name}"):
        return "delete-firewall"
    return f"unexpected {method} {path}"
