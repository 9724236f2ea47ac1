"""plan() over random clusters, clouds and accepted settings (tests/hostile/planner_worlds):
it never raises, and every plan keeps the invariants below, checked by an oracle written
from the README's rules, not from the planner's code.

- Ownership: the shared check and firewall are updated or deleted only when they carry this
  cluster's mark, created only when absent; a target pool is changed only when a Service of
  this cluster provably owns it (its name and its pool's or forwarding rule's description);
  an attach adds only our check, and replaces a foreign one only when allowed.
- Static stability: with any gap in either snapshot, nothing is detached or deleted; with
  versions not fully read, or in fallback, nothing is created or attached.
- At most one check and one firewall created, at most one change per pool.
- Security: any firewall lbhc would create or rewrite opens exactly tcp:<port> from exactly
  Google's health-checker ranges to the node tags, and nothing else.
"""

from __future__ import annotations

import json
from collections import Counter

from hypothesis import given

from lbhc.model.cloud import Firewall, FirewallAllowed, firewall_to_json, resource_path
from lbhc.model.plan import Action, Change, Kind, Plan
from lbhc.planner.config import HEALTH_CHECKER_RANGES, HealthCheckMode
from lbhc.planner.names import target_pool_name
from lbhc.planner.planner import plan
from tests.chaos.record import record
from tests.hostile.fuzzing import fuzz_settings
from tests.hostile.planner_worlds import SERVICE_KEY, PlannerWorld, planner_worlds

SECTION = "hostile-input"


def marked_ours(description: str, cluster_id: str) -> bool:
    try:
        fields = json.loads(description)
    except ValueError:
        return False
    return (
        isinstance(fields, dict)
        and fields.get("managedBy") == "lbhc"
        and fields.get("clusterId") == cluster_id
    )


def claimed_by(description: str) -> object:
    try:
        fields = json.loads(description)
    except ValueError:
        return None
    return fields.get(SERVICE_KEY) if isinstance(fields, dict) else None


def owned_pools(world: PlannerWorld) -> dict[str, str]:
    """Pool name -> key of the Service of this cluster that provably owns it."""
    rules = {r.name: r for r in world.cloud.forwarding_rules}
    owned: dict[str, str] = {}
    for svc in world.cluster.services:
        if svc.spec.type != "LoadBalancer" or not svc.metadata.uid:
            continue
        name = target_pool_name(svc.metadata.uid)
        pool = next((p for p in world.cloud.target_pools if p.name == name), None)
        if pool is None:
            continue
        rule = rules.get(name)
        if svc.key in (claimed_by(pool.description), rule and claimed_by(rule.description)):
            owned[name] = svc.key
    return owned


def assert_safe_firewall(firewall: Firewall, world: PlannerWorld) -> None:
    """The security invariant, on the resource and on the body that would be sent."""
    port = str(world.config.port)
    assert firewall.allowed == (FirewallAllowed("tcp", (port,)),), firewall.allowed
    assert sorted(firewall.source_ranges) == sorted(HEALTH_CHECKER_RANGES)
    assert set(firewall.source_ranges) <= set(HEALTH_CHECKER_RANGES)
    assert firewall.direction == "INGRESS" and not firewall.disabled
    assert firewall.destination_ranges == ()
    assert firewall.source_tags == ()
    assert firewall.source_service_accounts == () and firewall.target_service_accounts == ()
    assert firewall.target_tags, "no target tags: the rule would apply to every VM"
    assert sorted(firewall.target_tags) == sorted(world.config.node_tags)
    body = firewall_to_json(firewall)
    assert body["allowed"] == [{"IPProtocol": "tcp", "ports": [port]}]
    assert sorted(body["sourceRanges"]) == sorted(HEALTH_CHECKER_RANGES)  # type: ignore[arg-type]
    assert not {"sourceTags", "sourceServiceAccounts", "destinationRanges"} & set(body)


