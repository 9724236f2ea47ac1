"""Two and three electing replicas with forced lease loss: the leader's renews
rejected (500, 503, 429 on the Lease), its API access refused, reset, failing or hanging,
while GCE operations are slow and the leader is in the middle of an apply. Every mutating
Compute call must come from the lease holder of the moment (tests/chaos/lease_windows.py),
another replica must take over within the lease's bound, and the work asked for meanwhile
must get done. Seeded: short in make test, 24 losses per replica count under --chaos.

Then a Lease overwritten by hand, naming a stranger or one of the followers: the replica that
held it must stop writing once it has read so, and the follower must not write while the
previous holder still may.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass

import pytest

from lbhc.controller.app import ControllerApp
from tests.chaos.lease_windows import lease_reads, wrong_writes
from tests.chaos.lease_world import (
    FRESH_BOUND_SEC,
    LOSSES,
    SLACK_SEC,
    LeaseLoss,
    Replicas,
    Timings,
    replicas,
)
from tests.chaos.record import record
from tests.waiting import wait_for

LOSSES_PER_RUN = {"short": 1, "full": 24}


def _applying(r: Replicas, leader: ControllerApp, since: float) -> bool:
    return any(m.client_id == leader.identity and m.time > since for m in r.w.mutations())


def _new_leader(r: Replicas, old: ControllerApp) -> ControllerApp | None:
    leader = r.leader()
    return leader if leader is not None and leader is not old else None


def _converge_bound(r: Replicas, pools: int) -> float:
    pace = pools / r.apps[0].settings.gce.mutations_per_second
    return r.timings.takeover_bound() + pace + SLACK_SEC


def _schedule(rng: random.Random, count: int) -> list[LeaseLoss]:
    """Every kind of loss in turn, each round in a seeded order: an even share of each."""
    order: list[LeaseLoss] = []
    while len(order) < count:
        order += rng.sample(LOSSES, len(LOSSES))
    return order[:count]


@dataclass(frozen=True)
class Outcome:
    takeover: float  # seconds from the fault to another replica holding the lease
    doomed_writes: int  # mutations the losing leader sent after the fault (legitimately)


def _lose_lease(r: Replicas, loss: LeaseLoss, n: int, rng: random.Random) -> Outcome:
    """While the leader applies new work on a slow GCE, it loses its lease to `loss`; another
    replica takes over, the fault is healed, and the work gets done."""
    w = r.w
    wait_for(r.all_fresh, timeout=FRESH_BOUND_SEC, what="every replica's view complete")
    leader = wait_for(r.leader, timeout=r.timings.takeover_bound(), what="a leader")
    w.compute.operation_latency = rng.uniform(0.1, 0.6)
    asked = time.monotonic()
    demand = [w.add_service(f"loss-{n}-{i}") for i in range(rng.randint(4, 12))]
    wait_for(lambda: _applying(r, leader, asked), what="the leader applying")
    struck = time.monotonic()
    loss.strike(r, leader.identity, rng)
    successor = wait_for(
        lambda: _new_leader(r, leader),
        timeout=r.timings.takeover_bound(),
        what=f"another replica taking over after {loss.name}",
    )
    took = time.monotonic() - struck
    loss.heal(r, leader.identity)
    after = w.add_service(f"after-{n}")  # work only the successor can do
    wait_for(
        lambda: all(w.attached(p) for p in [*demand, after]),
        timeout=_converge_bound(r, len(demand) + 1),
        what=f"the work asked for during and after {loss.name} done",
    )
    attached_by = {m.client_id for m in w.mutations() if after in m.path}
    assert attached_by == {successor.identity}, f"{after} attached by {attached_by}"
    doomed = [m for m in w.mutations() if m.client_id == leader.identity and m.time > struck]
    return Outcome(took, len(doomed))


@pytest.mark.parametrize("count", [2, 3])
def test_forced_lease_loss_every_mutation_comes_from_the_holder(
    count: int, chaos_scale: str
) -> None:
    rng = random.Random(8_000 + count)
    losses = LOSSES_PER_RUN[chaos_scale]
    with replicas(count) as r:
        w = r.w
        pools = [w.add_service(f"svc-{i}") for i in range(2)]
        wait_for(lambda: all(w.attached(p) for p in pools), timeout=30, what="convergence")
        kinds: Counter[str] = Counter()
        outcomes: list[Outcome] = []
        for n, loss in enumerate(_schedule(rng, losses)):
            kinds[loss.name] += 1
            outcomes.append(_lose_lease(r, loss, n, rng))
        mutations = w.mutations()
        wrong = wrong_writes(mutations, r.apps, r.timings.lease_duration, lease_reads(w.kube))
        takeovers = [o.takeover for o in outcomes]
        record(
            "lease-loss",
            f"{count}-replicas",
            replicas=count,
            trials=losses,
            losses=dict(sorted(kinds.items())),
            mutations=len(mutations),
            wrong_writer_mutations=len(wrong),
            writes_by_losing_leader_after_the_fault=sum(o.doomed_writes for o in outcomes),
            takeover_seconds_median=round(statistics.median(takeovers), 2),
            takeover_seconds_max=round(max(takeovers), 2),
            takeover_bound_seconds=round(r.timings.takeover_bound(), 1),
        )
        assert not wrong, "wrong-writer mutations:\n" + "\n".join(map(str, wrong))
        assert {m.client_id for m in mutations} <= {a.identity for a in r.apps}


# -- a Lease overwritten by hand --------------------------------------------------------------

# Long enough that a leader which knows it lost the lease, yet writes until its renew
# deadline, is seen doing so well past the in-flight grace.
HAND_TIMINGS = Timings(lease_duration=5.0, renew_deadline=4.0, retry_period=0.25)


def _overwritten_mid_apply(r: Replicas, holder: str) -> tuple[ControllerApp, float]:
    """The leader is given plenty of slow work, then the Lease is handed to `holder` by hand
    (as `kubectl edit lease` would). Returns the leader and when it happened."""
    w = r.w
    leader = wait_for(r.leader, timeout=r.timings.takeover_bound(), what="a leader")
    w.compute.operation_latency = 0.3
    asked = time.monotonic()
    demand = [w.add_service(f"hand-{i}") for i in range(30)]  # 3 s of writes at 10 a second
    wait_for(lambda: _applying(r, leader, asked), what="the leader applying")
    r.overwrite_holder(holder)
    written = time.monotonic()
    wait_for(
        lambda: all(w.attached(p) for p in demand),
        timeout=_converge_bound(r, len(demand)),
        what="the work done by whoever holds the lease next",
    )
    return leader, written


def _judge(r: Replicas, case: str, leader: ControllerApp, written: float) -> None:
    mutations = r.w.mutations()
    wrong = wrong_writes(mutations, r.apps, r.timings.lease_duration, lease_reads(r.w.kube))
    late = [m for m in mutations if m.client_id == leader.identity and m.time > written]
    record(
        "lease-loss",
        case,
        replicas=len(r.apps),
        trials=1,
        mutations=len(mutations),
        wrong_writer_mutations=len(wrong),
        writes_by_losing_leader_after_the_fault=len(late),
    )
    assert not wrong, "wrong-writer mutations:\n" + "\n".join(map(str, wrong))


def test_a_leader_stops_writing_once_it_reads_another_holder() -> None:
    with replicas(2, HAND_TIMINGS) as r:
        pools = [r.w.add_service(f"svc-{i}") for i in range(2)]
        wait_for(lambda: all(r.w.attached(p) for p in pools), timeout=30, what="convergence")
        leader, written = _overwritten_mid_apply(r, "intruder")
        _judge(r, "overwritten-by-a-stranger", leader, written)


def test_a_lease_handed_to_a_follower_by_hand_never_has_two_writers() -> None:
    with replicas(2, HAND_TIMINGS) as r:
        pools = [r.w.add_service(f"svc-{i}") for i in range(2)]
        wait_for(lambda: all(r.w.attached(p) for p in pools), timeout=30, what="convergence")
        leader = wait_for(r.leader, timeout=r.timings.takeover_bound(), what="a leader")
        follower = next(a for a in r.apps if a is not leader)
        leader, written = _overwritten_mid_apply(r, follower.identity)
        _judge(r, "overwritten-naming-a-follower", leader, written)
