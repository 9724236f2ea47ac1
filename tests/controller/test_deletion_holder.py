"""The deletion holder (controller/deletion_holder): it carries out each pass's hold plan on
the Nodes from a writer thread of its own, releases first, paced, as the leader only, and
says what it did in Events and metrics. The plan itself is planner/hold's (tests/planner/
test_hold.py); here its inputs are NodeStatuses written out directly, the annotator is a
fake that records its calls, and the holder's clock is a parameter. The writer thread is
real: tests wait on what it has done (tests/waiting.wait_for), never on a guessed sleep."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Self

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.controller.deletion_holder import RECENT_WRITE_SEC, DeletionHolder, HolderOptions
from lbhc.controller.events import EventSpec
from lbhc.controller.metrics import Metrics
from lbhc.model.cluster import Node
from lbhc.planner.drain import Drainability, DrainState, NodeDrain
from lbhc.planner.hold import HOLD_ANNOTATION, HOLD_VALUE, HoldConfig, HoldState
from lbhc.planner.status import NodeStatus, StatusReport
from tests.builders import TO_BE_DELETED, assessed, cloud, cluster, kube, node
from tests.waiting import seconds_until, wait_for

MARK = 1_800_000_000  # the autoscaler's taint value: Unix seconds
MARGIN = 10.0
BOUND = 32
HELD = kube.with_annotations({HOLD_ANNOTATION: HOLD_VALUE})
ABLE = Drainability(True, "1 load balancer(s) drain it", BOUND)
UNABLE = Drainability(False, "it is in no load balancer")
SERVING = NodeDrain(DrainState.SERVING, "not marked for deletion")
# Any report will do for the fields the holder does not read: it reads only `nodes`.
BASE = assessed(cluster(nodes=(node("x"),)), cloud())
FACTS = BASE.nodes[0].kube_proxy


def marked_node(name: str, *tweaks: kube.Tweak, at: int = MARK) -> Node:
    return node(name, *tweaks, taints=TO_BE_DELETED, taint_value=str(at))


def draining(drained_at: float | None = None, marked_at: int = MARK) -> NodeDrain:
    """A marked node's verdict: every load balancer holding it drains it; `drained_at`: when
    GCE showed it UNHEALTHY in all of them (None: not yet)."""
    return NodeDrain(
        DrainState.DRAINING,
        "marked for deletion and kube-proxy fails /healthz",
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(marked_at)),
        BOUND,
        marked_for_deletion=True,
        drained_at=drained_at,
    )


def status(name: str, drain: NodeDrain = SERVING, able: Drainability = ABLE) -> NodeStatus:
    return NodeStatus(name, FACTS, drain, "", able)


def report(*statuses: NodeStatus) -> StatusReport:
    return dataclasses.replace(BASE, nodes=statuses)


# -- the fakes ----------------------------------------------------------------------------------


@dataclass
class RecordingAnnotator:
    """Records each patch (node, key, value) and when it was made (time.monotonic); fails
    with an ApiException of `fail_with[node]` for the nodes named there."""

    fail_with: dict[str, int] = field(default_factory=dict)
    # A patch of a node named here answers only once its gate is open.
    gates: dict[str, threading.Event] = field(default_factory=dict)
    calls: list[tuple[str, str, str | None]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def patch_node_annotation(self, name: str, key: str, value: str | None) -> dict[str, Any]:
        with self.lock:
            self.calls.append((name, key, value))
            self.times.append(time.monotonic())
        gate = self.gates.get(name)
        if gate is not None:
            assert gate.wait(timeout=10), f"the gate of {name} never opened"
        status_code = self.fail_with.get(name)
        if status_code is not None:
            raise ApiException(status=status_code, reason="refused")
        return {}

    def made(self) -> list[tuple[str, str, str | None]]:
        with self.lock:
            return list(self.calls)


class StallingTime(float):
    """A time that stops the pass in the middle of the first subtraction it is in: it calls
    `go`, then waits (a bounded while) for `done`, then answers."""

    go: Callable[[], None]
    done: Callable[[], bool]
    stalled: bool

    def __new__(cls, value: float, go: Callable[[], None], done: Callable[[], bool]) -> Self:
        made = super().__new__(cls, value)
        made.go, made.done, made.stalled = go, done, False
        return made

    def __sub__(self, other: float) -> float:
        if not self.stalled:
            self.stalled = True
            self.go()
            seconds_until(self.done, timeout=0.5)
        return float(self) - other


@dataclass
class Clock:
    now: float = MARK + 20.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    """A holder and everything it talks to."""

    holder: DeletionHolder
    annotator: RecordingAnnotator
    metrics: Metrics
    events: list[EventSpec]
    passes: list[str]
    clock: Clock
    leader: list[bool]  # [may_write]

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.metrics.registry.get_sample_value(name, labels or {}) or 0.0

    def writes(self, action: str, result: str) -> float:
        return self.sample("lbhc_deletion_hold_writes_total", {"action": action, "result": result})

    def releases(self, reason: str) -> float:
        return self.sample("lbhc_deletion_hold_releases_total", {"reason": reason})

    def reasons(self) -> list[str]:
        return [e.reason for e in self.events]


MakeRig = Callable[..., Rig]


@pytest.fixture
def rig() -> Iterator[MakeRig]:
    made: list[DeletionHolder] = []

    def make(
        *,
        writes_per_sec: float = 1000.0,
        dry_run: bool = False,
        annotator: RecordingAnnotator | None = None,
        start: bool = True,
    ) -> Rig:
        annotator = annotator or RecordingAnnotator()
        metrics, events, passes = Metrics(), list[EventSpec](), list[str]()
        clock, leader = Clock(), [True]
        holder = DeletionHolder(
            annotator,
            metrics,
            events.append,
            lambda: leader[0],
            passes.append,
            HolderOptions(
                HoldConfig(release_margin_sec=MARGIN),
                writes_per_sec=writes_per_sec,
                autoscaler_timeout_sec=120.0,
                dry_run=dry_run,
            ),
            clock=clock,
        )
        made.append(holder)
        if start:
            holder.start()
        return Rig(holder, annotator, metrics, events, passes, clock, leader)

    yield make
    for holder in made:
        holder.close()


# -- writes ---------------------------------------------------------------------------------------

# One pass wanting one of each: an add (a joining node), a removal (a node nothing can drain)
# and a release (a marked node drained everywhere). By name, the add comes first.
MIXED_NODES = (
    node("a-joins"),
    node("b-undrainable", HELD),
    marked_node("c-drained", HELD),
)
MIXED = report(
    status("a-joins"),
    status("b-undrainable", able=UNABLE),
    status("c-drained", draining(drained_at=MARK + 19)),
)


def test_writes_go_out_releases_first_then_removals_then_adds(rig: MakeRig) -> None:
    r = rig(start=False)  # the whole plan is queued before the writer looks at it
    plan = r.holder.hold(MIXED_NODES, MIXED, complete=True)
    assert {w.node for w in plan.writes} == {"a-joins", "b-undrainable", "c-drained"}
    r.holder.start()
    wait_for(lambda: len(r.annotator.made()) == 3, what="three writes")
    assert r.annotator.made() == [
        ("c-drained", HOLD_ANNOTATION, None),
        ("b-undrainable", HOLD_ANNOTATION, None),
        ("a-joins", HOLD_ANNOTATION, HOLD_VALUE),
    ]
    wait_for(lambda: r.writes("add", "ok") == 1 and r.writes("remove", "ok") == 2)
    assert r.holder.pending() == 0


def test_writes_are_paced_within_burst_plus_rate_times_elapsed(rig: MakeRig) -> None:
    rate, count = 5.0, 12
    burst = int(rate)  # the bucket holds a second's worth
    began = time.monotonic()  # before the holder's bucket is made: a bound on its age
    r = rig(writes_per_sec=rate, start=False)
    nodes = tuple(node(f"n{i:02}") for i in range(count))
    r.holder.hold(nodes, report(*(status(n.name) for n in nodes)), complete=True)
    r.holder.start()
    wait_for(lambda: len(r.annotator.made()) == count, timeout=15, what=f"{count} writes")
    times = list(r.annotator.times)
    for made, at in enumerate(times, start=1):
        assert made <= burst + rate * (at - began), (made, at - began)
    # And paced for real: the writes past the burst waited for their tokens.
    assert times[-1] - began >= (count - burst) / rate - 0.05


def test_a_dry_run_writes_nothing(rig: MakeRig, caplog: pytest.LogCaptureFixture) -> None:
    r = rig(dry_run=True)
    with caplog.at_level(logging.INFO, logger="lbhc.controller.deletion_holder"):
        plan = r.holder.hold(MIXED_NODES, MIXED, complete=True)
    # One line a pass says it all, whatever the number of nodes.
    (said,) = [rec.getMessage() for rec in caplog.records if "dry run" in rec.getMessage()]
    assert said == (
        f"dry run: {HOLD_ANNOTATION}: would release 1 node(s) (c-drained); take the hold off "
        "1 node(s) (b-undrainable); hold 1 node(s) (a-joins)"
    )
    assert len(plan.writes) == 3  # the plan says what it would do
    assert r.holder.pending() == 0  # nothing queued, so the writer has nothing to send
    r.holder.close()
    assert r.annotator.made() == []
    assert r.releases("drained") == 0


def test_not_the_leader_writes_nothing_and_drops_the_queue(rig: MakeRig) -> None:
    """One write every ten seconds: the queue empties at the first look, not one by one."""
    r = rig(writes_per_sec=0.1, start=False)
    r.leader[0] = False
    r.holder.hold(MIXED_NODES, MIXED, complete=True)
    assert r.holder.pending() == 3
    r.holder.start()
    wait_for(lambda: r.holder.pending() == 0, timeout=5, what="the queue dropped at once")
    r.holder.close()
    assert r.annotator.made() == []


def test_leader_again_the_next_pass_writes(rig: MakeRig) -> None:
    r = rig()
    r.leader[0] = False
    r.holder.hold(MIXED_NODES, MIXED, complete=True)
    wait_for(lambda: r.holder.pending() == 0, what="the queue dropped")
    assert r.annotator.made() == []
    r.leader[0] = True  # the next pass decides anew from the Nodes as they are
    r.holder.hold(MIXED_NODES, MIXED, complete=True)
    wait_for(lambda: len(r.annotator.made()) == 3, what="the new pass's writes")
    assert [name for name, *_ in r.annotator.made()] == ["c-drained", "b-undrainable", "a-joins"]


def test_a_lost_lease_drops_the_queue(rig: MakeRig) -> None:
    r = rig(writes_per_sec=1.0)  # one at once, then one a second
    nodes = tuple(node(f"n{i}") for i in range(5))
    r.holder.hold(nodes, report(*(status(n.name) for n in nodes)), complete=True)
    wait_for(lambda: len(r.annotator.made()) >= 1, what="the first write")
    r.holder.leadership_lost()
    assert r.holder.pending() == 0
    r.holder.close()
    # At most the one the writer had already taken when the lease went.
    assert len(r.annotator.made()) <= 2


def test_a_node_gone_before_its_patch_is_counted_gone_not_an_error(rig: MakeRig) -> None:
    r = rig(annotator=RecordingAnnotator(fail_with={"n": 404}))
    r.holder.hold((node("n"),), report(status("n")), complete=True)
    wait_for(lambda: r.writes("add", "gone") == 1, what="the 404 counted")
    assert r.writes("add", "error") == 0
    assert r.events == []


def test_a_refused_patch_is_a_warning_event(rig: MakeRig) -> None:
    r = rig(annotator=RecordingAnnotator(fail_with={"n": 403}))
    r.holder.hold((node("n"),), report(status("n")), complete=True)
    wait_for(lambda: r.events, what="an Event")
    (event,) = r.events
    assert (event.reason, event.type, event.regarding.kind, event.regarding.name) == (
        "DeletionHoldFailed",
        "Warning",
        "Node",
        "n",
    )
    assert "HTTP 403" in event.note and HOLD_ANNOTATION in event.note
    assert r.writes("add", "error") == 1


def test_the_same_write_is_not_queued_again_while_it_is_recent(rig: MakeRig) -> None:
    """A write just made may not be in the watch cache by the next pass."""
    r = rig()
    unannotated = (node("n"),)
    r.holder.hold(unannotated, report(status("n")), complete=True)
    wait_for(lambda: r.writes("add", "ok") == 1, what="the add")
    r.holder.close()  # the writer stops: what the next passes queue stays to be seen
    r.clock.now += RECENT_WRITE_SEC - 1
    r.holder.hold(unannotated, report(status("n")), complete=True)
    assert r.holder.pending() == 0
    r.clock.now += 2
    r.holder.hold(unannotated, report(status("n")), complete=True)
    assert r.holder.pending() == 1


def test_a_write_that_ends_while_a_pass_forgets_old_writes_does_not_break_the_pass(
    rig: MakeRig,
) -> None:
    """The writer records each write it made (so the next passes do not queue it again) while
    a pass forgets those older than RECENT_WRITE_SEC: the two must not meet in the middle.
    The pass is stopped in the middle of its look at the recorded writes and the writer let
    finish a write there."""
    gate = threading.Event()
    r = rig(annotator=RecordingAnnotator(gates={"n2": gate}))
    r.holder.hold((node("n1"),), report(status("n1")), complete=True)
    wait_for(lambda: r.writes("add", "ok") == 1, what="n1's add recorded")
    r.holder.hold((node("n2"),), report(status("n2")), complete=True)
    wait_for(lambda: len(r.annotator.made()) == 2, what="the writer in n2's patch")
    r.clock.now = StallingTime(r.clock.now + 1, gate.set, lambda: r.writes("add", "ok") == 2)
    r.holder.hold((), report(), complete=True)  # no RuntimeError from the recorded writes
    wait_for(lambda: r.writes("add", "ok") == 2, what="n2's add recorded")


def test_close_stops_the_thread(rig: MakeRig) -> None:
    before = set(threading.enumerate())
    r = rig()
    (thread,) = [
        t for t in threading.enumerate() if t not in before and t.name == "deletion-holder"
    ]
    assert thread.is_alive()
    r.holder.close()
    assert not thread.is_alive()


# -- releases, Events and metrics -----------------------------------------------------------------


def test_a_release_is_counted_timed_and_told(rig: MakeRig) -> None:
    r = rig()
    r.clock.now = MARK + 21
    nodes = (marked_node("m", HELD),)
    plan = r.holder.hold(nodes, report(status("m", draining(drained_at=MARK + 20))), True)
    (write,) = plan.writes
    assert write.held_for == 21
    wait_for(lambda: r.releases("drained") == 1, what="the release counted")
    assert r.sample("lbhc_deletion_hold_duration_seconds_count") == 1
    assert r.sample("lbhc_deletion_hold_duration_seconds_sum") == 21
    wait_for(lambda: "DeletionReleased" in r.reasons(), what="the release's Event")
    released = next(e for e in r.events if e.reason == "DeletionReleased")
    assert released.regarding.name == "m" and released.type == "Normal"
    assert released.note == "released: unhealthy in every load balancer after 21 s"
    # Nine seconds on, the annotation off: the node keeps the words of its release, not a
    # recount of the seconds.
    r.clock.now += 9
    later = r.holder.hold((marked_node("m"),), report(status("m", draining(MARK + 20))), True)
    (hold,) = later.nodes
    assert hold.state is HoldState.RELEASED
    assert hold.reason == "released: unhealthy in every load balancer after 21 s"
    assert later.writes == ()


def test_a_node_gone_before_its_release_is_sent_counts_a_node_deleted_release(
    rig: MakeRig,
) -> None:
    r = rig(annotator=RecordingAnnotator(fail_with={"m": 404}))
    r.clock.now = MARK + 21
    nodes = (marked_node("m", HELD),)
    r.holder.hold(nodes, report(status("m", draining(drained_at=MARK + 20))), True)
    wait_for(lambda: r.releases("node-deleted") == 1, what="the hold's end counted")
    assert r.writes("remove", "gone") == 1 and r.releases("drained") == 0
    assert r.sample("lbhc_deletion_hold_duration_seconds_sum") == 21


def test_a_held_marked_node_gone_from_the_list_counts_a_node_deleted_release(
    rig: MakeRig,
) -> None:
    r = rig()
    held = (marked_node("m", HELD),)
    r.holder.hold(held, report(status("m", draining())), complete=True)
    assert r.sample("lbhc_deletion_holds") == 1
    assert r.sample("lbhc_deletion_holds_marked") == 1
    assert r.sample("lbhc_deletion_hold_longest_seconds") == 20
    r.clock.now = MARK + 50
    r.holder.hold((), report(), complete=True)
    assert r.releases("node-deleted") == 1
    assert r.sample("lbhc_deletion_hold_duration_seconds_sum") == 50
    assert r.sample("lbhc_deletion_holds_marked") == 0
    assert r.sample("lbhc_deletion_hold_longest_seconds") == 0
    r.holder.hold((), report(), complete=True)
    assert r.releases("node-deleted") == 1  # counted once


def test_a_held_marked_node_missing_from_an_incomplete_view_is_not_counted_deleted(
    rig: MakeRig,
) -> None:
    """The cache drops a Node it cannot decode, and says the view is incomplete: the Node may
    still exist, so its hold is neither counted as ended nor told again when it is back
    (as controller/drain_timing treats a node missing from a partial list)."""
    r = rig()
    held = (marked_node("m", HELD),)
    r.holder.hold(held, report(status("m", draining())), complete=True)
    r.clock.now += 5
    r.holder.hold((), report(), complete=False)
    assert r.releases("node-deleted") == 0
    assert r.sample("lbhc_deletion_hold_duration_seconds_count") == 0
    r.clock.now += 5
    r.holder.hold(held, report(status("m", draining())), complete=True)
    assert r.reasons() == ["DeletionHeld"]


def test_a_held_marked_node_missing_then_gone_from_a_complete_view_is_counted_once(
    rig: MakeRig,
) -> None:
    r = rig()
    r.holder.hold((marked_node("m", HELD),), report(status("m", draining())), complete=True)
    r.clock.now = MARK + 30
    r.holder.hold((), report(), complete=False)
    r.clock.now = MARK + 40
    r.holder.hold((), report(), complete=True)
    assert r.releases("node-deleted") == 1
    assert r.sample("lbhc_deletion_hold_duration_seconds_sum") == 40


def test_a_new_holder_mid_hold_neither_strips_nor_re_adds(rig: MakeRig) -> None:
    """A restart, or a new leader: its first pass over a held, marked node not yet drained
    queues nothing, and counts the hold from the taint's time, not its own start."""
    r = rig(start=False)
    r.clock.now = MARK + 30
    plan = r.holder.hold((marked_node("m", HELD),), report(status("m", draining())), True)
    assert plan.writes == () and r.holder.pending() == 0
    (hold,) = plan.nodes
    assert (hold.state, hold.marked_since, hold.deadline) == (
        HoldState.HELD,
        MARK,
        MARK + BOUND + MARGIN,
    )
    assert r.sample("lbhc_deletion_hold_longest_seconds") == 30


