"""The world the Kubernetes-API fault cases run in: a converged controller (tests/controller
harness: both fakes over HTTP), the changes a fault must not hide for ever, a monitor of the
controller's view, and the bounds the cases wait within, derived from lbhc's own settings.

Each case changes the cluster while its fault lasts, in ways that call for each kind of
mutation: a Service flipped to Local and one deleted (its cleanup finalizer holds it) call for
detaches; a new Service and a Local one flipped to Cluster call for attaches. None of it may be
acted on with an incomplete view (removals), and all of it must be once the API is back.
"""

from __future__ import annotations

import inspect
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from lbhc.controller.app import ControllerApp
from lbhc.controller.backoff import Backoff
from lbhc.kube.cache import PLANNING_RESOURCES
from lbhc.kube.client import KubeConfig
from lbhc.sandbox.compute_fake.journal import JournalEntry
from tests.builders import kube as kube_builders
from tests.controller.harness import World
from tests.worlds import add_load_balanced_service

CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
RESYNC_SEC = 0.5  # passes keep running through every fault: a partial view gets its chance
SLACK_SEC = 20.0  # a shared, loaded 2-core machine: threads can wait seconds for the GIL


def _default(parameter: str) -> float:
    value: float = inspect.signature(Backoff).parameters[parameter].default
    return value


# The reflector's retry backoff (lbhc.controller.backoff.Backoff's defaults).
REFLECTOR_BACKOFF_INITIAL = _default("initial")
REFLECTOR_BACKOFF_MAX = _default("maximum")
KUBE_TIMEOUTS = KubeConfig()  # the read timeouts lbhc runs with (RunOptions cannot set them)


def reflector_wait_after(outage_sec: float) -> float:
    """The longest a reflector can still be backing off when a fault of `outage_sec` ends:
    its ceiling doubles per failure and each wait is at least half the ceiling, so the
    ceiling is at most twice the time spent failing plus the initial delay."""
    return min(REFLECTOR_BACKOFF_MAX, 2 * outage_sec + REFLECTOR_BACKOFF_INITIAL)


def recovery_bound(app: ControllerApp, fault_sec: float, mutations: int, extra: float = 0) -> float:
    """How long after a fault ends every change made during it must be applied: the
    reflector's backoff, a relist and watch, one resync, the mutations at the configured
    pace (each may back off once), plus `extra` (a read timeout the fault runs into)."""
    settings = app.settings
    pace = mutations / settings.gce.mutations_per_second
    return (
        reflector_wait_after(fault_sec)
        + app.options.resync_period
        + pace
        + mutations * settings.gce.backoff_max_sec / max(settings.gce.max_concurrent_pool_calls, 1)
        + extra
        + SLACK_SEC
    )


# -- the view, as the controller's cache vouches for it ---------------------------------------


def has_gap(app: ControllerApp) -> bool:
    """The controller's view is incomplete: a planning store unsynced, relisting or
    disconnected (what makes the planner withhold removals)."""
    cache = app.cache
    if cache is None or not cache.synced():
        return True
    return any(cache.has_problem(resource) for resource in PLANNING_RESOURCES)


class GapMonitor:
    """Samples whether the controller's cache has a gap (a planning store unsynced,
    relisting or disconnected), for figures and to wait until it is fresh again."""

    def __init__(self, app: ControllerApp, every: float = 0.02) -> None:
        self._app = app
        self._every = every
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._gaps: list[list[float]] = []  # [start, end]; end == 0 while open
        self._low_water: dict[str, int] = {}  # fewest objects per store seen with no gap
        self._thread = threading.Thread(target=self._run, name="gap-monitor", daemon=True)

    def has_gap(self) -> bool:
        return has_gap(self._app)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            now, gap = time.monotonic(), self.has_gap()
            sizes = self._app.cache.sizes() if self._app.cache is not None and not gap else {}
            with self._lock:
                for store, size in sizes.items():
                    self._low_water[store] = min(self._low_water.get(store, size), size)
                open_ = bool(self._gaps) and self._gaps[-1][1] == 0
                if gap and not open_:
                    self._gaps.append([now, 0.0])
                elif not gap and open_:
                    self._gaps[-1][1] = now

    def start(self) -> GapMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def intervals(self, since: float = 0.0) -> list[tuple[float, float]]:
        """Observed gaps ending after `since` (an open one ends now)."""
        now = time.monotonic()
        with self._lock:
            spans = [(start, end or now) for start, end in self._gaps]
        return [(start, end) for start, end in spans if end >= since]

    def fresh_low_water(self, store: str) -> int | None:
        """The fewest objects `store` ("services", "nodes", ...) held while the view was
        complete: a truncated relist taken for the whole list would show here."""
        with self._lock:
            return self._low_water.get(store)

    def gap_seconds(self, since: float) -> float:
        return sum(end - max(start, since) for start, end in self.intervals(since))


