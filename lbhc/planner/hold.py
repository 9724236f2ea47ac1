"""Holding a node cluster-autoscaler deletes until its load balancers have let it go.

cluster-autoscaler taints a node it scales down, sleeps `--node-delete-delay-after-taint`
(5 s by default), evicts its Pods, and then, before deleting the VM, waits while the Node
carries any annotation prefixed `delay-deletion.cluster-autoscaler.kubernetes.io/`: it looks
at the Node object it chose (from the snapshot taken before the taint), then polls its lister
every 5 s, up to `--node-deletion-delay-timeout` (2 minutes by default), and deletes anyway
after that (kubernetes/autoscaler cluster-autoscaler/core/scaledown/actuation/delay.go,
WaitForDelayDeletion). A default legacy check needs interval x (unhealthy threshold + 1) =
32 s to mark a node UNHEALTHY, so without a hold the VM is usually gone first.

The annotation must be on the node before the autoscaler chooses it, and the autoscaler
chooses from a snapshot taken before anything tells a watcher which node it will be (the
`DeletionCandidateOfClusterAutoscaler` soft taint is best effort, capped per loop by
`--max-bulk-soft-taint-count` and `--max-bulk-soft-taint-time`, core/scaledown/unneeded): so
lbhc keeps it on every node some load balancer can drain, one patch when the node joins or
becomes drainable, and takes it off a marked node once GCE shows every load balancer holding
it no longer sends it new connections, or once the drain bound plus a margin has passed since
the mark, whichever comes first.

Pure and level-based: the decision is a function of the Nodes as they are (annotation,
taint, its time) and the drain verdicts, so a restart or a new leader decides the same and
never strips and re-adds an annotation. On an incomplete view nothing is added or removed
except releases, which only ever shorten a hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lbhc.model.cluster import DELAY_DELETION_PREFIX, Node
from lbhc.planner.drain import Drainability, DrainState, NodeDrain, marked_at, marked_epoch
from lbhc.planner.nodes import is_being_deleted
from lbhc.planner.status import NodeStatus

HOLD_ANNOTATION = DELAY_DELETION_PREFIX + "lbhc"
# The value says who holds it and until when, for whoever reads the Node.
HOLD_VALUE = "held by lbhc until its load balancers stop sending it new connections"
# A marked node whose load balancers' bound is unknown (their checks unread) is held for the
# default legacy check's bound: 8 s x (3 + 1).
DEFAULT_BOUND_SEC = 32


class HoldState(StrEnum):
    HELD = "held"  # carries lbhc's annotation (or is about to)
    RELEASED = "released"  # marked for deletion; lbhc's annotation is off
    NOT_HELD = "not-held"


class ReleaseReason(StrEnum):
    """Why a marked node's hold ended (also the metric's label)."""

    DRAINED = "drained"  # GCE shows every load balancer holding it no longer sending to it
    BOUND_ELAPSED = "bound-elapsed"  # drain bound plus margin since the mark
    NOTHING_DRAINS = "nothing-drains"  # marked, yet no load balancer holding it drains it
    NODE_DELETED = "node-deleted"  # gone while held: the autoscaler's timeout, or a hand


@dataclass(frozen=True)
class HoldConfig:
    release_margin_sec: float = 10.0


@dataclass(frozen=True)
class NodeHold:
    node: str
    state: HoldState
    reason: str  # for humans: "released: unhealthy in every load balancer after 21 s"
    release: ReleaseReason | None = None
    marked_since: float | None = None  # Unix time of the mark, for a marked node
    # For a held, marked node: when it is released at the latest (Unix time).
    deadline: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "state": self.state.value,
            "reason": self.reason,
            "release": self.release.value if self.release else None,
            "markedSince": self.marked_since,
            "deadline": self.deadline,
        }


@dataclass(frozen=True)
class HoldWrite:
    """One patch of lbhc's annotation on one Node: add it, or take it off."""

    node: str
    add: bool
    reason: str
    release: ReleaseReason | None = None  # a marked node's release
    held_for: float | None = None  # with a release: seconds since the mark


@dataclass(frozen=True)
class HoldPlan:
    nodes: tuple[NodeHold, ...] = ()
    writes: tuple[HoldWrite, ...] = ()
    # The earliest deadline of a held, marked node: a pass is due then.
    next_deadline: float | None = None
    complete: bool = True  # False: adds and removals other than releases were withheld
    holds: int = 0  # nodes carrying the annotation now

    def to_json(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "holds": self.holds,
            "nodes": [n.to_json() for n in self.nodes],
        }


def is_held(node: Node) -> bool:
    return HOLD_ANNOTATION in node.metadata.annotations


def others_holding(node: Node) -> tuple[str, ...]:
    """Other controllers' delay-deletion annotations: the autoscaler waits for them too."""
    return tuple(sorted(k for k in node.metadata.annotations if k != HOLD_ANNOTATION))