def assert_shared_change_allowed(change: Change, world: PlannerWorld) -> None:
    assert change.name == world.name, change
    existing = (
        world.cloud.health_check if change.kind is Kind.HTTP_HEALTH_CHECK else world.cloud.firewall
    )
    if change.action is Action.CREATE:
        assert existing is None, change
    else:
        assert change.action in (Action.UPDATE, Action.DELETE), change
        assert existing is not None and marked_ours(existing.description, world.cluster_id)
    if change.kind is Kind.FIREWALL and change.action is not Action.DELETE:
        assert isinstance(change.desired, Firewall)
        assert_safe_firewall(change.desired, world)


def assert_pool_change_allowed(change: Change, world: PlannerWorld, owned: dict[str, str]) -> None:
    assert change.name in owned, f"{change.action} on {change.name}, which no Service owns"
    pool = next(p for p in world.cloud.target_pools if p.name == change.name)
    ours = resource_path(world.url)
    carries = [resource_path(u) == ours for u in pool.health_checks]
    if change.restores:  # a give-back: only of a check the ledger recorded, onto an empty pool
        assert change.restores == change.health_check_url or change.action is Action.DETACH
        assert change.action is Action.DETACH or not pool.health_checks, change
        return
    assert resource_path(change.health_check_url) == ours, change
    if change.action is Action.DETACH:
        assert any(carries), change
        return
    assert change.action is Action.ATTACH, change
    assert not any(carries), change
    foreign = [u for u, mine in zip(pool.health_checks, carries, strict=True) if not mine]
    if foreign:
        takeover = world.config.health_check_mode is HealthCheckMode.TAKEOVER
        assert takeover and change.replaces in foreign, change


def assert_invariants(world: PlannerWorld, the_plan: Plan) -> None:
    owned = owned_pools(world)
    for change in the_plan.changes:
        if change.kind is Kind.TARGET_POOL:
            assert_pool_change_allowed(change, world, owned)
        else:
            assert_shared_change_allowed(change, world)
    actions = Counter((c.action, c.kind) for c in the_plan.changes)
    assert actions[(Action.CREATE, Kind.HTTP_HEALTH_CHECK)] <= 1
    assert actions[(Action.CREATE, Kind.FIREWALL)] <= 1
    pools = [c.name for c in the_plan.changes if c.kind is Kind.TARGET_POOL]
    assert len(pools) == len(set(pools)), pools
    if world.cluster.gaps or world.cloud.gaps:
        assert not {c.action for c in the_plan.changes} & {Action.DETACH, Action.DELETE}
    if not world.cluster.versions_complete or the_plan.fallback is not None:
        assert not {c.action for c in the_plan.changes} & {Action.CREATE, Action.ATTACH}
    for change in the_plan.withheld:  # what a complete view would do is just as safe
        assert change.action in (Action.DETACH, Action.DELETE)
        if change.kind is Kind.TARGET_POOL:
            assert_pool_change_allowed(change, world, owned)
        else:
            assert_shared_change_allowed(change, world)


def outcome(the_plan: Plan) -> set[str]:
    """What kind of plan this was, for the coverage guard and the figures."""
    kinds = {f"{c.action.value}-{c.kind.value}" for c in the_plan.changes}
    if the_plan.fallback:
        kinds.add("fallback")
    if the_plan.withheld:
        kinds.add("withheld")
    if any(c.kind is Kind.FIREWALL and c.action is Action.UPDATE for c in the_plan.changes):
        kinds.add("firewall-narrowed")
    return kinds or {"no-change"}


def test_plan_never_raises_and_keeps_its_invariants(chaos_scale: str) -> None:
    seen: Counter[str] = Counter()

    @fuzz_settings(chaos_scale, examples=300)
    @given(world=planner_worlds())
    def check(world: PlannerWorld) -> None:
        the_plan = plan(world.cluster, world.cloud, world.config)
        assert the_plan.health_check_name == world.name
        assert_invariants(world, the_plan)
        assert plan(world.cluster, world.cloud, world.config) == the_plan  # deterministic
        seen.update(outcome(the_plan))
        seen["examples"] += 1

    check()
    record(SECTION, "planner", crashes=0, **seen)
    # The worlds really reach every kind of decision the invariants are about.
    for wanted in (
        "attach-TargetPool",
        "detach-TargetPool",
        "create-Firewall",
        "firewall-narrowed",
        "delete-HttpHealthCheck",
        "fallback",
        "withheld",
    ):
        assert seen[wanted], (wanted, seen)