def test_deletion_held_is_told_once_per_mark(rig: MakeRig) -> None:
    r = rig()
    for _ in range(3):
        r.holder.hold((marked_node("m", HELD),), report(status("m", draining())), True)
        r.clock.now += 1
    assert r.reasons() == ["DeletionHeld"]
    assert r.events[0].note.startswith("deletion held: ")
    # The autoscaler takes its mark back, then marks it again: a new hold, a new Event.
    r.holder.hold((node("m", HELD),), report(status("m")), True)
    r.holder.hold((marked_node("m", HELD, at=MARK + 30),), report(status("m", draining())), True)
    assert r.reasons() == ["DeletionHeld", "DeletionHeld"]


def test_a_pass_is_asked_for_at_a_held_nodes_deadline(rig: MakeRig) -> None:
    r = rig()
    r.clock.now = MARK + BOUND + MARGIN - 0.1  # the deadline a tenth of a second away
    plan = r.holder.hold((marked_node("m", HELD),), report(status("m", draining())), True)
    assert plan.next_deadline == MARK + BOUND + MARGIN
    wait_for(lambda: r.passes, what="a pass asked for")
    assert r.passes == ["a deletion hold's deadline"]


def test_the_autoscalers_timeout_is_a_gauge(rig: MakeRig) -> None:
    assert rig().sample("lbhc_deletion_hold_timeout_seconds") == 120


def test_a_refused_patch_drops_the_rest_of_the_pass_writes(rig: MakeRig) -> None:
    """RBAC missing refuses every Node alike: one refused patch a pass, not one per node."""
    refused = {f"n{i}": 403 for i in range(20)}
    r = rig(annotator=RecordingAnnotator(fail_with=refused))
    nodes = tuple(node(f"n{i}") for i in range(20))
    r.holder.hold(nodes, report(*(status(n.name) for n in nodes)), complete=True)
    wait_for(lambda: r.writes("add", "error") == 1, what="the refused patch")
    wait_for(lambda: r.holder.pending() == 0, what="the queue dropped")
    assert r.writes("add", "error") == 1
    r.holder.hold(nodes, report(*(status(n.name) for n in nodes)), complete=True)
    wait_for(lambda: r.writes("add", "error") == 2, what="the next pass's one try")
    wait_for(lambda: r.holder.pending() == 0, what="the queue dropped again")
    assert r.writes("add", "error") == 2
