"""The emulated scale-down keeps upstream's order and delays: taint, the delete delay, the VM
deleted, then the Node object one lifecycle-controller period later."""

from __future__ import annotations

import threading

import pytest

from lbhc.sandbox.autoscaler import TO_BE_DELETED_TAINT, ScaleDown
from lbhc.sandbox.kube_fake import KubeFake
from tests.builders import kube as kube_builders


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
    assert times.vm_deleted - times.tainted >= delete_delay * time_scale
    assert times.node_deleted - times.vm_deleted >= monitor * time_scale


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
