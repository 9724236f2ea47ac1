"""Was a node given time to drain? cluster-autoscaler deletes a node
`--node-delete-delay-after-taint` after tainting it (5 s by default, after evicting its Pods,
if any: kubernetes/autoscaler cluster-autoscaler/FAQ.md), while a default legacy check needs
interval x (unhealthy threshold + 1) to mark it unhealthy (24-32 s). An empty node is then
gone before any load balancer stopped sending it new connections. This watches for it: when
each node was marked, and when it disappeared."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.planner.drain import marked_epoch
from lbhc.planner.status import StatusReport

log = logging.getLogger(__name__)
DELETED_BEFORE_DRAINED = "DeletedBeforeDrained"


@dataclass(frozen=True)
class Marked:
    at: float  # Unix time the node was marked (its taint's value, else when first seen so)
    bound_seconds: int | None  # its drain bound when last seen; None: nothing drains it


class DrainTimer:
    def __init__(
        self,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._metrics = metrics
        self._record = record
        self._clock = clock
        self._marked: dict[str, Marked] = {}

    def reset(self) -> None:
        self._marked = {}

    def observe(self, report: StatusReport) -> None:
        now = self._clock()
        present = {node.node for node in report.nodes}
        if report.nodes_complete:  # a node missing from a partial list may still exist
            for name in [n for n in self._marked if n not in present]:
                self._gone(name, self._marked.pop(name), now)
        for node in report.nodes:
            # Only a mark for deletion starts a window (an excluded node has none to time):
            # a node GKE merely labelled for a drain is not-draining too, but nothing is
            # removing it yet.
            if not node.drain.marked_for_deletion:
                self._marked.pop(node.node, None)  # never marked, or the mark taken back
                continue
            known = self._marked.get(node.node)
            at = marked_epoch(node.drain.marked_at) or (known.at if known else now)
            self._marked[node.node] = Marked(at, node.drain.bound_seconds)

    def _gone(self, name: str, marked: Marked, now: float) -> None:
        window = max(0.0, now - marked.at)
        self._metrics.drain_window.observe(window)
        if marked.bound_seconds is None or window >= marked.bound_seconds:
            return
        self._metrics.deleted_before_drained.inc()
        note = (
            f"node {name} was gone {window:.0f} s after it was marked for deletion, before its "
            f"load balancers could drain it (up to {marked.bound_seconds} s: the attached "
            "checks' interval x (unhealthy threshold + 1)); give cluster-autoscaler "
            f"--node-delete-delay-after-taint={marked.bound_seconds}s or more"
        )
        log.warning("%s", note)
        self._record(
            EventSpec(ObjectRef("Node", name), DELETED_BEFORE_DRAINED, "Drain", note, "Warning")
        )
