"""Properties over random clusters and clouds, applied for real through the executor and the
Compute fake: convergence in one pass, nothing foreign touched, fallback honoured."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lbhc.executor import Executor
from lbhc.model.cloud import health_check_to_json, resource_path
from lbhc.model.cluster import ClusterSnapshot, Node, Service
from lbhc.planner.names import target_pool_name
from lbhc.planner.planner import plan
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.builders import (
    KUBE_SYSTEM_UID,
    PROJECT,
    REGION,
    config,
    names,
    node,
    our_check,
    our_firewall,
    service,
)
from tests.conftest import ComputeEnv
from tests.worlds import compute_fake

_, NAME, URL = names()
FOREIGN_CHECK = "hand-made-check"
FOREIGN_URL = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/httpHealthChecks/{FOREIGN_CHECK}"


@dataclass(frozen=True)
class PoolSeed:
    exists: bool
    described: bool
    checks: str  # "none" | "ours" | "foreign"


@dataclass(frozen=True)
class World:
    services: tuple[Service, ...]
    pools: tuple[PoolSeed, ...]
    orphans: tuple[str, ...]  # checks on pools no Service owns
    nodes: tuple[Node, ...]
    check: str  # "absent" | "ours" | "drifted" | "foreign"
    firewall: str


@st.composite
def worlds(draw: Any) -> World:
    count = draw(st.integers(0, 6))
    st.sampled_from([True, True, True, False])  # most pools exist and are described
    services = tuple(
        service(
            f"svc-{i}",
            type_=draw(st.sampled_from(["LoadBalancer"] * 4 + ["ClusterIP"])),
            policy=draw(st.sampled_from(["Cluster", "Cluster", "Local", None])),
            lb_class=draw(st.sampled_from([None, None, "example.com/other"])),
            annotations=draw(st.sampled_from([{}, {}, {"lbhc.dev/ignore": "true"}])),
        )
        for i in range(count)
    )
    pools = tuple(
        PoolSeed(
            draw(st.booleans()),
            draw(st.booleans()),
            draw(st.sampled_from(["none", "ours", "foreign"])),
        )
        for _ in services
    )
    orphans = tuple(draw(st.lists(st.sampled_from(["ours", "foreign", "none"]), max_size=2)))
    versions = st.sampled_from(["v1.31.4"] * 6 + ["v1.29.1-gke.1", "v1.6.13", "custom"])
    nodes = tuple(node(f"n-{i}", kubelet=draw(versions)) for i in range(draw(st.integers(1, 3))))
    shared = st.sampled_from(["absent", "ours", "drifted", "foreign"])
    return World(services, pools, orphans, nodes, draw(shared), draw(shared))


def seed(env: ComputeEnv, world: World) -> None:
    fake, gce = env.fake, env.client()
    fake.add_http_health_check(PROJECT, FOREIGN_CHECK, description="someone else's")
    if world.check != "absent":
        body = health_check_to_json(our_check())
        if world.check == "drifted":
            body.update(checkIntervalSec=2, timeoutSec=2, requestPath="/")
        if world.check == "foreign":
            body["description"] = "made by hand"
        body.pop("name")
        fake.add_http_health_check(PROJECT, NAME, **body)
    if world.firewall != "absent":
        firewall = our_firewall()
        if world.firewall == "drifted":
            firewall = our_firewall(
                destination_ranges=("1.2.3.4/32",), source_ranges=("0.0.0.0/0",)
            )
        if world.firewall == "foreign":
            firewall = our_firewall(description="made by hand")
        gce.insert_firewall(firewall)
    urls = {"none": (), "ours": (URL,), "foreign": (FOREIGN_URL,)}
    for svc, pool in zip(world.services, world.pools, strict=True):
        if not pool.exists:
            continue
        description = json.dumps({"kubernetes.io/service-name": svc.key}) if pool.described else ""
        checks = urls[pool.checks] if (pool.checks != "ours" or world.check != "absent") else ()
        fake.add_target_pool(
            PROJECT,
            REGION,
            target_pool_name(svc.metadata.uid),
            description=description,
            health_checks=checks,
        )
    for i, kind in enumerate(world.orphans):
        checks = urls[kind] if (kind != "ours" or world.check != "absent") else ()
        fake.add_target_pool(PROJECT, REGION, f"orphan-{i}", health_checks=checks)
    fake.clear_journal()


def snapshot_of(world: World) -> ClusterSnapshot:
    return ClusterSnapshot(world.nodes, world.services, (), KUBE_SYSTEM_UID)


def foreign_state(fake: ComputeFake, world: World) -> Any:
    """Everything lbhc does not own, as GCE holds it."""
    state: dict[str, Any] = {"check": fake.http_health_checks(PROJECT)[FOREIGN_CHECK]}
    if world.check == "foreign":
        state["shared-check"] = fake.http_health_checks(PROJECT)[NAME]
    if world.firewall == "foreign":
        state["shared-firewall"] = fake.firewalls(PROJECT)[NAME]
    state["foreign-attachments"] = sorted(
        name
        for name, pool in fake.target_pools(PROJECT, REGION).items()
        if FOREIGN_URL in pool.get("healthChecks", [])
    )
    return state


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds())
def test_apply_converges_touches_nothing_foreign_and_honours_fallback(world: World) -> None:
    fake = compute_fake(PROJECT)
    with ComputeFakeServer(fake) as server:
        env = ComputeEnv(fake, server.url)
        seed(env, world)
        gce, cfg, snapshot = env.client(), config(), snapshot_of(world)
        before = foreign_state(fake, world)

        first = plan(snapshot, gce.read_snapshot(NAME), cfg)
        result = Executor(gce).apply(first)
        assert result.ok, [o for o in result.outcomes if o.status.value == "failed"]

        second = plan(snapshot, gce.read_snapshot(NAME), cfg)
        assert second.changes == (), [c.to_json() for c in second.changes]

        assert foreign_state(fake, world) == before
        for entry in fake.mutating_requests():
            body = json.dumps(entry.body or {})
            named_ours = NAME in entry.path or (entry.body or {}).get("name") == NAME
            assert named_ours or resource_path(URL) in body, entry

        if first.fallback is not None and world.check != "foreign":
            # Every pool a Service of this cluster provably owns is free of our check; pools
            # nobody here claims are not ours to change, even under fallback.
            pools = fake.target_pools(PROJECT, REGION)
            claimed = [
                target_pool_name(svc.metadata.uid)
                for svc, seed_ in zip(world.services, world.pools, strict=True)
                if svc.spec.type == "LoadBalancer" and seed_.exists and seed_.described
            ]
            assert not any(URL in pools[name].get("healthChecks", []) for name in claimed)


def test_strategy_reaches_the_interesting_worlds() -> None:
    """Guard against a strategy that silently stops generating fallback or conflicts."""
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, derandomize=True)  # a guard must not flake
    @given(world=worlds())
    def collect(world: World) -> None:
        first = plan(snapshot_of(world), _cloud_for(world), config())
        if first.fallback:
            seen.add("fallback")
        if any("conflict" in w for w in first.warnings):
            seen.add("conflict")
        if any(c.action.value == "detach" for c in first.changes):
            seen.add("detach")
        if any(c.action.value == "attach" for c in first.changes):
            seen.add("attach")

    collect()
    assert seen == {"fallback", "conflict", "detach", "attach"}


def _cloud_for(world: World) -> Any:
    """The same world as a CloudSnapshot, without a server, for the coverage guard."""
    from tests.builders import cloud, pool_for

    check = {
        "absent": None,
        "ours": our_check(),
        "drifted": our_check(check_interval_sec=2),
        "foreign": our_check(description="x"),
    }[world.check]
    firewall = {
        "absent": None,
        "ours": our_firewall(),
        "drifted": our_firewall(priority=5),
        "foreign": our_firewall(description="x"),
    }[world.firewall]
    urls = {"none": (), "ours": (URL,), "foreign": (FOREIGN_URL,)}
    pools = tuple(
        pool_for(s, health_checks=urls[p.checks], described=p.described)
        for s, p in zip(world.services, world.pools, strict=True)
        if p.exists
    )
    return cloud(check=check, firewall=firewall, pools=pools)
