"""Autoscaler timing: a node gone before its load balancers' drain bound elapsed since it was
marked is a Warning Event on its last name, a counter and a histogram of the window. The
clock is a parameter: no sleeps."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lbhc.controller.drain_timing import DELETED_BEFORE_DRAINED, DrainTimer
from lbhc.controller.events import EventSpec
from lbhc.controller.metrics import Metrics
from lbhc.model.cluster import Node
from lbhc.planner.status import StatusReport
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    MODERN_IMAGE,
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    kube_proxy_pod,
    node,
    pool_for,
    service,
)

MARKED_AT = 1795306688  # the autoscaler's taint value, Unix seconds
WEB = service("web")
TAINTED = node("victim", taints=TO_BE_DELETED, taint_value=str(MARKED_AT))
GKE_DRAIN = {"operation.gke.io/type": "drain"}


def report(*nodes: Node, complete: bool = True, pools: bool = True) -> StatusReport:
    snapshot = cluster(
        services=(WEB,),
        nodes=nodes,
        pods=tuple(kube_proxy_pod(n.name, image=MODERN_IMAGE) for n in nodes),
    )
    world = cloud(
        pools=(pool_for(WEB, health_checks=(CP.self_link,)),) if pools else (), checks=(CP,)
    )
    made = assessed(snapshot, world)
    return StatusReport(**{**made.__dict__, "nodes_complete": complete})


@dataclass(frozen=True)
class Case:
    id: str
    gone_after: float  # seconds from the mark until the node is no longer listed
    warned: bool
    complete: bool = True
    pools: bool = True
    victim: Node = TAINTED
    windows: float = 1.0  # drain windows observed


CASES = [
    Case("the autoscaler's 5 s default: gone long before the 32 s bound", 5, True),
    Case("a delay past the bound: drained in time", 40, False),
    Case("missing from a partial list proves nothing", 5, False, complete=False, windows=0),
    Case("in no target pool: nothing to drain, nothing to say", 5, False, pools=False),
    Case(
        "only labelled for a GKE drain: never marked, no window to time",
        5,
        False,
        victim=node("victim", labels=GKE_DRAIN),
        windows=0,
    ),
    Case(
        "labelled for a GKE drain and tainted: timed from the taint as any marked node",
        5,
        True,
        victim=node("victim", taints=TO_BE_DELETED, taint_value=str(MARKED_AT), labels=GKE_DRAIN),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_node_gone_before_its_drain_bound_is_reported(case: Case) -> None:
    now = [float(MARKED_AT)]
    events: list[EventSpec] = []
    metrics = Metrics()
    timer = DrainTimer(metrics, events.append, clock=lambda: now[0])
    timer.observe(report(case.victim, node("other"), pools=case.pools))
    now[0] += case.gone_after
    timer.observe(report(node("other"), complete=case.complete, pools=case.pools))

    warned = [e for e in events if e.reason == DELETED_BEFORE_DRAINED]
    assert bool(warned) is case.warned
    counted = metrics.registry.get_sample_value("lbhc_nodes_deleted_before_drained_total")
    assert counted == (1.0 if case.warned else 0.0)
    if case.warned:
        (event,) = warned
        assert event.regarding.name == "victim" and event.type == "Warning"
        assert "--node-delete-delay-after-taint=32s" in event.note
    observed = metrics.registry.get_sample_value("lbhc_node_drain_window_seconds_count")
    assert observed == case.windows


def test_a_mark_taken_back_is_forgotten() -> None:
    now = [float(MARKED_AT)]
    events: list[EventSpec] = []
    timer = DrainTimer(Metrics(), events.append, clock=lambda: now[0])
    timer.observe(report(TAINTED))
    timer.observe(report(node("victim")))  # the scale-down was aborted
    now[0] += 3
    timer.observe(report(node("other")))  # later deleted by someone else, unmarked
    assert events == []
