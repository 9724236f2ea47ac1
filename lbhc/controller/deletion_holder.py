"""hold.deletion `on`: carry out the hold plan (planner/hold) on the Nodes.

Each pass hands over the writes its plan wants; a thread of its own sends them, releases
first, paced by `hold.writes_per_sec`, as the writer of the moment only, so a thousand nodes
joining never hold up a pass and a release never waits behind them. Each write is a JSON merge
patch of lbhc's one annotation (lbhc/kube/client.py, patch_node_annotation)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.gce.ratelimit import TokenBucket
from lbhc.kube.client import describe_kube_error, status_of
from lbhc.model.cluster import Node
from lbhc.planner.hold import (
    HOLD_ANNOTATION,
    HOLD_VALUE,
    HoldConfig,
    HoldPlan,
    HoldState,
    HoldWrite,
    NodeHold,
    ReleaseReason,
    plan_holds,
)
from lbhc.planner.listing import first_few
from lbhc.planner.nodes import is_being_deleted
from lbhc.planner.status import StatusReport

log = logging.getLogger(__name__)
NOT_FOUND = 404
# A write just sent may not be in the watch cache by the next pass: the same write is not
# queued again for this long.
RECENT_WRITE_SEC = 30.0


class NodeAnnotator(Protocol):
    def patch_node_annotation(self, name: str, key: str, value: str | None) -> dict[str, Any]:
        pass


@dataclass(frozen=True)
class HolderOptions:
    config: HoldConfig
    writes_per_sec: float = 5.0
    autoscaler_timeout_sec: float = 120.0
    dry_run: bool = False


def node_ref(name: str) -> ObjectRef:
    return ObjectRef("Node", name, "", "v1")


class DeletionHolder:
    def __init__(
        self,
        annotator: NodeAnnotator,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        may_write: Callable[[], bool],
        request_pass: Callable[[str], None],
        options: HolderOptions,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._annotator, self._metrics, self._record = annotator, metrics, record
        self._may_write, self._request_pass = may_write, request_pass
        self._options, self._clock = options, clock
        self._first_seen_marked: dict[str, float] = {}
        self._held_marked: dict[str, float] = {}  # held, marked nodes -> when marked
        self._announced: set[str] = set()  # marked nodes whose hold an Event has told
        self._released: dict[str, NodeHold] = {}  # the words of each release lbhc made
        self._recent: dict[tuple[str, bool], float] = {}
        self._queue: list[HoldWrite] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._bucket = TokenBucket(options.writes_per_sec, sleep=self._sleep)
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._timer_due: float | None = None
        self.last: HoldPlan | None = None
        metrics.hold_timeout.set(options.autoscaler_timeout_sec)

    # -- the pass's part ------------------------------------------------------------------
    def hold(self, nodes: Sequence[Node], report: StatusReport, complete: bool) -> HoldPlan:
        now = self._clock()
        present = {n.name for n in nodes}
        # On an incomplete view a Node not listed may still exist (the cache drops one it
        # cannot decode): what is known of its hold is kept, and it is not counted deleted.
        unseen = set() if complete else set(self._held_marked) - present
        marked = {n.name for n in nodes if is_being_deleted(n)} | unseen
        self._first_seen_marked = {name: self._first_seen_marked.get(name, now) for name in marked}
        plan = plan_holds(
            nodes,
            report.nodes,
            self._options.config,
            now,
            complete=complete,
            first_seen_marked=self._first_seen_marked,
        )
        if complete:
            self._count_deleted_while_held(present, now)
        plan = self._with_release_words(plan)
        self._observe(plan, now, unseen)
        self._announce(plan, unseen)
        if self._options.dry_run:
            _log_dry_run(plan.writes)
        else:
            self._enqueue(plan.writes, now)
        if plan.next_deadline is not None:
            self._wake_at(plan.next_deadline)
        self.last = plan
        return plan

    def _count_deleted_while_held(self, present: set[str], now: float) -> None:
        """A node gone while lbhc still held it: the autoscaler's timeout ran out (or someone
        deleted it by hand) before its load balancers were seen to let it go."""
        for name, since in list(self._held_marked.items()):
            if name in present:
                continue
            del self._held_marked[name]
            self._announced.discard(name)
            self._released.pop(name, None)
            self._release_counted(ReleaseReason.NODE_DELETED, now - since)
            log.warning(
                "Node %s was deleted while lbhc held it, %.0f s after it was marked: the "
                "autoscaler's --node-deletion-delay-timeout (hold.autoscaler_timeout_sec: "
                "%.0f s) ran out first, or it was deleted by other means",
                name,
                now - since,
                self._options.autoscaler_timeout_sec,
            )

    def _with_release_words(self, plan: HoldPlan) -> HoldPlan:
        """A node lbhc released keeps the words of its release (the planner, re-deciding on
        the next pass, would count the seconds again)."""
        nodes = []
        for hold in plan.nodes:
            said = self._released.get(hold.node)
            if hold.state is HoldState.RELEASED and said is not None:
                nodes.append(said)
                continue
            if hold.state is not HoldState.RELEASED:
                self._released.pop(hold.node, None)
            nodes.append(hold)
        return HoldPlan(tuple(nodes), plan.writes, plan.next_deadline, plan.complete, plan.holds)

    def _observe(self, plan: HoldPlan, now: float, unseen: set[str]) -> None:
        waiting = [h for h in plan.nodes if h.state is HoldState.HELD and h.marked_since]
        kept = {name: since for name, since in self._held_marked.items() if name in unseen}
        self._held_marked = kept | {h.node: h.marked_since or now for h in waiting}
        self._metrics.holds.set(plan.holds)
        self._metrics.holds_marked.set(len(waiting))
        longest = max((now - (h.marked_since or now) for h in waiting), default=0.0)
        self._metrics.hold_longest.set(longest)

    def _announce(self, plan: HoldPlan, unseen: set[str]) -> None:
        """One Event on a marked Node when its hold starts to count."""
        for hold in plan.nodes:
            if hold.state is not HoldState.HELD or hold.marked_since is None:
                continue
            if hold.node in self._announced:
                continue
            self._announced.add(hold.node)
            note = hold.reason.removeprefix("held: ")
            self._record(
                EventSpec(node_ref(hold.node), "DeletionHeld", "Hold", f"deletion held: {note}")
            )
        marked = {h.node for h in plan.nodes if h.marked_since is not None}
        self._announced &= marked | unseen

    # -- the writer -------------------------------------------------------------------------
    def _enqueue(self, writes: Sequence[HoldWrite], now: float) -> None:
        with self._cond:  # the writer thread records into _recent
            self._recent = {k: t for k, t in self._recent.items() if now - t < RECENT_WRITE_SEC}
            fresh = [w for w in writes if (w.node, w.add) not in self._recent]
            # Releases first (a deletion waits on them), then removals, then adds.
            self._queue = sorted(fresh, key=lambda w: (w.release is None, w.add))
            self._cond.notify_all()

    def start(self) -> DeletionHolder:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="deletion-holder", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._queue = []
            self._cond.notify_all()
        if self._timer is not None:
            self._timer.cancel()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def leadership_lost(self) -> None:
        """The new leader decides from the Nodes as they are; nothing queued is sent."""
        with self._cond:
            self._queue = []

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue) or self._stop.is_set())
                if self._stop.is_set():
                    return
            self._bucket.acquire()  # paced before the write is taken: a newer plan may drop it
            with self._cond:
                if not self._queue:
                    continue
                write = self._queue.pop(0)
            if not self._may_write():
                with self._cond:
                    self._queue = []  # the lease moved: the new leader decides
                continue
            self._send(write)

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _send(self, write: HoldWrite) -> None:
        action = "add" if write.add else "remove"
        try:
            value = HOLD_VALUE if write.add else None
            self._annotator.patch_node_annotation(write.node, HOLD_ANNOTATION, value)
        except Exception as exc:
            if status_of(exc) == NOT_FOUND:
                self._metrics.hold_writes.labels(action, "gone").inc()
                if write.release is not None:  # gone before its release: the hold ended so
                    self._release_counted(ReleaseReason.NODE_DELETED, write.held_for or 0.0)
                return
            self._metrics.hold_writes.labels(action, "error").inc()
            # What refused one Node (RBAC, the admission policy, the API server down) refuses
            # the rest: the next pass queues them again, so a refusal costs one patch a pass,
            # not one per node.
            with self._cond:
                self._queue = []
            said = describe_kube_error(exc)
            log.warning(
                "could not %s %s on Node %s (%s)", action, HOLD_ANNOTATION, write.node, said
            )
            note = (
                f"could not {action} {HOLD_ANNOTATION}: {said} "
                "(is deploy/components/hold-deletion applied?)"
            )
            self._record(
                EventSpec(node_ref(write.node), "DeletionHoldFailed", "Hold", note, "Warning")
            )
            return
        with self._cond:
            self._recent[(write.node, write.add)] = self._clock()
        self._metrics.hold_writes.labels(action, "ok").inc()
        log.info(
            "%s %s on Node %s: %s",
            "added" if write.add else "removed",
            HOLD_ANNOTATION,
            write.node,
            write.reason,
        )
        if write.release is None:
            return
        self._release_counted(write.release, write.held_for or 0.0)
        self._released[write.node] = NodeHold(
            write.node, HoldState.RELEASED, write.reason, write.release
        )
        self._record(EventSpec(node_ref(write.node), "DeletionReleased", "Release", write.reason))

    def _release_counted(self, reason: ReleaseReason, held_for: float) -> None:
        self._metrics.hold_releases.labels(reason.value).inc()
        self._metrics.hold_duration.observe(held_for)

    def _wake_at(self, when: float) -> None:
        """A pass at the earliest deadline of a held, marked node (one timer at a time)."""
        if (
            self._timer_due is not None
            and self._timer_due <= when
            and self._timer is not None
            and self._timer.is_alive()
        ):
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, when - self._clock()) + 0.05
        self._timer = threading.Timer(
            delay, self._request_pass, args=("a deletion hold's deadline",)
        )
        self._timer.daemon = True
        self._timer.start()
        self._timer_due = when


def _log_dry_run(writes: Sequence[HoldWrite]) -> None:
    """One line a pass, not one per node: at start, a dry run would add thousands."""
    if not writes:
        return
    by_kind: dict[str, list[str]] = {"release": [], "take the hold off": [], "hold": []}
    for write in writes:
        kind = "hold" if write.add else "release" if write.release else "take the hold off"
        by_kind[kind].append(write.node)
    said = "; ".join(
        f"{kind} {len(nodes)} node(s) ({first_few(nodes, 3)})"
        for kind, nodes in by_kind.items()
        if nodes
    )
    log.info("dry run: %s: would %s", HOLD_ANNOTATION, said)
