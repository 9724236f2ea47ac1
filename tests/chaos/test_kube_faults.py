"""Kubernetes API faults against the real controller over HTTP: watch streams cut
between events and in the middle of one, 410 Gone on a watch and on a list's continue token,
lists and watches slower than lbhc's read timeouts (full run) or merely slow, empty answers,
and the API server down (503, connections reset, connections refused) for minutes (full run)
or seconds (make test).

Every case changes the cluster while its fault lasts (tests/chaos/kube_world.py: two changes
that call for detaches, two for attaches) and asserts: no detach or delete while the view is
incomplete (the fault's own window, plus every gap the controller's cache reported), no
removal that no change called for, the controller stays up and keeps passing, it reports the
gap, and every change is applied within a bound derived from lbhc's settings once the API is
back. Outages recover in two steps: Services and Nodes first, kube-proxy Pods later, and the
detaches wait for the Pods too (withheld, and counted in lbhc_withheld_changes).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pytest

from lbhc.controller.app import ControllerApp
from lbhc.sandbox.compute_fake.journal import JournalEntry
from tests.chaos.kube_burst import run_burst
from tests.chaos.kube_burst import unmet as burst_unmet
from tests.chaos.kube_world import (
    KUBE_TIMEOUTS,
    REFLECTOR_BACKOFF_INITIAL,
    RESYNC_SEC,
    Cluster,
    GapMonitor,
    force_relist,
    is_removal,
    metric,
    monitored,
    pool_of,
    recovery_bound,
    seed_cluster,
)
from tests.chaos.record import record
from tests.controller.harness import NAME, PROJECT, World, node_obj, world
from tests.waiting import seconds_until, wait_for

SERVICES = "/api/v1/services"
PODS = "/pods"
STEADY = 4  # Services that keep the check through everything


@dataclass
class FaultRun:
    w: World
    app: ControllerApp
    seconds: float  # how long the fault is held (0: it ends by itself)


Step = Callable[[FaultRun], None]


def _nothing(run: FaultRun) -> None:
    pass


def _silence_services(run: FaultRun) -> None:
    """The Services watch goes quiet, so the changes can only reach the controller through
    what the case does next (a relist), never through the stream they were made on."""
    run.w.kube.faults.stall_watches(1.0, path_contains=SERVICES)


@dataclass(frozen=True)
class KubeFault:
    name: str
    before: Step  # armed before the changes are made
    after: Step = _nothing  # right after the changes
    lift: Step = _nothing  # once `seconds` have passed
    seconds: tuple[float, float] = (0.0, 0.0)  # held in the short run, in the full run
    timeout: tuple[float, float] = (0.0, 0.0)  # a read timeout the controller runs into
    short: bool = False  # part of make test
    staggered: bool = False  # recovery leaves kube-proxy Pods unreadable for a while
    relists: bool = False  # the Services reflector must have relisted
    reported: bool = True  # the controller can tell (a stalled stream looks healthy)


def _cut(clean_end: bool) -> Step:
    def arm(run: FaultRun) -> None:
        run.w.kube.faults.cut_watch_events(path_contains=SERVICES, clean_end=clean_end)

    return arm


def _expire_watch_with_status(run: FaultRun) -> None:
    # Twice: once on the resume, once right after the relist (the reflector must not spin).
    run.w.kube.faults.fail_requests(times=2, status=410, path_contains=SERVICES, watch=True)
    run.w.kube.faults.drop_watches()


def _expire_continue(run: FaultRun) -> None:
    run.w.kube.faults.limit_page_size(2)  # every list has pages: continue tokens in play
    run.w.kube.faults.expire_continue_tokens(4)  # more than one list restart can absorb
    force_relist(run.w)


def _slow_relist(run: FaultRun) -> None:
    run.w.kube.faults.delay_requests(run.seconds, path_contains=SERVICES, watch=False)
    force_relist(run.w)


def _slow_watch(run: FaultRun) -> None:
    run.w.kube.faults.delay_requests(run.seconds, path_contains=SERVICES, watch=True)
    run.w.kube.faults.drop_watches()


def _stall(run: FaultRun) -> None:
    run.w.kube.faults.stall_watches(run.seconds, path_contains=SERVICES)


def _empty_lists(run: FaultRun) -> None:
    run.w.kube.faults.answer_empty(times=3, path_contains=SERVICES, watch=False)
    force_relist(run.w)


def _empty_object_list(run: FaultRun) -> None:
    faults = run.w.kube.faults
    faults.answer_empty(path_contains=SERVICES, body=b"{}", watch=False)
    # The resume (410) and the watch after the relist: the latter cannot mend it at once.
    faults.delay_requests(1.0, times=2, path_contains=SERVICES, watch=True)
    force_relist(run.w)


def _empty_watches(run: FaultRun) -> None:
    run.w.kube.faults.answer_empty(times=10**9, path_contains=SERVICES, watch=True)
    run.w.kube.faults.drop_watches()


def _outage(status: int | None) -> Step:
    def start(run: FaultRun) -> None:
        run.w.kube.faults.start_outage(status)

    return start


def _end_outage(run: FaultRun) -> None:
    run.w.kube.faults.end_outage()


def _refuse(run: FaultRun) -> None:
    run.w.kube_server.stop()


def _restart(run: FaultRun) -> None:
    run.w.kube_server = run.w.kube_server.restarted()


def _relist(run: FaultRun) -> None:
    force_relist(run.w)


def _clear(run: FaultRun) -> None:
    run.w.kube.faults.clear()


CASES = [
    KubeFault("watch-cut-mid-event", _cut(clean_end=False), short=True),
    KubeFault("watch-cut-mid-event-clean-end", _cut(clean_end=True)),
    KubeFault("watch-410-in-stream", _silence_services, _relist, short=True, relists=True),
    KubeFault("watch-410-status", _silence_services, _expire_watch_with_status, relists=True),
    KubeFault("list-continue-410", _silence_services, _expire_continue, short=True, relists=True),
    KubeFault(
        "relist-slow",
        _silence_services,
        _slow_relist,
        seconds=(2.0, 10.0),
        short=True,
        relists=True,
    ),
    KubeFault("watch-slow", _slow_watch, seconds=(2.0, 10.0)),
    KubeFault("watch-stalled", _stall, seconds=(2.0, 10.0), reported=False),
    # Full run only: each runs into one of the read timeouts lbhc's Kubernetes client has.
    KubeFault(
        "relist-slower-than-read-timeout",
        _silence_services,
        _slow_relist,
        seconds=(KUBE_TIMEOUTS.read_timeout_sec + 5,) * 2,
        timeout=(KUBE_TIMEOUTS.read_timeout_sec,) * 2,
        relists=True,
    ),
    KubeFault(
        "watch-slower-than-read-timeout",
        _slow_watch,
        seconds=(KUBE_TIMEOUTS.watch_read_timeout_sec + 5,) * 2,
        timeout=(KUBE_TIMEOUTS.watch_read_timeout_sec,) * 2,
    ),
    KubeFault(
        "watch-stalled-half-open",
        _stall,
        seconds=(KUBE_TIMEOUTS.watch_read_timeout_sec + 5,) * 2,
        timeout=(KUBE_TIMEOUTS.watch_read_timeout_sec,) * 2,
        reported=False,
    ),
    KubeFault("list-empty-body", _silence_services, _empty_lists, relists=True),
    KubeFault("list-empty-object", _silence_services, _empty_object_list, short=True),
    KubeFault("watch-ends-at-once-repeatedly", _empty_watches, lift=_clear, seconds=(2.0, 10.0)),
    KubeFault(
        "apiserver-503", _outage(503), lift=_end_outage, seconds=(3.0, 120.0), staggered=True
    ),
    KubeFault(
        "apiserver-connections-reset",
        _outage(None),
        lift=_end_outage,
        seconds=(3.0, 60.0),
        staggered=True,
    ),
    KubeFault(
        "apiserver-down-refused",
        _refuse,
        lift=_restart,
        seconds=(2.0, 150.0),
        short=True,
        staggered=True,
    ),
]


def _removals_inside(
    mutations: list[JournalEntry], windows: list[tuple[float, float]]
) -> list[JournalEntry]:
    return [m for m in mutations if is_removal(m) and any(a <= m.time <= b for a, b in windows)]


def _staggered_recovery(run: FaultRun, cluster: Cluster, monitor: GapMonitor) -> float:
    """Services and Nodes are back but kube-proxy Pods are not: the controller sees the
    changes, and must still withhold the detaches they call for, and say so."""
    app, w = run.app, run.w
    assert app.controller is not None and app.cache is not None

    def seen() -> bool:
        assert app.cache is not None
        services = {s.metadata.name: s for s in app.cache.snapshot().services}
        flip = services.get("flip")
        return flip is not None and flip.spec.external_traffic_policy == "Local"

    lifted = time.monotonic()
    wait_for(seen, timeout=recovery_bound(app, run.seconds, 0), what="the changes seen")
    seen_after = time.monotonic() - lifted
    passes = app.controller.passes
    wait_for(lambda: app.controller is not None and app.controller.passes >= passes + 2)
    assert monitor.has_gap(), "kube-proxy Pods are unreadable: the view cannot be complete"
    assert all(w.pool_checks(p) for p in cluster.changes.detached), "detached on a partial view"
    assert metric(app, "lbhc_withheld_changes") >= len(cluster.changes.detached)
    w.kube.faults.clear()
    return seen_after


@pytest.mark.parametrize("case", CASES, ids=lambda c: getattr(c, "name", ""))
def test_kube_fault_withholds_removals_and_misses_no_change(
    case: KubeFault, chaos_scale: str
) -> None:
    if chaos_scale == "short" and not case.short:
        pytest.skip("long reliability run: make chaos (pytest --chaos)")
    full = chaos_scale == "full"
    seconds, timeout = case.seconds[full], case.timeout[full]
    with world() as w:
        cluster = seed_cluster(w, STEADY)
        app = w.start(resync_period=RESYNC_SEC)
        attached_first = [*cluster.steady, cluster.changes.flipped, cluster.changes.deleted]
        wait_for(lambda: all(w.attached(p) for p in attached_first), what="convergence")
        with monitored(app) as monitor:
            wait_for(lambda: not monitor.has_gap(), what="a complete view before the fault")
            assert app.controller is not None
            run = FaultRun(w, app, seconds)
            services_before = len(cluster.steady) + 3
            passes, restarts = app.controller.passes, _restarts(app)
            kube_seen = len(w.kube.journal)
            started = time.monotonic()
            if case.staggered:  # Pods stay unreadable after the main fault is lifted
                w.kube.faults.fail_requests(times=10**9, status=503, path_contains=PODS)
            case.before(run)
            cluster.make_changes()
            case.after(run)
            # Until the controller can learn anything: the fault's end, or the read timeout
            # it runs into first. The fault lasts this long; there is nothing to wait on.
            hold = min(seconds, timeout) if timeout else seconds
            if hold:
                time.sleep(hold)
            lifted = time.monotonic()
            held_passes = app.controller.passes - passes
            case.lift(run)
            seen_after = _staggered_recovery(run, cluster, monitor) if case.staggered else None
            complete_from = time.monotonic() if (hold or case.staggered) else started
            bound = recovery_bound(app, hold, mutations=4, extra=seconds - hold)
            converged = seconds_until(lambda: not cluster.unmet(), bound)
            gaps = monitor.intervals(since=started)
            low_water = monitor.fresh_low_water("services")

        mutations = [m for m in w.mutations() if m.time >= started]
        during = _removals_inside(mutations, [(started, complete_from), *gaps])
        false = cluster.false_removals(mutations)
        journal = w.kube.journal[kube_seen:]
        relisted = any(e.path == SERVICES and "watch" not in e.query for e in journal)
        record(
            "kube-faults",
            case.name,
            trials=1,
            fault_seconds=seconds,
            held_seconds=round(lifted - started, 2),
            faulted_requests=sum(1 for e in journal if not 200 <= e.status < 300),
            incomplete_view_seconds=round(sum(b - a for a, b in gaps), 2),
            converge_seconds_after=None if converged is None else round(converged, 2),
            bound_seconds=round(bound, 1),
            removals_during_incomplete_view=len(during),
            false_removals=len(false),
            changes_missed=len(cluster.unmet()),
            passes_while_held=held_passes,
            requests_while_held=sum(1 for e in journal if e.time <= lifted),
            changes_seen_seconds_after=None if seen_after is None else round(seen_after, 2),
            fewest_services_in_complete_view=low_water,
            watch_restarts=_restarts(app) - restarts,
        )

        assert during == [], f"removed while the view was incomplete: {during}"
        assert false == [], f"removals no change called for: {false}"
        assert converged is not None, f"within {bound:.0f} s still: {cluster.unmet()}"
        assert w.threads[0].is_alive(), "the controller thread died"
        assert low_water is None or low_water >= services_before, "a partial list was applied"
        if hold >= 2 * RESYNC_SEC:
            assert held_passes >= 1, "no pass ran while the fault was held"
        if case.reported:
            assert _restarts(app) > restarts, "the broken watch was never reported"
        if case.relists:
            assert relisted, "the Services reflector never relisted"


def _watches_after(w: World, since: float) -> list[float]:
    return [
        e.time
        for e in w.kube.journal
        if e.path == SERVICES and "watch" in e.query and e.time > since
    ]


def _restarts(app: ControllerApp) -> float:
    return metric(app, "lbhc_watch_restarts_total", resource="services")


def test_a_burst_of_service_events_is_kept_up_with(chaos_scale: str) -> None:
    """10,000 Service events in the full run (500 in make test), faster than the watch
    cache keeps them: the controller relists as it must, coalesces passes, and ends with
    exactly the attachments the final Services call for."""
    services, events = (2_000, 10_000) if chaos_scale == "full" else (100, 500)
    with world() as w:
        app = w.start(resync_period=RESYNC_SEC, settings={"gce_mutations_per_second": 200})
        with monitored(app) as monitor:
            wait_for(lambda: not monitor.has_gap(), what="a complete view before the burst")
            assert app.controller is not None
            wait_for(lambda: app.controller is not None and app.controller.passes >= 1)
            w.kube.history_limit = events // 50  # the burst may outrun the watch cache window
            passes, kube_seen = app.controller.passes, len(w.kube.journal)
            burst = run_burst(w, services, events, random.Random(8))
            bound = (burst.ended - burst.started) + recovery_bound(app, 0, mutations=events)
            converged = seconds_until(lambda: not burst_unmet(w, burst), bound, every=0.5)
        missed = burst_unmet(w, burst)
        mutations = w.mutations()
        false = [m for m in mutations if is_removal(m) and pool_of(m) not in burst.ever_local]
        shared = (list(w.compute.http_health_checks(PROJECT)), list(w.compute.firewalls(PROJECT)))
        relists = sum(
            1 for e in w.kube.journal[kube_seen:] if e.path == SERVICES and "watch" not in e.query
        )
        record(
            "kube-faults",
            "service-event-burst",
            trials=1,
            services=services,
            events=events,
            events_written_seconds=round(burst.ended - burst.started, 2),
            converge_seconds_after=None if converged is None else round(converged, 2),
            bound_seconds=round(bound, 1),
            passes=app.controller.passes - passes,
            relists=relists,
            mutations=len(mutations),
            false_removals=len(false),
            changes_missed=len(missed),
        )
        assert converged is not None, f"within {bound:.0f} s, {len(missed)} Services unmet"
        assert false == [], f"detached pools whose Service was never Local: {false[:5]}"
        assert shared == ([NAME], [NAME]), "one shared check and one firewall, no duplicates"
        assert w.threads[0].is_alive()
        assert app.controller.passes - passes < events, "every event got a pass of its own"


def test_a_cut_after_a_healthy_watch_reconnects_at_the_initial_backoff() -> None:
    """A cut is a blind spell: after cuts that each followed a watch that worked, the next
    reconnect must not wait a ceiling grown over the earlier ones (once up to 30 s)."""
    cuts = 4
    with world() as w:
        pool = w.add_service("web")
        w.kube.bookmark_interval = 0.2  # a resumed watch proves itself within a fifth of a second
        app = w.start(resync_period=RESYNC_SEC)
        wait_for(lambda: w.attached(pool), what="convergence")
        with monitored(app) as monitor:
            delays: list[float] = []
            for _ in range(cuts):
                wait_for(lambda: not monitor.has_gap(), timeout=60, what="a healthy watch")
                cut = time.monotonic()
                w.kube.faults.drop_watches()
                resumed = wait_for(partial(_watches_after, w, cut), 60, "the watch resumed")
                delays.append(resumed[0] - cut)
        # Every cut follows a watch that worked: each should wait the initial backoff only.
        allowed = 3 * REFLECTOR_BACKOFF_INITIAL
        assert delays[-1] <= allowed, f"reconnect delays {delays} (at most {allowed} s each)"


# -- found by these tests: product bugs, fixed since --------------------------------------------


def test_a_watch_that_ends_at_once_is_retried_with_backoff() -> None:
    held = 2.0
    with world() as w:
        pool = w.add_service("web")
        app = w.start(resync_period=RESYNC_SEC)
        wait_for(lambda: w.attached(pool), what="convergence")
        w.kube.faults.answer_empty(times=10**9, path_contains=SERVICES, watch=True)
        w.kube.faults.drop_watches()
        started = time.monotonic()
        time.sleep(held)  # the fault is held this long
        w.kube.faults.clear()
        watches = [
            e
            for e in w.kube.journal
            if e.path == SERVICES and "watch" in e.query and started <= e.time <= started + held
        ]
        wait_for(lambda: metric(app, "lbhc_watch_restarts_total", resource="services") >= 1)
        # Each retry waits at least half the initial backoff (full jitter over the ceiling).
        allowed = 2 + held / (REFLECTOR_BACKOFF_INITIAL / 2)
        assert len(watches) <= allowed, f"{len(watches)} watches in {held} s (at most {allowed})"


def test_an_empty_object_for_a_node_list_does_not_end_fallback() -> None:
    with world() as w:
        pools = [w.add_service(f"svc-{i}") for i in range(2)]
        w.kube.upsert(node_obj("ancient", kubelet="v1.6.13"))  # its kube-proxy lacks /healthz
        app = w.start(resync_period=RESYNC_SEC)
        wait_for(
            lambda: (
                app.controller is not None
                and app.controller.last_plan is not None
                and app.controller.last_plan.fallback is not None
            ),
            what="fallback",
        )
        nodes = "/api/v1/nodes"
        w.kube.faults.answer_empty(path_contains=nodes, body=b"{}", watch=False)
        w.kube.faults.delay_requests(3.0, path_contains=nodes, watch=True)
        seen = len(w.kube.journal)
        force_relist(w)
        wait_for(
            lambda: any(e.path == nodes and "watch" in e.query for e in w.kube.journal[seen:]),
            what="the Nodes relist done and its watch asked for",
        )
        passes = app.controller.passes if app.controller else 0
        wait_for(lambda: app.controller is not None and app.controller.passes >= passes + 2)
        assert not any(w.attached(p) for p in pools), "attached while a node cannot serve it"
        assert not [m for m in w.mutations() if m.path.endswith("/addHealthCheck")]
