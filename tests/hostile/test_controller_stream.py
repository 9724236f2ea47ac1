"""A stream of random hostile (but API-admissible) Nodes, Services and kube-proxy Pods,
written into the kube fake while the real controller watches: every pass completes (none
fails, nothing logs an error), and once the hostile objects are gone the good Services are
attached again. Short in make test; `pytest --chaos tests/hostile` streams many more."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from lbhc.model.cluster import Service
from lbhc.planner.names import target_pool_name
from tests.chaos.record import record
from tests.controller.harness import PROJECT, REGION, World, node_obj, world
from tests.hostile.strategies import raw_node, raw_pod, raw_service
from tests.waiting import wait_for
from tests.worlds import make_load_balancer

STEPS = {"short": 12, "full": 30}
RUNS = {"short": 1, "full": 60}
CONVERGE_SEC = 90.0


def write(w: World, kind: str, obj: dict[str, Any]) -> None:
    if kind == "Service":
        obj["metadata"].pop("uid", None)  # the API assigns it (odd UIDs: the other suite)
        svc = Service.model_validate(w.kube.upsert(obj))
        pools = w.compute.target_pools(PROJECT, REGION)
        if (
            svc.spec.type == "LoadBalancer"
            and svc.spec.load_balancer_class is None
            and target_pool_name(svc.metadata.uid) not in pools  # an update of a Service
        ):
            make_load_balancer(w.kube, w.compute, svc)
    else:
        w.kube.upsert(obj)


def restore(w: World, good_nodes: set[str]) -> None:
    """The hostile objects go; the good nodes are written back plain."""
    for obj in w.kube.objects("Node"):
        name = obj["metadata"]["name"]
        if name not in good_nodes:
            w.kube.delete("Node", None, name)
    for name in good_nodes:
        w.kube.upsert(node_obj(name))
    for pod in w.kube.objects("Pod"):
        w.kube.delete("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])


def stream_once(data: st.DataObject, steps: int, caplog: pytest.LogCaptureFixture) -> Counter[str]:
    caplog.clear()
    seen: Counter[str] = Counter()
    with world() as w:
        good_nodes = {n["metadata"]["name"] for n in w.kube.objects("Node")}
        good = [w.add_service(f"good-{i}") for i in range(2)]
        app = w.start()
        wait_for(lambda: all(w.attached(p) for p in good), timeout=CONVERGE_SEC, what="start")
        kinds = {"Node": raw_node(), "Service": raw_service(), "Pod": raw_pod()}
        for _ in range(steps):
            kind = data.draw(st.sampled_from(sorted(kinds)))
            write(w, kind, data.draw(kinds[kind]))
            seen[kind] += 1
        passes = app.controller.passes if app.controller else 0
        wait_for(
            lambda: app.controller is not None and app.controller.passes > passes,
            timeout=CONVERGE_SEC,
            what="a pass over the hostile objects",
        )
        restore(w, good_nodes)
        wait_for(
            lambda: all(w.attached(p) for p in good),
            timeout=CONVERGE_SEC,
            what="the good Services attached once the hostile objects are gone",
        )
        seen["passes"] = app.controller.passes if app.controller else 0
    failures = [r.getMessage() for r in caplog.records if "reconcile failed" in r.getMessage()]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert failures == [] and errors == [], (failures[:3], errors[:3])
    return seen


@pytest.mark.parametrize("scale", ["short", pytest.param("full", marks=pytest.mark.chaos)])
def test_a_stream_of_hostile_objects_never_fails_a_pass(
    scale: str, chaos_scale: str, caplog: pytest.LogCaptureFixture
) -> None:
    if scale != chaos_scale:
        pytest.skip(
            f"the {scale} run belongs to {'make chaos' if scale == 'full' else 'make test'}"
        )
    caplog.set_level(logging.WARNING)
    totals: Counter[str] = Counter()

    @settings(
        max_examples=RUNS[scale],
        derandomize=scale == "short",
        database=None,
        deadline=None,
        phases=[Phase.generate],  # a failing stream is reported as is: no slow shrinking
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        totals.update(stream_once(data, STEPS[scale], caplog))
        totals["runs"] += 1

    run()
    record("hostile-input", f"controller-stream-{scale}", **totals)
    assert totals["runs"] >= 1