def plan_holds(
    nodes: Sequence[Node],
    statuses: Sequence[NodeStatus],
    config: HoldConfig,
    now: float,
    *,
    complete: bool,
    first_seen_marked: Mapping[str, float] | None = None,
) -> HoldPlan:
    """`statuses`: the status report's nodes (drain verdicts and drainability); `complete`:
    the cluster and its kube-proxies were read in full; `first_seen_marked`: when lbhc first
    saw a node marked whose mark carries no time (the taint's value is the autoscaler's
    Unix time)."""
    by_name = {s.node: s for s in statuses}
    seen = first_seen_marked or {}
    holds, writes = [], []
    for node in sorted(nodes, key=lambda n: n.name):
        status = by_name.get(node.name)
        if status is None:
            continue
        hold, write = _decide(node, status, config, now, complete, seen.get(node.name))
        holds.append(hold)
        if write is not None:
            writes.append(write)
    deadlines = [h.deadline for h in holds if h.deadline is not None and h.release is None]
    return HoldPlan(
        tuple(holds),
        tuple(writes),
        min(deadlines, default=None),
        complete,
        sum(1 for n in nodes if is_held(n)),
    )


def _decide(
    node: Node,
    status: NodeStatus,
    config: HoldConfig,
    now: float,
    complete: bool,
    first_seen: float | None,
) -> tuple[NodeHold, HoldWrite | None]:
    held, able = is_held(node), status.drainability
    if not is_being_deleted(node):
        if able.able is None or not complete:
            state = HoldState.HELD if held else HoldState.NOT_HELD
            why = able.reason if able.able is None else "the cluster was not read in full"
            return NodeHold(node.name, state, f"unchanged: {why}"), None
        if able.able:
            reason = f"held: {able.reason}"
            write = None if held else HoldWrite(node.name, True, reason)
            return NodeHold(node.name, HoldState.HELD, reason), write
        reason = f"not held: nothing can drain it ({able.reason})"
        write = HoldWrite(node.name, False, reason) if held else None
        return NodeHold(node.name, HoldState.NOT_HELD, reason), write
    since = marked_epoch(marked_at(node)) or first_seen or now
    drain = status.drain
    deadline = since + _bound(drain, able) + config.release_margin_sec
    drained_by = _drained_by(drain, since)
    if drained_by is not None:  # GCE's word, due before the bound maybe: a pass then
        deadline = min(deadline, drained_by)
    release, why = _release(drain, now, since, deadline, drained_by)
    if not held:
        # Never added to a marked node: the autoscaler chose it from an object without it.
        if release is None:
            why = "not held: marked before lbhc held it"
            return NodeHold(node.name, HoldState.NOT_HELD, why, marked_since=since), None
        if release is ReleaseReason.NOTHING_DRAINS:  # never worth holding, so never held
            return NodeHold(node.name, HoldState.NOT_HELD, f"not held: {why}", None, since), None
        return NodeHold(node.name, HoldState.RELEASED, f"released: {why}", release, since), None
    if release is None:
        left = max(0.0, deadline - now)
        reason = f"held: {why}; released at the latest in {left:.0f} s"
        return NodeHold(node.name, HoldState.HELD, reason, None, since, deadline), None
    reason = f"released: {why}"
    write = HoldWrite(node.name, False, reason, release, max(0.0, now - since))
    return NodeHold(node.name, HoldState.RELEASED, reason, release, since, deadline), write


def _bound(drain: NodeDrain, able: Drainability) -> float:
    """The marked node's drain bound, plus the connection draining of any backend service
    that took it out (those connections end only when it is done)."""
    bound = drain.bound_seconds or able.bound_seconds or DEFAULT_BOUND_SEC
    draining = max((r.draining_timeout_sec or 0 for r in drain.taken_out), default=0)
    return float(max(bound, draining))


def _drained_by(drain: NodeDrain, since: float) -> float | None:
    """When, on GCE's word, no load balancer holding the node sends it anything: it reads
    UNHEALTHY (or out) everywhere, and the connection draining of any backend service that
    took it out has run its course. None: GCE has not shown it."""
    if drain.drained_at is None:
        return None
    draining = max((r.draining_timeout_sec or 0 for r in drain.taken_out), default=0)
    return max(drain.drained_at, since + draining)


def _release(
    drain: NodeDrain, now: float, since: float, deadline: float, drained_by: float | None
) -> tuple[ReleaseReason | None, str]:
    """(why to release now, or None to keep holding; and the words for it)."""
    after = f"after {max(0.0, now - since):.0f} s"
    drained = drained_by is not None and now >= drained_by
    if drained and drain.state is DrainState.NOT_APPLICABLE:
        return ReleaseReason.DRAINED, f"out of every load balancer {after}"
    if drained:
        return ReleaseReason.DRAINED, f"unhealthy in every load balancer {after}"
    if drain.state in (DrainState.NOT_DRAINING, DrainState.EXCLUDED):
        return ReleaseReason.NOTHING_DRAINS, "nothing can drain it"
    if drain.state is DrainState.NOT_APPLICABLE and not drain.taken_out:
        return ReleaseReason.NOTHING_DRAINS, "it is in no load balancer"
    if now >= deadline:
        return ReleaseReason.BOUND_ELAPSED, f"bound elapsed ({after} marked)"
    return None, "waiting for its load balancers to drain it"
