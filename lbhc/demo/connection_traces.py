"""The connection runs as the timeline draws them (lbhc.demo.trace): each pool's nodes'
health, every connection a client opened, and the scale-down's steps, in seconds from the
load's start."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from lbhc.demo.trace import ConnectionPoint, HealthPoint, Mark, RunTrace
from lbhc.model.cloud import COMPUTE_URL_PREFIX
from lbhc.sandbox.autoscaler import ScaleDownTimes
from lbhc.sandbox.loadgen import Attempt, LoadReport
from lbhc.sandbox.sandbox import Sandbox
from lbhc.sandbox.seed import node_name

# The picture's words for what a client saw (lbhc.demo.trace.OUTCOMES).
_SHORT_OUTCOMES = {"completed": "completed", "reset": "reset", "refused": "refused"}


def traces_of(
    sandbox: Sandbox,
    pools: Mapping[str, str],
    report: LoadReport,
    scaled: ScaleDownTimes,
    name_of: Callable[[str], str],
) -> list[RunTrace]:
    """Each pool of the world through the run: its nodes' health (the checker's
    transitions, and "out" once the service controller cut them), every connection, and the
    scale-down's steps; seconds from the load's start."""
    start = report.started
    prober, controller = sandbox.prober, sandbox.service_controller
    assert prober is not None and controller is not None
    wall = time.time() - time.monotonic()  # the cuts are stamped with time.time()
    spec = sandbox.spec
    traces = []
    for kind, pool in pools.items():
        health = []
        for index in range(spec.nodes):
            node = node_name(index)
            url = f"{COMPUTE_URL_PREFIX}projects/{spec.project}/zones/{spec.zone}/instances/{node}"
            health.append(HealthPoint(0.0, node, kind, "HEALTHY"))
            if kind != "without-check":
                health += [
                    HealthPoint(max(0.0, t - start), node, kind, state)
                    for t, state in prober.transitions(url)
                    if t >= start
                ]
            health += [
                HealthPoint(max(0.0, cut.at - wall - start), node, kind, "out")
                for cut in controller.cuts
                if cut.node == node and cut.pool == pool and cut.at - wall >= start
            ]
        connections = [
            ConnectionPoint(
                a.started - start, max(a.ended, a.started) - start, _outcome(a), a.node, a.kind
            )
            for a in report.attempts
            if a.target == kind and a.outcome not in ("skipped", "stopped")
        ]
        marks = [Mark(scaled.tainted - start, f"{scaled.node} tainted")]
        # an aborted scale-down deleted neither
        if scaled.vm_deleted is not None:
            marks.append(Mark(scaled.vm_deleted - start, "VM deleted"))
        if scaled.node_deleted is not None:
            marks.append(Mark(scaled.node_deleted - start, "Node deleted"))
        traces.append(RunTrace(name_of(kind), tuple(health), tuple(connections), tuple(marks)))
    return traces


def _outcome(attempt: Attempt) -> str:
    if attempt.kind == "long":
        return (
            "cut" if attempt.cut else ("completed" if attempt.outcome == "completed" else "failed")
        )
    if attempt.outcome == "timed-out":
        return "timed-out"
    return _SHORT_OUTCOMES.get(attempt.outcome, "failed")