@contextmanager
def monitored(app: ControllerApp) -> Iterator[GapMonitor]:
    monitor = GapMonitor(app).start()
    try:
        yield monitor
    finally:
        monitor.stop()


# -- mutations --------------------------------------------------------------------------------


def is_removal(entry: JournalEntry) -> bool:
    return entry.method == "DELETE" or entry.path.endswith("/removeHealthCheck")


def pool_of(entry: JournalEntry) -> str:
    """The target pool an attach or detach names ("" for other mutations)."""
    parts = entry.path.split("/")
    return parts[-2] if "targetPools" in parts and len(parts) >= 2 else ""


def metric(app: ControllerApp, name: str, **labels: str) -> float:
    """One sample from the controller's /metrics, over HTTP as Prometheus reads it."""
    assert app.http is not None
    text = urllib.request.urlopen(f"{app.http.url}/metrics", timeout=5).read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


# -- the cluster and its changes --------------------------------------------------------------


def add_service(
    w: World,
    name: str,
    policy: str = "Cluster",
    finalizer: bool = False,
    namespace: str = "default",
) -> str:
    """A LoadBalancer Service and its LB as the cloud provider makes them; with `finalizer`
    it carries the provider's cleanup finalizer, so deleting it leaves it terminating."""
    tweaks = [kube_builders.with_finalizers(CLEANUP_FINALIZER)] if finalizer else []
    obj = kube_builders.service(name, *tweaks, namespace=namespace, policy=policy)
    return add_load_balanced_service(w.kube, w.compute, obj)


@dataclass
class Changes:
    """The changes made while a fault lasts, and what each calls for once it is seen."""

    flipped: str  # pool of a Cluster Service flipped to Local: detach
    deleted: str  # pool of a Service deleted while its finalizer holds it: detach
    localled: str  # pool of a Local Service flipped to Cluster: attach
    created: str = ""  # pool of a Service created during the fault: attach
    made_at: float = 0.0

    @property
    def detached(self) -> set[str]:
        return {self.flipped, self.deleted}

    @property
    def attached(self) -> set[str]:
        return {self.localled, self.created} - {""}


@dataclass
class Cluster:
    """Services before the fault: `steady` pools stay attached throughout."""

    w: World
    steady: list[str]
    changes: Changes
    names: dict[str, str] = field(default_factory=dict)  # pool -> Service name

    def make_changes(self) -> None:
        """What the fault must not hide for ever (and must not let be half-seen)."""
        self.changes.made_at = time.monotonic()
        kube = self.w.kube
        kube.patch("Service", "default", "flip", {"spec": {"externalTrafficPolicy": "Local"}})
        kube.delete("Service", "default", "gone")
        kube.patch("Service", "default", "local", {"spec": {"externalTrafficPolicy": "Cluster"}})
        self.changes.created = add_service(self.w, "created")
        self.names[self.changes.created] = "created"

    def unmet(self) -> list[str]:
        """What the end state still lacks (empty once every change has been applied)."""
        missing = [
            f"{self.names.get(p, p)} not attached"
            for p in (*self.steady, *self.changes.attached)
            if not self.w.attached(p)
        ]
        missing += [
            f"{self.names.get(p, p)} still attached"
            for p in self.changes.detached
            if self.w.pool_checks(p)
        ]
        return missing

    def false_removals(self, mutations: list[JournalEntry]) -> list[JournalEntry]:
        """Removals no change called for: a pool that should have kept the check, or a
        delete of the shared check or firewall while Services still want them."""
        return [m for m in mutations if is_removal(m) and pool_of(m) not in self.changes.detached]


def seed_cluster(w: World, steady: int) -> Cluster:
    steady_pools = [add_service(w, f"svc-{i}") for i in range(steady)]
    changes = Changes(
        flipped=add_service(w, "flip"),
        deleted=add_service(w, "gone", finalizer=True),
        localled=add_service(w, "local", policy="Local"),
    )
    names = {p: f"svc-{i}" for i, p in enumerate(steady_pools)}
    names.update({changes.flipped: "flip", changes.deleted: "gone", changes.localled: "local"})
    return Cluster(w, steady_pools, changes, names)


def force_relist(w: World) -> None:
    """History the reflectors would resume from is gone: their next watch gets 410 (in the
    stream) and they relist. A write first, so every reflector's version is older than the
    compaction."""
    w.kube.upsert(kube_builders.namespace("bump"))
    w.kube.compact()
    w.kube.faults.drop_watches()
