"""Which getHealth reads to make next, most useful first; the caller makes as many as its read
budget allows now and the rest wait. Pure: the classes and nodes of the last status report
and the readings so far in, an ordered list out.

Order: nodes marked for deletion first (earliest mark first), each read in one pool of every
class not yet shown to have let it go: whether it is still a member, and whether GCE already
calls it UNHEALTHY there, is the drain verdict's evidence and changes by the second. Then a
few serving nodes of each kube-proxy /healthz class whose newest sample is older than the
sampling period, the least recently sampled first: whether the class's check passes at all
(failing open) changes rarely and can wait for the budget."""

from __future__ import annotations

import math
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from lbhc.model.lb_health import InstanceHealth, LbHealthView
from lbhc.planner.drain import marked_epoch
from lbhc.planner.pool_classes import PoolClass, newest_by_node

SAMPLED_NODES = 3  # serving nodes read per class per period, whatever the cluster's size


class Purpose(StrEnum):
    MARKED = "marked"
    SAMPLE = "sample"


@dataclass(frozen=True, slots=True)
class HealthRead:
    pool: str
    node: str
    purpose: Purpose


@dataclass(frozen=True)
class Serving:
    """The serving nodes in a stable order (samples rotate through it) and as a set (looked
    up): made once a pass, not once a read, at thousands of nodes."""

    ordered: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, nodes: Collection[str]) -> Serving:
        return cls(tuple(sorted(nodes)), frozenset(nodes))


@dataclass(frozen=True)
class MarkedNode:
    name: str
    marked_at: str  # RFC 3339 ("" if unknown): orders the reads, earliest first

    @property
    def since(self) -> float | None:
        """The mark as Unix time (None if unknown): a reading from before it (a serving
        node's sample) is no answer to "since it was marked", so the first read comes at
        once."""
        return marked_epoch(self.marked_at)


def choose_reads(
    classes: Sequence[PoolClass],
    marked: Sequence[MarkedNode],
    serving: Serving,
    view: LbHealthView,
    *,
    marked_every: float,
    sample_every: float,
) -> list[HealthRead]:
    """`view.as_of` is now. `marked_every`: how often a marked node is read again in a class;
    `sample_every`: how often a class's serving nodes are."""
    reads = _marked_reads(classes, marked, view, marked_every)
    due: list[tuple[float, int, PoolClass]] = []
    for i, pool_class in enumerate(classes):
        if not pool_class.sampled or not serving.ordered or sample_every <= 0:
            continue
        sampled_at = _last_sample(pool_class, serving.names, view)
        # A class whose sampled nodes all read UNHEALTHY is not settled (a new check, or one
        # that cannot pass): read it again at the marked nodes' pace until it is.
        every = marked_every if _unsettled(pool_class, serving.names, view) else sample_every
        if sampled_at is None or view.as_of - sampled_at >= every:
            due.append((sampled_at if sampled_at is not None else float("-inf"), i, pool_class))
    ordered = serving.ordered
    for _, _, pool_class in sorted(due, key=lambda d: (d[0], d[1])):
        turn = int(view.as_of // sample_every) if sample_every > 0 else 0
        pool = pool_class.pools[turn % len(pool_class.pools)]
        start = (turn * SAMPLED_NODES) % len(ordered)
        picked = (ordered + ordered)[start : start + min(SAMPLED_NODES, len(ordered))]
        reads.extend(HealthRead(pool, node, Purpose.SAMPLE) for node in picked)
    return reads


def _marked_reads(
    classes: Sequence[PoolClass], marked: Sequence[MarkedNode], view: LbHealthView, every: float
) -> list[HealthRead]:
    """A marked node never read in a class comes before any read again: every one's first
    answer (member or not, UNHEALTHY yet or not) before anyone's second."""
    first: list[HealthRead] = []
    again: list[tuple[float, HealthRead]] = []
    for node in sorted(marked, key=lambda m: (m.marked_at or "~", m.name)):
        for pool_class in classes:
            last = view.newest_in(pool_class.members, node.name)
            if last is None or (node.since is not None and last.at < node.since):
                first.append(_first_read(pool_class, node.name))
            elif last.state is not InstanceHealth.NOT_MEMBER and view.as_of - last.at >= every:
                # Let go (NOT_MEMBER): the service controller does not put a marked node back.
                # Otherwise the same pool, so its turn to UNHEALTHY is seen in one place.
                again.append((last.at, HealthRead(last.pool, node.name, Purpose.MARKED)))
    return first + [read for _, read in sorted(again, key=lambda a: a[0])]


def _first_read(pool_class: PoolClass, node: str) -> HealthRead:
    """One pool of the class, spread by the node's name."""
    pool = pool_class.pools[zlib.crc32(node.encode()) % len(pool_class.pools)]
    return HealthRead(pool, node, Purpose.MARKED)


def _unsettled(pool_class: PoolClass, serving: Collection[str], view: LbHealthView) -> bool:
    newest = newest_by_node(pool_class, serving, view, math.inf)
    return bool(newest) and all(r.state is InstanceHealth.UNHEALTHY for r in newest.values())


def _last_sample(
    pool_class: PoolClass, serving: Collection[str], view: LbHealthView
) -> float | None:
    # A failed read counts too: it is tried again next period, not at every tick.
    times = [
        r.at
        for (pool, node), r in view.readings.items()
        if pool in pool_class.members and node in serving
    ]
    return max(times) if times else None
