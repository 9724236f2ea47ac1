"""Which getHealth reads come first within the budget: marked nodes before samples, earliest
mark first, one pool per class; nothing read again before its period; a node GCE showed out of
a class is not asked again."""

from __future__ import annotations

from datetime import UTC, datetime

from lbhc.model.lb_health import HealthReading, InstanceHealth, LbHealthView
from lbhc.planner.lb_views import PoolDrainKind
from lbhc.planner.pool_classes import PoolClass
from lbhc.planner.verify_reads import (
    SAMPLED_NODES,
    HealthRead,
    MarkedNode,
    Purpose,
    Serving,
    choose_reads,
)

NOW = 1_000.0
HEALTHZ = PoolClass(PoolDrainKind.HEALTHZ, "k8s-x-node", "admitted", ("h1", "h2", "h3"), 32)
NO_CHECK = PoolClass(PoolDrainKind.NO_CHECK, "", "", ("n1",), 32)
SERVING = Serving.of([f"s{i}" for i in range(10)])


def view(*readings: HealthReading) -> LbHealthView:
    return LbHealthView({(r.pool, r.node): r for r in readings}, NOW, 180, off="")


def reads(
    *readings: HealthReading, marked: tuple[MarkedNode, ...] = (), sample: float = 60
) -> list[HealthRead]:
    return choose_reads(
        (HEALTHZ, NO_CHECK), marked, SERVING, view(*readings), marked_every=10, sample_every=sample
    )


def test_marked_nodes_come_first_earliest_mark_first_in_every_class() -> None:
    marked = (
        MarkedNode("late", "2026-01-01T00:00:09Z"),
        MarkedNode("early", "2026-01-01T00:00:01Z"),
    )
    found = reads(marked=marked)
    head = [(r.node, r.purpose) for r in found[:4]]
    assert head == [("early", Purpose.MARKED)] * 2 + [("late", Purpose.MARKED)] * 2
    # One pool of each class, the classes' own.
    assert {r.pool for r in found[:2]} & set(HEALTHZ.pools) and found[1].pool == "n1"
    assert all(r.purpose is Purpose.SAMPLE for r in found[4:])


def test_only_kube_proxy_classes_are_sampled_a_few_serving_nodes_in_one_pool() -> None:
    samples = [r for r in reads() if r.purpose is Purpose.SAMPLE]
    assert len(samples) == SAMPLED_NODES
    assert len({r.pool for r in samples}) == 1 and samples[0].pool in HEALTHZ.pools
    assert {r.node for r in samples} <= SERVING.names


def test_a_class_sampled_within_its_period_waits() -> None:
    fresh = HealthReading("h2", "s3", InstanceHealth.HEALTHY, NOW - 30)
    assert not [r for r in reads(fresh) if r.purpose is Purpose.SAMPLE]
    stale = HealthReading("h2", "s3", InstanceHealth.HEALTHY, NOW - 61)
    assert [r for r in reads(stale) if r.purpose is Purpose.SAMPLE]


def test_a_failed_read_waits_its_period_too() -> None:
    failed = HealthReading("h1", "s1", InstanceHealth.UNKNOWN, NOW - 5, None, "503")
    assert not [r for r in reads(failed) if r.purpose is Purpose.SAMPLE]


def test_successive_periods_rotate_the_pools_and_nodes_sampled() -> None:
    seen = set()
    for period in range(3):
        v = LbHealthView({}, 60.0 * period, 180, off="")
        seen |= {
            (r.pool, r.node)
            for r in choose_reads((HEALTHZ,), (), SERVING, v, marked_every=10, sample_every=60)
        }
    assert len({pool for pool, _ in seen}) == 3
    assert len({node for _, node in seen}) == 3 * SAMPLED_NODES


def test_a_marked_node_is_read_again_in_the_same_pool_after_its_period() -> None:
    marked = (MarkedNode("m", ""),)
    recent = HealthReading("h3", "m", InstanceHealth.HEALTHY, NOW - 5)
    assert not [
        r for r in reads(recent, marked=marked) if r.pool in HEALTHZ.pools and r.node == "m"
    ]
    older = HealthReading("h3", "m", InstanceHealth.HEALTHY, NOW - 11)
    again = [r for r in reads(older, marked=marked) if r.node == "m" and r.pool in HEALTHZ.pools]
    assert [r.pool for r in again] == ["h3"]


def test_a_marked_node_shown_out_of_a_class_is_not_asked_again() -> None:
    out = HealthReading("h1", "m", InstanceHealth.NOT_MEMBER, NOW - 100)
    asked = [r for r in reads(out, marked=(MarkedNode("m", ""),)) if r.node == "m"]
    assert [r.pool for r in asked] == ["n1"]


def test_sampling_off_reads_marked_nodes_only() -> None:
    found = reads(marked=(MarkedNode("m", ""),), sample=0)
    assert found and all(r.purpose is Purpose.MARKED for r in found)


def test_every_marked_nodes_first_read_comes_before_anyones_second() -> None:
    """Twenty nodes marked at once: the first, read 11 s ago, is not read again before the
    others are read at all (the budget may hold only a few this minute)."""
    a_minute_ago = datetime.fromtimestamp(NOW - 60, UTC).isoformat()
    marked = tuple(MarkedNode(f"m{i:02}", a_minute_ago) for i in range(20))
    seen = HealthReading("h1", "m00", InstanceHealth.HEALTHY, NOW - 11)
    found = [r for r in reads(seen, marked=marked) if r.purpose is Purpose.MARKED]
    again = [i for i, r in enumerate(found) if r.node == "m00" and r.pool == "h1"]
    assert again == [len(found) - 1]


def test_a_reading_from_before_the_mark_does_not_put_off_the_first_read_since() -> None:
    """Sampled as a serving node a second before the taint: read again at once, not 10 s on."""
    before = HealthReading("h2", "m", InstanceHealth.HEALTHY, NOW - 1)
    half_a_second_ago = datetime.fromtimestamp(NOW - 0.5, UTC).isoformat()
    marked = (MarkedNode("m", half_a_second_ago),)
    again = [r for r in reads(before, marked=marked) if r.node == "m" and r.pool in HEALTHZ.pools]
    assert len(again) == 1
