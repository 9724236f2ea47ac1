"""The real controller (`lbhc run`'s ControllerApp) in a thread of the benchmark process,
pointed at a FakeWorld, with what the benchmarks read off it: passes completed (from its
own metrics), each pass's timing and plan, when its caches synced and when its first GCE
read returned."""

from __future__ import annotations

import threading
import time
from typing import Any

import lbhc.controller.app as app_module
from lbhc.controller.app import ControllerApp, RunOptions
from lbhc.controller.controller import Controller
from lbhc.kube.cache import ClusterCache
from lbhc.model.plan import Plan
from tests.bench.world import FakeWorld, settings

IDENTITY = "lbhc-bench"


def warm_imports() -> None:
    """Import what the controller imports lazily (google-cloud-compute; the kubernetes
    client's API modules, loaded on first attribute access), so a benchmark that times the
    controller does not time imports: those are scenario 7's (startup_bench)."""
    import google.cloud.compute_v1  # noqa: F401
    from kubernetes import client

    client.CoreV1Api, client.AppsV1Api  # noqa: B018  -- the access is the import


RESULTS = ("ok", "partial", "error")


class BenchController:
    def __init__(
        self,
        world: FakeWorld,
        overrides: dict[str, Any] | None = None,
        *,
        identity: str = IDENTITY,
        resync_period: float = 3600.0,
    ) -> None:
        self.settings = settings(world.compute_url, **(overrides or {}))
        self.options = RunOptions(
            leader_elect=False,
            identity=identity,
            kube_host=world.kube_url,
            http_address="127.0.0.1:0",
            resync_period=resync_period,  # passes come from events and from the benchmark
            watch_timeout_sec=300,
        )
        self.app: ControllerApp | None = None
        self._thread: threading.Thread | None = None
        self.started_at = 0.0
        self.synced_at: float | None = None  # every planning cache listed at least once
        self.first_gce_read_at: float | None = None  # the first GCE read returned
        self.in_pass = False
        self.pass_log: list[dict[str, Any]] = []  # every pass: start, end, thread CPU, reasons

    def start(self) -> ControllerApp:
        """Builds and runs the app; `started_at` is taken before it is built. The app's
        controller and cache are built from instrumented subclasses (measurement only: each
        stamps when something happened, nothing else changes), so no moment is judged by
        polling a thread that a pass holding the GIL can starve."""
        self.started_at = time.monotonic()
        self.app = ControllerApp(self.settings, self.options)
        read_snapshot = self.app.gce.read_snapshot

        def timed_read(name: str, **kwargs: Any) -> Any:
            try:
                return read_snapshot(name, **kwargs)
            finally:
                if self.first_gce_read_at is None:
                    self.first_gce_read_at = time.monotonic()

        self.app.gce.read_snapshot = timed_read  # type: ignore[method-assign]
        app_module.Controller = self._controller_class()  # type: ignore[misc]
        app_module.ClusterCache = self._cache_class()  # type: ignore[misc]
        self._thread = threading.Thread(target=self.app.run, name="bench-controller", daemon=True)
        self._thread.start()
        return self.app

    def _controller_class(self) -> type[Controller]:
        bench = self

        class TimedController(Controller):
            def reconcile(self, reasons: list[str]) -> Plan | None:
                bench.in_pass = True
                start, cpu = time.monotonic(), time.thread_time()
                plan = None
                try:
                    plan = super().reconcile(reasons)
                    return plan
                finally:
                    bench.pass_log.append(
                        {
                            "start": start,
                            "end": time.monotonic(),
                            "thread_cpu": time.thread_time() - cpu,
                            "reasons": reasons[:3],
                            "changes": len(plan.changes) if plan is not None else None,
                            "warnings": list(plan.warnings)[:3] if plan is not None else [],
                        }
                    )
                    bench.in_pass = False

        return TimedController

    def _cache_class(self) -> type[ClusterCache]:
        bench = self

        class StampedCache(ClusterCache):
            def replace(self, *args: Any, **kwargs: Any) -> bool:  # whatever the cache takes
                changed = super().replace(*args, **kwargs)
                if bench.synced_at is None and self.synced():
                    bench.synced_at = time.monotonic()
                return changed

        return StampedCache

    def passes(self) -> int:
        """Reconcile passes finished, whatever their result."""
        assert self.app is not None
        registry = self.app.metrics.registry
        return int(
            sum(
                registry.get_sample_value("lbhc_reconciles_total", {"result": r}) or 0
                for r in RESULTS
            )
        )

    def wait_passes(self, count: int, timeout: float) -> float:
        """Block until `count` passes have finished; the monotonic time it happened."""
        deadline = time.monotonic() + timeout
        while self.passes() < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {count} reconcile passes after {timeout:.0f} s")
            time.sleep(0.005)
        return time.monotonic()

    def wait_idle(self, timeout: float, quiet: float = 0.3) -> None:
        """Until no pass runs and none is pending, seen so on every look for `quiet` seconds
        with no pass starting in between. Judged on observations only: a pass holding the
        GIL can keep this thread from looking at all for longer than `quiet`."""
        assert self.app is not None
        trigger = self.app.trigger
        deadline = time.monotonic() + timeout
        calm: tuple[float, int] | None = None  # (since, passes logged then)
        while True:
            now = time.monotonic()
            busy = self.in_pass or bool(trigger._pending)  # bench instrumentation reads it
            if busy or (calm is not None and len(self.pass_log) != calm[1]):
                calm = None
            elif calm is None:
                calm = (now, len(self.pass_log))
            elif now - calm[0] >= quiet:
                return
            if now > deadline:
                raise TimeoutError(f"the controller was still busy after {timeout:.0f} s")
            time.sleep(0.005)

    def resync(self, timeout: float) -> float:
        """Ask for one pass now (what the resync timer does); returns when it has finished.
        Call wait_idle() first, or a pass already under way would be counted instead."""
        assert self.app is not None
        before = self.passes()
        self.app.trigger.fire("periodic resync (benchmark)")
        return self.wait_passes(before + 1, timeout)

    def since_start(self, moment: float | None) -> float | None:
        return None if moment is None else round(moment - self.started_at, 3)

    def passes_summary(self) -> list[dict[str, Any]]:
        """Each pass so far: when it ran (seconds since start), why, what it planned."""
        return [
            {
                "start": self.since_start(p["start"]),
                "end": self.since_start(p["end"]),
                "reasons": p["reasons"],
                "changes": p["changes"],
                "warnings": p["warnings"],
            }
            for p in self.pass_log
        ]

    def stop(self) -> None:
        if self.app is not None:
            self.app.stop()
        if self._thread is not None:
            self._thread.join(timeout=30)
        app_module.Controller = Controller  # type: ignore[misc]
        app_module.ClusterCache = ClusterCache  # type: ignore[misc]
