"""EvidencePlanner: lbhc's firewall for blocked pools waits on GCE's own view of an admitted
pool, read only when the plan asks for it, and at most once per interval in the controller.
GCE is a recording fake of the one read it makes (getHealth)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lbhc.evidence import SAMPLED_NODES, EvidencePlanner
from lbhc.model.plan import Action, Kind
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import cloud, cluster, config, node, pool_for, rule_for, service
from tests.builders.gce import effective, node_check_firewall

FIRST, SECOND = service("first"), service("second")
POOLS = tuple(pool_for(s, health_checks=(CP.self_link,)) for s in (FIRST, SECOND))
WORLD = cloud(
    pools=POOLS,
    rules=(rule_for(FIRST, ip="34.0.0.1"), rule_for(SECOND, ip="34.0.0.2")),
    checks=(CP,),
    network_firewall=effective(node_check_firewall(pinned_to="34.0.0.1")),
)
NODES = tuple(node(f"node-{i}") for i in range(5))


@dataclass
class RecordingHealth:
    """Answers getHealth with `state` and records every call."""

    state: str
    calls: list[tuple[str, str]] = field(default_factory=list)

    def get_health(self, pool: str, instance_url: str) -> tuple[str, ...]:
        self.calls.append((pool, instance_url))
        return (self.state,)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("state", "creates"), [("HEALTHY", True), ("UNHEALTHY", False)], ids=["healthy", "unhealthy"]
)
def test_the_firewall_waits_on_gce_calling_nodes_healthy(state: str, creates: bool) -> None:
    gce = RecordingHealth(state)
    the_plan, judged = EvidencePlanner(gce, config()).plan(
        cluster(nodes=NODES, services=(FIRST, SECOND)), WORLD
    )
    created = {(c.action, c.kind) for c in the_plan.changes} == {(Action.CREATE, Kind.FIREWALL)}
    assert created is creates, the_plan.warnings
    # Only the admitted pool is asked about, for a few serving nodes.
    assert {pool for pool, _ in gce.calls} == {POOLS[0].name}
    assert len(gce.calls) == SAMPLED_NODES
    assert bool(judged.port_evidence) is creates


def test_no_read_when_the_plan_needs_none() -> None:
    gce = RecordingHealth("HEALTHY")
    admitted = cloud(pools=POOLS, checks=(CP,))  # the cloud provider's rule unpinned
    the_plan, _ = EvidencePlanner(gce, config()).plan(
        cluster(nodes=NODES, services=(FIRST, SECOND)), admitted
    )
    assert the_plan.changes == () and gce.calls == []


def test_reads_are_spaced_out_and_evidence_is_kept() -> None:
    clock, gce = Clock(), RecordingHealth("UNHEALTHY")
    planner = EvidencePlanner(gce, config(), min_interval=60, clock=clock)
    snapshot = cluster(nodes=NODES, services=(FIRST, SECOND))
    planner.plan(snapshot, WORLD)
    clock.now = 30
    planner.plan(snapshot, WORLD)
    assert len(gce.calls) == SAMPLED_NODES  # the second pass, inside the interval, read nothing
    gce.state, clock.now = "HEALTHY", 61
    first, _ = planner.plan(snapshot, WORLD)
    assert (Action.CREATE, Kind.FIREWALL) in {(c.action, c.kind) for c in first.changes}
    reads = len(gce.calls)
    again, _ = planner.plan(snapshot, WORLD)  # evidence once found is kept: no more reads
    assert len(gce.calls) == reads
    assert (Action.CREATE, Kind.FIREWALL) in {(c.action, c.kind) for c in again.changes}
