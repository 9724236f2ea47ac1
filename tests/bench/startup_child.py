"""Run by startup_bench in a fresh interpreter: `lbhc run`'s start-up, step by step, with
the time and RSS at each step. Prints one JSON object on stdout.

The steps follow what `lbhc run` does, in its order: import lbhc (the CLI, the controller,
pydantic, prometheus-client, google-api-core...); ControllerApp() builds the Kubernetes
client (the kubernetes package loads CoreV1Api/AppsV1Api on first use) and the GCE client
(google-cloud-compute, imported on first use); run() reads the kube-system UID, lists and
watches, and the controller's first pass reads GCE and plans. The GCE read is timed by
wrapping it, the caches' sync by a subclass that stamps it (instrumentation only, nothing
else changes); readiness and the first plan are polled every 2 ms.

Steps, each timed from the one before: interpreter (spawn to this module's first line),
import_lbhc (lbhc with pydantic, prometheus-client, google-api-core, requests),
import_kubernetes_apis, import_google_cloud_compute, build_app. Then, each timed from run()
starting, since they overlap (the first pass may start before the caches have synced):
caches_synced (kube-system UID; list Nodes, Services, kube-proxy Pods, DaemonSets),
first_gce_read (shared pair; every pool and forwarding rule), first_plan."""

from __future__ import annotations

import time

T0 = time.monotonic()  # as early as this interpreter can note anything

import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402


def _status() -> dict[str, float]:
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in ("VmRSS", "VmHWM"):
            values[key] = round(int(line.split()[1]) / 1024, 1)
    return values


def main(argv: list[str]) -> int:
    spawned_at, kube_host, compute_url = float(argv[0]), argv[1], argv[2]
    marks: list[dict[str, Any]] = []
    last = [spawned_at]

    def mark(step: str, at: float | None = None) -> None:
        now = time.monotonic() if at is None else at
        memory = _status()
        marks.append(
            {
                "step": step,
                "seconds": round(now - last[0], 3),
                "since_spawn": round(now - spawned_at, 3),
                "rss_mb": memory.get("VmRSS"),
            }
        )
        last[0] = now

    mark("interpreter", T0)
    import lbhc.cli
    import lbhc.cli.run  # noqa: F401
    from lbhc.controller.app import ControllerApp, RunOptions
    from tests.bench.world import settings

    mark("import_lbhc")
    from kubernetes import client

    client.CoreV1Api, client.AppsV1Api  # noqa: B018  -- what KubeApi's first use loads
    mark("import_kubernetes_apis")
    import google.cloud.compute_v1  # noqa: F401

    mark("import_google_cloud_compute")
    app = ControllerApp(
        settings(compute_url),
        RunOptions(
            leader_elect=False,
            identity="lbhc-startup",
            kube_host=kube_host,
            http_address="127.0.0.1:0",
            resync_period=3600.0,
        ),
    )
    mark("build_app")

    gce_read: dict[str, float] = {}
    read_snapshot = app.gce.read_snapshot

    def timed_read(name: str, **kwargs: Any) -> Any:
        gce_read["start"] = time.monotonic()
        try:
            return read_snapshot(name, **kwargs)
        finally:
            gce_read["end"] = time.monotonic()

    app.gce.read_snapshot = timed_read  # type: ignore[method-assign]
    import lbhc.controller.app as app_module

    stamps: dict[str, float] = {}

    class StampedCache(app_module.ClusterCache):
        def replace(self, *args: Any, **kwargs: Any) -> bool:  # whatever the cache takes
            changed = super().replace(*args, **kwargs)
            if "synced" not in stamps and self.synced():
                stamps["synced"] = time.monotonic()
            return changed

    app_module.ClusterCache = StampedCache  # type: ignore[misc]
    thread = threading.Thread(target=app.run, daemon=True)
    run_started = time.monotonic()
    thread.start()
    ready = planned = None
    deadline = time.monotonic() + float(argv[3])
    while planned is None and time.monotonic() < deadline:
        now = time.monotonic()
        if ready is None and app.ready()[0]:
            ready = now
        if app.controller is not None and app.controller.last_plan is not None:
            planned = now
        time.sleep(0.002)
    # These happen concurrently (the first pass may start before the caches have synced):
    # each is timed from run() starting, not from the step before.
    for step, at in (
        ("caches_synced", stamps.get("synced")),
        ("first_gce_read", gce_read.get("end")),
        ("first_plan", planned),
    ):
        if at is not None:
            last[0] = run_started
            mark(step, at)
    peak = _status().get("VmHWM")
    app.stop()
    thread.join(timeout=30)
    print(
        json.dumps(
            {
                "steps": marks,
                "ready_since_spawn": None if ready is None else round(ready - spawned_at, 3),
                "planned_since_spawn": None if planned is None else round(planned - spawned_at, 3),
                "gce_read_seconds": round(gce_read["end"] - gce_read["start"], 3)
                if "end" in gce_read
                else None,
                "peak_rss_mb": peak,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
