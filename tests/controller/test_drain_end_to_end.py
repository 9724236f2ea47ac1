"""End to end, nothing assumed: the controller attaches the shared check; the Compute fake's
prober probes each node's emulated kube-proxy over HTTP with that check's timings (time
scaled); a node tainted by the autoscaler turns UNHEALTHY in getHealth within interval x
unhealthyThreshold (+ one interval), while its /livez stays 200; untainted, it is HEALTHY
again."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cloud import COMPUTE_URL_PREFIX
from lbhc.planner.drain import DrainState
from lbhc.sandbox.compute_fake import HealthProber
from lbhc.sandbox.kube_proxy import KubeProxyFleet
from tests.builders import kube as kube_builders
from tests.controller.harness import PROJECT, REGION, world
from tests.waiting import wait_for

SCALE = 0.1  # 8 s becomes 0.8 s: the logic is GCE's, only the clock is faster
INTERVAL = 8 * SCALE
UNHEALTHY_THRESHOLD = 3
TAINT = "ToBeDeletedByClusterAutoscaler"


def instance(node: str) -> str:
    return f"{COMPUTE_URL_PREFIX}projects/{PROJECT}/zones/{REGION}-a/instances/{node}"


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_tainted_node_turns_unhealthy_in_the_lb_within_the_bound_and_recovers() -> None:
    with world() as w:
        for i in range(3):
            w.kube.upsert(kube_builders.kube_proxy_pod(f"node-{i}", version="v1.31.4", ready=True))
        pool = w.add_service("web")
        with (
            KubeProxyFleet(w.kube, port=0).start() as fleet,
            HealthProber(w.compute, fleet.endpoint_for_instance, time_scale=SCALE) as prober,
        ):
            app = w.start()
            gce = GceClient(GceClientConfig(project=PROJECT, region=REGION, endpoint=w.compute_url))

            def lb_state(node: str) -> str:
                (state,) = gce.get_health(pool, instance(node))
                return state

            wait_for(lambda: w.attached(pool), what="the check attached")
            for node in ("node-0", "node-1", "node-2"):
                wait_for(lambda n=node: lb_state(n) == "HEALTHY", what=f"{node} HEALTHY")  # type: ignore[misc]

            tainted_at = time.monotonic()
            w.kube.taint("node-1", TAINT, str(int(time.time())), "NoSchedule")
            wait_for(lambda: lb_state("node-1") == "UNHEALTHY", what="node-1 UNHEALTHY in the LB")
            went_down = [t for t, s in prober.transitions(instance("node-1")) if s == "UNHEALTHY"]
            drain_seconds = went_down[-1] - tainted_at
            # lbhc's drain bound is the upper one. Three failures take about two intervals
            # or more; the lower bound gets one interval of slack for a loaded machine.
            lower = (UNHEALTHY_THRESHOLD - 2) * INTERVAL
            assert lower <= drain_seconds <= (UNHEALTHY_THRESHOLD + 1) * INTERVAL
            assert lb_state("node-0") == "HEALTHY" and lb_state("node-2") == "HEALTHY"

            host, port = fleet.endpoint("node-1")  # type: ignore[misc]
            assert status_of(f"http://{host}:{port}/healthz") == 503
            assert status_of(f"http://{host}:{port}/livez") == 200  # readiness stays ready

            report = wait_for(
                lambda: (
                    app.controller
                    and app.controller.last_report
                    and {n.node: n.drain.state for n in app.controller.last_report.nodes}["node-1"]
                    is DrainState.DRAINING
                    and app.controller.last_report
                ),
                what="the controller reporting node-1 draining",
            )
            assert report.kube_proxy.healthy is True

            untainted_at = time.monotonic()
            w.kube.untaint("node-1", TAINT)
            wait_for(lambda: lb_state("node-1") == "HEALTHY", what="node-1 HEALTHY again")
            at, state = prober.transitions(instance("node-1"))[-1]
            # healthyThreshold 1: the first probe after the untaint, within one interval (+1).
            assert state == "HEALTHY" and at - untainted_at <= 2 * INTERVAL
