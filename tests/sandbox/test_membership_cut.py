"""The membership cut, end to end: today's cloud provider takes a tainted node out of its
target pools on the next node sync (a node added), abruptly, since a target pool has no
connection draining. lbhc's controller, reading GCE's own view within its budget, sees the
node still in the pools after the taint, then out of them: getHealth refuses it, the pool's
instance list confirms, the node is `not-applicable` and verified, and a cut before the drain
bound is a CutBeforeDrained Event on the Node. Real HTTP everywhere; the real `lbhc run` code."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lbhc.controller.app import ControllerApp, RunOptions
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.planner.drain import DrainState, NodeDrain
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node, node_name
from lbhc.settings import load_settings
from tests.waiting import wait_for

SPEC = SandboxSpec(nodes=3, services=2, local_services=0, cloud_provider="current")
VICTIM = node_name(1)
TAINT = "ToBeDeletedByClusterAutoscaler"


@pytest.fixture
def running() -> Iterator[tuple[Sandbox, ControllerApp]]:
    with Sandbox(SandboxOptions(spec=SPEC, time_scale=0.25, operation_latency=0.0)) as sandbox:
        settings = load_settings(
            project=SPEC.project,
            region=SPEC.region,
            node_tags="gke-sandbox-node",
            gce_endpoint=sandbox.compute_url,
            kubeconfig=str(sandbox.kubeconfig),
            leader_elect=False,
        )
        app = ControllerApp(settings, RunOptions(identity="cut-test", http_address="127.0.0.1:0"))
        thread = threading.Thread(target=app.run, daemon=True)
        thread.start()
        try:
            yield sandbox, app
        finally:
            app.stop()
            thread.join(10)


def victim_drain(app: ControllerApp) -> NodeDrain | None:
    report = app.controller.last_report if app.controller else None
    if report is None:
        return None
    return next((n.drain for n in report.nodes if n.node == VICTIM), None)


def all_checked(sandbox: Sandbox) -> bool:
    pools = sandbox.compute.target_pools(SPEC.project, SPEC.region)
    return bool(pools) and all(pool.get("healthChecks") for pool in pools.values())


def lb_states(sandbox: Sandbox) -> set[str]:
    """What GCE's getHealth says of the victim in each pool holding it."""
    gce = GceClient(GceClientConfig(SPEC.project, SPEC.region, endpoint=sandbox.compute_url))
    pools = sandbox.compute.target_pools(SPEC.project, SPEC.region)
    states = set()
    for name, pool in pools.items():
        for url in pool.get("instances", []):
            if url.endswith(f"/{VICTIM}") and pool.get("healthChecks"):
                states |= set(gce.get_health(name, url))
    return states


def node_events(sandbox: Sandbox, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in sandbox.kube.objects("Event")
        if e.get("reason") == reason and (e.get("regarding") or {}).get("name") == VICTIM
    ]


def test_a_tainted_node_cut_by_the_next_node_sync_is_seen_out_of_its_pools(
    running: tuple[Sandbox, ControllerApp],
) -> None:
    sandbox, app = running
    wait_for(lambda: app.controller and app.controller.last_report, what="a first pass")
    # Converged (lbhc's check on the pool made without one), and the node HEALTHY in every
    # pool: a node GCE already calls UNHEALTHY gets no new connections to lose.
    wait_for(lambda: all_checked(sandbox), timeout=30, what="every pool carrying a check")
    wait_for(lambda: lb_states(sandbox) == {"HEALTHY"}, timeout=30, what="the node HEALTHY")
    tainted = int(time.time())  # the autoscaler's taint value: Unix seconds
    sandbox.kube.taint(VICTIM, TAINT, str(tainted), "NoSchedule")

    # No node sync yet: the taint alone moves no pool, and GCE answers for the node.
    def read_as_member() -> bool:
        assert app.controller is not None
        return any(
            r.node == VICTIM and r.at >= tainted and r.state.value in ("HEALTHY", "UNHEALTHY")
            for r in app.controller.verifier.view().readings.values()
        )

    wait_for(read_as_member, timeout=30, what="the controller's getHealth of the tainted node")
    assert sandbox.service_controller is not None and not sandbox.service_controller.cuts
    # At once, before the check can mark it UNHEALTHY (and before the controller reads it
    # again, 10 s on): a node joins, a node sync, the cut.
    sandbox.kube.upsert(node(SPEC, SPEC.nodes, "v1.31.4"))

    def let_go() -> NodeDrain | None:
        drain = victim_drain(app)
        return drain if drain is not None and drain.state is DrainState.NOT_APPLICABLE else None

    drain = wait_for(let_go, timeout=60, what="the tainted node seen out of every pool")
    assert drain is not None and drain.verified and "took it out" in drain.reason
    assert {c.node for c in sandbox.service_controller.cuts} == {VICTIM}
    # The cut came seconds after the taint, inside the checks' 32 s bound.
    events = wait_for(lambda: node_events(sandbox, "CutBeforeDrained"), timeout=10, what="event")
    assert "after it was marked for deletion" in events[0]["note"]
    assert not [
        r
        for r in app.controller.verifier.view().readings.values()
        if r.node == VICTIM and r.state.value == "UNHEALTHY"
    ]  # never drained before it was cut
    cut = app.metrics.registry.get_sample_value("lbhc_nodes_cut_before_drained_total")
    assert cut is not None and cut >= 1
