"""The emulated scale-down keeps upstream's order and delays: taint, the delete delay, the
delay-deletion wait, the VM deleted, then the Node object one lifecycle-controller period
later."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from lbhc.sandbox.autoscaler import (
    DELAY_DELETION_POLL_SEC,
    DELAY_DELETION_PREFIX,
    TO_BE_DELETED_TAINT,
    ScaleDown,
    ScaleDownTimes,
)
from lbhc.sandbox.kube_fake import KubeFake
from tests.builders import kube as kube_builders
from tests.waiting import wait_for


@pytest.mark.parametrize(
    ("delete_delay", "time_scale", "monitor"),
    [(5.0, 0.01, 5.0), (60.0, 0.002, 5.0), (0.0, 0.05, 2.0)],
    ids=["default-delay", "long-delay", "no-delay"],
)
def test_taint_then_the_delay_then_the_vm_then_the_node(
    delete_delay: float, time_scale: float, monitor: float
) -> None:
    kube = KubeFake()
    kube.upsert(kube_builders.node("n-1"))
    seen: list[tuple[str, bool, bool]] = []

    def delete_vm(node: str) -> None:
        taints = [t["key"] for t in kube.get("Node", None, node)["spec"].get("taints", [])]
        seen.append((node, TO_BE_DELETED_TAINT in taints, kube.get("Node", None, node) is not None))

    times = ScaleDown(kube, delete_vm, time_scale=time_scale, node_monitor_period=monitor).run(
        "n-1", delete_delay
    )
    assert seen == [("n-1", True, True)]  # the VM went while the tainted Node remained
    assert kube.get("Node", None, "n-1") is None
    assert times.vm_deleted is not None and times.node_deleted is not None
    assert times.vm_deleted - times.tainted >= delete_delay * time_scale
    assert times.node_deleted - times.vm_deleted >= monitor * time_scale
    assert (times.held_until, times.hold_timed_out, times.aborted) == (None, False, None)


def test_stop_ends_a_scale_down_before_the_vm_goes() -> None:
    kube = KubeFake()
    kube.upsert(kube_builders.node("n-1"))
    deleted: list[str] = []
    scale_down = ScaleDown(kube, deleted.append, time_scale=1.0)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            scale_down.run("n-1", delete_delay=30.0)
        except InterruptedError as exc:
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    scale_down.stop()
    thread.join(5)
    assert not thread.is_alive() and failed and deleted == []
    assert kube.get("Node", None, "n-1") is not None


# -- the delay-deletion handshake (cluster-autoscaler actuation/delay.go) ---------------------

SCALE = 0.01  # 5 s polls take 50 ms
POLL = DELAY_DELETION_POLL_SEC * SCALE
KEY = DELAY_DELETION_PREFIX + "lbhc"


class Run:
    """One scale-down of n-1 in a thread of its own, and what the test saw of it."""

    def __init__(self, kube: KubeFake, timeout: float, delete_delay: float) -> None:
        self.kube, self.deleted_with = kube, list[dict[str, Any]]()
        self.marks: dict[str, tuple[float, float]] = {}  # before and after a test's change
        self.result: list[ScaleDownTimes] = []

        def delete_vm(node: str) -> None:
            self.deleted_with.append(kube.get("Node", None, node) or {})

        scale_down = ScaleDown(
            kube, delete_vm, time_scale=SCALE, node_deletion_delay_timeout=timeout
        )
        self.thread = threading.Thread(
            target=lambda: self.result.append(scale_down.run("n-1", delete_delay))
        )

    def polls(self) -> list[float]:
        """When the autoscaler's lister looked at n-1."""
        return [
            e.time
            for e in self.kube.journal
            if e.user_agent == "cluster-autoscaler" and e.path == "/api/v1/nodes/n-1"
        ]

    def tainted(self) -> bool:
        node = self.kube.get("Node", None, "n-1") or {}
        return any(t["key"] == TO_BE_DELETED_TAINT for t in node["spec"].get("taints") or [])

    def change(self, name: str, do: Callable[[], object]) -> None:
        before = time.monotonic()
        do()
        self.marks[name] = (before, time.monotonic())

    def annotate(self, value: str | None) -> None:
        patch = {"metadata": {"annotations": {KEY: value}}}
        self.change(
            "annotated" if value else "removed", lambda: self.kube.patch("Node", None, "n-1", patch)
        )


def _nothing(run: Run) -> None:
    pass


def _remove_after_two_polls(run: Run) -> None:
    wait_for(lambda: len(run.polls()) >= 2, what="two lister polls")
    run.annotate(None)


