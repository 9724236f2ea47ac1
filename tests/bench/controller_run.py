"""The real controller (`lbhc run`'s ControllerApp) in a thread of the benchmark process,
pointed at a FakeWorld, with what the benchmarks read off it: passes completed (from its
own metrics), and when its caches synced and its first plan was made."""

from __future__ import annotations

import threading
import time
from typing import Any

from lbhc.controller.app import ControllerApp, RunOptions
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
        self._watcher: threading.Thread | None = None
        self._done = threading.Event()
        self.started_at = 0.0
        self.synced_at: float | None = None
        self.first_plan_at: float | None = None
        self._instrumented = False
        self.in_pass = False
        self.pass_log: list[dict[str, Any]] = []  # every pass: start, end, thread CPU, reasons

    def _instrument(self, controller: Any) -> None:
        """Wrap the controller's reconcile to see when a pass runs (measurement only)."""
        reconcile = controller.reconcile

        def timed(reasons: list[str]) -> Any:
            self.in_pass = True
            start, cpu = time.monotonic(), time.thread_time()
            plan = None
            try:
                plan = reconcile(reasons)
                return plan
            finally:
                self.pass_log.append(
                    {
                        "start": start,
                        "end": time.monotonic(),
                        "thread_cpu": time.thread_time() - cpu,
                        "reasons": reasons[:3],
                        "changes": len(plan.changes) if plan is not None else None,
                        "withheld": len(plan.withheld) if plan is not None else None,
                        "warnings": list(plan.warnings)[:3] if plan is not None else [],
                    }
                )
                self.in_pass = False

        controller.reconcile = timed
        self._instrumented = True

    def start(self) -> ControllerApp:
        """Builds and runs the app; `started_at` is taken before it is built."""
        self.started_at = time.monotonic()
        self.app = ControllerApp(self.settings, self.options)
        self._thread = threading.Thread(target=self.app.run, name="bench-controller", daemon=True)
        self._thread.start()
        self._watcher = threading.Thread(target=self._watch, name="bench-milestones", daemon=True)
        self._watcher.start()
        return self.app

    def _watch(self) -> None:
        app = self.app
        assert app is not None
        while not self._done.is_set() and (self.synced_at is None or self.first_plan_at is None):
            now = time.monotonic()
            if app.controller is not None and not self._instrumented:
                self._instrument(app.controller)
            if self.synced_at is None and app.cache is not None and app.cache.synced():
                self.synced_at = now
            if self.first_plan_at is None and app.controller and app.controller.last_plan:
                self.first_plan_at = now
            time.sleep(0.005)

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
        """Until no pass runs and none is pending, for `quiet` seconds on end."""
        assert self.app is not None
        trigger = self.app.trigger
        deadline = time.monotonic() + timeout
        calm_since = time.monotonic()
        while time.monotonic() - calm_since < quiet:
            if self.in_pass or trigger._pending:  # bench instrumentation reads the queue
                calm_since = time.monotonic()
            if time.monotonic() > deadline:
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
        self._done.set()
        if self.app is not None:
            self.app.stop()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._watcher is not None:
            self._watcher.join(timeout=5)
