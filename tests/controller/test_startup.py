"""Start-up order: no pass (and so no GCE read) before the planning caches have synced, as
informers' WaitForCacheSync; and a replica that reads GCE is ready only once it has."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

from lbhc.controller.app import ControllerApp
from lbhc.controller.controller import Controller, ControllerOptions
from lbhc.controller.events import ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.controller.trigger import Trigger
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.kube.cache import ClusterCache
from lbhc.planner.config import PlannerConfig
from tests.controller.harness import World, world
from tests.waiting import wait_for


def readyz(app_url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{app_url}/readyz", timeout=5) as response:
            return response.status, response.read().decode().strip()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode().strip()


def view_gaps(app: ControllerApp) -> float:
    url = wait_for(lambda: app.http and app.http.url, what="the HTTP server")
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        text = response.read().decode()
    [line] = [x for x in text.splitlines() if x.startswith("lbhc_view_gaps ")]
    return float(line.split()[1])


def failed_pod_lists(w: World) -> int:
    return sum(1 for e in w.kube.journal if e.path.endswith("/pods") and e.status >= 500)


def test_no_gce_read_before_the_caches_have_synced() -> None:
    with world() as w:
        pool = w.add_service("web")
        w.kube.faults.fail_requests(times=3, status=500, path_contains="/pods")
        # One selector needs no detection list at startup, so the failures land on the
        # Pod reflector while the other stores sync.
        app = w.start(settings={"kube_proxy_selector": "k8s-app=kube-proxy"})
        # The reflector retries with backoff; by its third failure the other lists have
        # long landed, so a pass that did not wait would have read GCE by now.
        wait_for(lambda: failed_pod_lists(w) >= 3, timeout=20, what="three failed pod lists")
        assert app.cache is not None and not app.cache.synced()
        assert w.compute.journal == [], "GCE was read before the caches had synced"
        assert view_gaps(app) == 1  # the kube-proxy Pods, exported as they are now
        wait_for(lambda: w.attached(pool), timeout=20, what="convergence once pods list")
        reads = [e for e in w.compute.journal if e.path.endswith("/targetPools")]
        assert len(reads) == 1, "one pass after the sync, not one per store"
        assert view_gaps(app) == 0


def test_ready_only_after_the_first_gce_read() -> None:
    with world() as w:
        pool = w.add_service("web")
        w.compute.faults.latency(1.5)  # every GCE request is slow: the first read takes a while
        app = w.start()
        url = wait_for(lambda: app.http and app.http.url, what="the HTTP server")
        assert wait_for(
            lambda: readyz(url) == (503, "first GCE read pending"),
            timeout=20,
            what="synced caches, GCE read still under way",
        )
        w.compute.faults.latency(0)
        wait_for(lambda: readyz(url) == (200, "ok"), timeout=20, what="ready after the read")
        wait_for(lambda: w.attached(pool), timeout=20, what="convergence")


class CountingTrigger(Trigger):
    """Records how often the loop waits: a loop that spins waits thousands of times."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float, coalesce: float = 0.05) -> list[str]:
        self.waits += 1
        return super().wait(timeout, coalesce)


def test_the_loop_sleeps_while_the_caches_sync() -> None:
    cache = ClusterCache("uid")  # never synced: no reflector feeds it
    trigger = CountingTrigger()
    gce = GceClient(GceClientConfig(project="p", region="r", endpoint="http://127.0.0.1:9"))
    controller = Controller(
        PlannerConfig(project="p", region="r", node_tags=("t",)),
        cache,
        gce,
        trigger,
        Metrics(),
        None,
        ObjectRef("Lease", "lbhc", "lbhc-system"),
        ControllerOptions(resync_period=0.0),  # a resync always due
    )
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    wait_for(lambda: trigger.waits >= 1, what="the loop's first wait")
    stop.wait(1.5)
    stop.set()
    trigger.close()
    thread.join(5)
    assert trigger.waits <= 4, f"{trigger.waits} waits in 1.5 s: the loop spins"
    assert controller.passes == 0