def _remove_during_the_delay(run: Run) -> None:
    wait_for(run.tainted, what="the taint")
    run.annotate(None)


def _annotate_after_the_choice(run: Run) -> None:
    wait_for(run.tainted, what="the taint")
    run.annotate("late")


def _delete_the_node_while_held(run: Run) -> None:
    wait_for(lambda: len(run.polls()) >= 1, what="a lister poll")
    run.change("node deleted", lambda: run.kube.delete("Node", None, "n-1"))


@dataclass(frozen=True)
class Case:
    id: str
    annotated: bool  # the chosen Node carries a delay-deletion annotation
    during: Callable[[Run], None]  # what the test does while the scale-down runs
    held: bool  # whether the autoscaler waited
    polls: int | None  # how many lister polls (None: it depends on when the test acted)
    timed_out: bool = False
    aborted: bool = False
    timeout: float = 120.0  # --node-deletion-delay-timeout, unscaled
    delete_delay: float = 5.0
    lister_fails: bool = False
    deleted_annotated: bool = False  # the VM deleted while the annotation was on


CASES = [
    Case("no-annotation", False, _nothing, held=False, polls=0),
    Case("removed-later", True, _remove_after_two_polls, held=True, polls=None),
    # wait.Poll looks only after its first interval: one poll even if already removed
    Case("removed-in-the-delay", True, _remove_during_the_delay, True, 1, delete_delay=30.0),
    # only the chosen object decides whether to wait at all
    Case(
        "added-after-choice",
        False,
        _annotate_after_the_choice,
        held=False,
        polls=0,
        deleted_annotated=True,
    ),
    # polls at 5 s and 10 s, and once more when the timeout closes wait.Poll's channel
    Case(
        "never-removed",
        True,
        _nothing,
        True,
        3,
        timed_out=True,
        timeout=12.0,
        deleted_annotated=True,
    ),
    # upstream waits only when the timeout is not 0
    Case("timeout-zero", True, _nothing, False, 0, timeout=0.0, deleted_annotated=True),
    Case("lister-error", True, _nothing, True, 1, aborted=True, lister_fails=True),
    Case("node-gone", True, _delete_the_node_while_held, True, None, aborted=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_delay_deletion_wait(case: Case) -> None:
    kube = KubeFake()
    node = kube_builders.node("n-1")
    if case.annotated:
        node["metadata"]["annotations"] = {KEY: "draining"}
    kube.upsert(node)
    if case.lister_fails:
        kube.faults.fail_requests(times=1, status=500, path_contains="/api/v1/nodes/n-1")
    run = Run(kube, case.timeout, case.delete_delay)
    run.thread.start()
    case.during(run)
    run.thread.join(10)
    assert not run.thread.is_alive() and len(run.result) == 1
    times, polls = run.result[0], run.polls()
    if case.polls is not None:
        assert len(polls) == case.polls
    assert (times.hold_timed_out, times.aborted is not None) == (case.timed_out, case.aborted)
    delay_ended = times.tainted + case.delete_delay * SCALE
    if not case.held:
        assert times.held_until is None
    else:
        # the wait follows the delete delay, and its first look is one interval later
        assert times.held_until is not None
        assert polls[0] >= delay_ended + POLL * 0.9 and times.held_until >= polls[-1]
    if case.timed_out:
        assert times.held_until is not None
        assert times.held_until - delay_ended >= case.timeout * SCALE
    if "removed" in run.marks:  # the wait ended at the first poll after the removal
        before, after = run.marks["removed"]
        assert polls[-1] >= before and all(t < after for t in polls[:-1])
    if case.aborted:  # the taint removed, the VM and (if it still was) the Node kept
        assert times.vm_deleted is None and times.node_deleted is None
        assert run.deleted_with == []
        assert "n-1" in (times.aborted or "")
        if "node deleted" not in run.marks:
            assert kube.get("Node", None, "n-1") is not None and not run.tainted()
    else:  # the VM went while the Node was tainted, then the Node
        assert times.vm_deleted is not None and times.vm_deleted >= delay_ended
        assert len(run.deleted_with) == 1
        taints = run.deleted_with[0]["spec"].get("taints") or []
        assert [t["key"] for t in taints] == [TO_BE_DELETED_TAINT]
        annotations = run.deleted_with[0]["metadata"].get("annotations") or {}
        assert (KEY in annotations) == case.deleted_annotated
        assert kube.get("Node", None, "n-1") is None
