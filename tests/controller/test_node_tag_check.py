"""At start the controller reads a few nodes' VMs and says when none carries a tag of
gce.node_tags: the firewall rule would otherwise admit Google's probes to no node, which
shows only later as every pool failing open."""

from __future__ import annotations

import pytest

from lbhc.controller.app import ControllerApp
from tests.builders import PROJECT, REGION
from tests.controller.harness import NODE_TAG, world
from tests.waiting import wait_for


def unmatched(app: ControllerApp) -> float | None:
    return app.metrics.registry.get_sample_value("lbhc_node_tags_unmatched")


@pytest.mark.parametrize(
    ("vm_tags", "expected"),
    [((NODE_TAG, "other"), 0.0), (("gke-prod-1a2b3c4d-node",), 1.0), ((), 1.0)],
    ids=["carried", "another-tag", "untagged"],
)
def test_the_nodes_vms_are_read_once_and_a_wrong_tag_is_said(
    vm_tags: tuple[str, ...], expected: float
) -> None:
    with world() as w:
        for i in range(3):
            w.compute.add_instance(PROJECT, f"{REGION}-a", f"node-{i}", tags=vm_tags)
        w.add_service("web")
        app = w.start()
        wait_for(
            lambda: app.controller is not None and app.controller.node_tags.done,
            what="the node-tag check",
        )
        assert unmatched(app) == expected
        events = w.events("NodeTagsMatchNoNode")
        if expected:
            [event] = wait_for(lambda: w.events("NodeTagsMatchNoNode"), what="the Event")
            assert event["type"] == "Warning"
            assert f"gce.node_tags ({NODE_TAG})" in event["note"]
        else:
            assert events == []
        reads = [e for e in w.compute.journal if "/instances/" in e.path]
        assert len(reads) == 3 and all(e.method == "GET" for e in reads)
        app.trigger.fire("again")
        wait_for(lambda: app.controller is not None and app.controller.passes >= 2, what="pass 2")
        assert len([e for e in w.compute.journal if "/instances/" in e.path]) == 3  # once


def test_vms_that_cannot_be_found_give_no_verdict() -> None:
    """The harness's nodes are pool URLs without seeded VMs: 404, nothing to compare."""
    with world() as w:
        pool = w.add_service("web")
        app = w.start()
        wait_for(lambda: w.attached(pool), what="convergence")
        wait_for(
            lambda: app.controller is not None and app.controller.node_tags.done,
            what="the node-tag check",
        )
        assert unmatched(app) == 0
        assert w.events("NodeTagsMatchNoNode") == []
