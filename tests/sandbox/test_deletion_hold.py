"""lbhc's deletion hold end to end, in the sandbox: the emulated cluster-autoscaler
(lbhc.sandbox.autoscaler, delay.go's handshake) scaling a node down at its 5 s default delete
delay, under client load through the emulated load-balancer data path; and a controller
killed mid-hold, which must leave the node deletable within the autoscaler's timeout."""

from __future__ import annotations

import threading
from pathlib import Path

from lbhc.demo.connections import ComparisonOptions, compare
from lbhc.planner.hold import HOLD_ANNOTATION
from lbhc.sandbox.autoscaler import (
    DEFAULT_DELETE_DELAY_SEC,
    DEFAULT_NODE_DELETION_DELAY_TIMEOUT_SEC,
    DELAY_DELETION_POLL_SEC,
    ScaleDown,
    ScaleDownTimes,
)
from lbhc.sandbox.loadgen import LoadSpec
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node_name
from tests.chaos.process import ProcessGroup, RunFlags
from tests.waiting import wait_for

SCALE = 0.25  # the sandbox's health checking and the autoscaler's clock, as in the demo


def test_a_held_node_goes_once_gce_calls_it_unhealthy_and_no_new_connection_fails() -> None:
    runs = compare(
        ComparisonOptions(
            time_scale=SCALE,
            load=LoadSpec(rate_per_sec=10, duration_sec=1, long_lived=2),
            delays=(),
            hold_delays=(DEFAULT_DELETE_DELAY_SEC,),
        )
    )
    assert [run.name for run in runs] == ["upstream-delay-5s-hold", "with-lbhc-delay-5s-hold"]
    for run in runs:
        assert run.counts.attempted > 0, run.name
        assert run.counts.failed == 0, (run.name, run.counts)
    times = runs[0].scale_down
    assert times is not None and times.vm_deleted is not None and times.node_deleted is not None
    # The autoscaler found lbhc's annotation, waited, and found it gone before its timeout:
    # lbhc released the node, on GCE's word that it was UNHEALTHY everywhere.
    assert times.held_until is not None and not times.hold_timed_out
    assert times.held_until - times.tainted < DEFAULT_NODE_DELETION_DELAY_TIMEOUT_SEC * SCALE
    assert times.tainted + DEFAULT_DELETE_DELAY_SEC * SCALE <= times.held_until
    assert times.held_until <= times.vm_deleted < times.node_deleted
    assert runs[0].released.startswith("released: unhealthy in every load balancer after ")


def test_a_controller_killed_mid_hold_leaves_the_node_deletable_within_the_timeout(
    tmp_path: Path,
) -> None:
    """SIGKILL leaves lbhc's annotation on every node it held: the autoscaler waits out its
    --node-deletion-delay-timeout, then deletes anyway. The hold delays the node; it never
    keeps it."""
    spec = SandboxSpec(nodes=3, services=1, local_services=0, backend_service_lbs=False)
    options = SandboxOptions(spec=spec, time_scale=SCALE, kube_proxy_port=0)
    timeout = 20.0  # --node-deletion-delay-timeout, shortened (x SCALE: 5 s)
    with Sandbox(options) as sandbox:
        kubeconfig = sandbox.kubeconfig
        with ProcessGroup(tmp_path, kubeconfig, sandbox.compute_url) as group:
            flags = RunFlags(
                spec.project,
                spec.region,
                node_tags="gke-sandbox-node",
                leader_elect=False,
                settings={"LBHC_HOLD_DELETION": "on"},
            )
            lbhc = group.start("lbhc-hold", flags)
            wait_for(
                lambda: all(
                    HOLD_ANNOTATION in annotations(n) for n in sandbox.kube.objects("Node")
                ),
                timeout=60,
                what=f"lbhc's hold on every node; its log:\n{lbhc.log_tail()}",
            )
            # GET /plan says the same, node by node, as the controller decided it.
            wait_for(
                lambda: ((lbhc.last_plan() or {}).get("holds") or {}).get("holds") == 3,
                timeout=30,
                what="GET /plan's holds",
            )
            holds = (lbhc.last_plan() or {})["holds"]["nodes"]
            assert {h["state"] for h in holds} == {"held"}, holds
            lbhc.kill9()
        victim = node_name(1)
        scaler = ScaleDown(
            sandbox.kube, sandbox.delete_vm, time_scale=SCALE, node_deletion_delay_timeout=timeout
        )
        done: list[ScaleDownTimes] = []
        thread = threading.Thread(target=lambda: done.append(scaler.run(victim)), daemon=True)
        thread.start()
        thread.join(60)
        scaler.stop()
        assert done, "the scale-down did not finish"
        times = done[0]
        assert times.hold_timed_out and times.vm_deleted is not None
        assert sandbox.kube.get("Node", None, victim) is None
        # Deleted once the delete delay and the timeout (polled every 5 s) had passed.
        waited = times.vm_deleted - times.tainted
        least = (DEFAULT_DELETE_DELAY_SEC + timeout) * SCALE
        assert least <= waited <= least + DELAY_DELETION_POLL_SEC * SCALE + 2.0


def annotations(node: dict[str, object]) -> dict[str, str]:
    metadata = node.get("metadata")
    found = metadata.get("annotations") if isinstance(metadata, dict) else None
    return found if isinstance(found, dict) else {}
