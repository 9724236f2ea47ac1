"""What a scale-down costs clients, measured: the same node scaled down under client load
through the sandbox's emulated load-balancer data path, for three kinds of target pool, with
the autoscaler's delete delay long enough for a check to drain the node, then at its 5 s
default.

- `without-check`: a pool made by a cloud provider older than the nodes check, left alone
  (the old world, and what lbhc is there to fix);
- `upstream`: a pool as today's cloud provider makes it, with its nodes check and the
  firewall it pins for it;
- `with-lbhc`: a pool made without a check, to which lbhc attached its own.

Then once more at the 5 s default with lbhc's deletion hold on (hold.deletion, lbhc/planner/
hold.py): the autoscaler waits for lbhc's delay-deletion annotation to go before it deletes the
VM, and lbhc takes it off once GCE's getHealth shows the node UNHEALTHY. That run has only the
sandbox with lbhc (`upstream` and `with-lbhc`: a hold is on the node, so it protects every
load balancer holding it).

`with-lbhc` and `upstream` share a sandbox (lbhc leaves the cloud provider's pools alone);
`without-check` runs in a sandbox of its own, without lbhc, at the same time: the same
victim, the same schedule, both scaled down by the same emulated autoscaler
(lbhc.sandbox.autoscaler). Counted per pool: new connections attempted, completed and
failed; and `cut`, long-lived connections established before the scale-down that broke (a
target pool has no connection draining: a health check cannot save them)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lbhc.controller.app import ControllerApp, RunOptions
from lbhc.demo.connection_traces import traces_of
from lbhc.demo.observe import wait_until
from lbhc.demo.trace import RunTrace
from lbhc.model.cluster import Service
from lbhc.planner.hold import DEFAULT_BOUND_SEC, HOLD_ANNOTATION, HoldConfig
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.autoscaler import DEFAULT_DELETE_DELAY_SEC, ScaleDown, ScaleDownTimes
from lbhc.sandbox.loadgen import LoadGenerator, LoadReport, LoadSpec
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node_name
from lbhc.settings import Settings, load_settings

log = logging.getLogger(__name__)

KINDS = ("without-check", "upstream", "with-lbhc")
IDENTITY = "lbhc-demo-connections"
# A default legacy check drains in interval x (unhealthy threshold + 1) = 32 s; the long
# delay leaves a margin over it, as an operator raising --node-delete-delay-after-taint would.
LONG_DELETE_DELAY_SEC = 45.0
WARM_UP_SEC = 4.0  # real seconds of load before the taint, scaled like the rest
AFTER_SEC = 8.0  # real seconds of load after the Node object is gone, scaled
# A hold's longest: the default drain bound plus the release margin.
HOLD_BOUND_SEC = DEFAULT_BOUND_SEC + HoldConfig.release_margin_sec


@dataclass(frozen=True)
class ConnectionCounts:
    attempted: int
    completed: int
    failed: int
    cut: int

    def to_json(self) -> dict[str, int]:
        return {
            "attempted": self.attempted,
            "completed": self.completed,
            "failed": self.failed,
            "cut": self.cut,
        }


@dataclass(frozen=True)
class ConnectionRun:
    """One kind of pool through one scale-down."""

    kind: str
    delete_delay: float  # real seconds (--node-delete-delay-after-taint)
    counts: ConnectionCounts
    trace: RunTrace | None = None  # what lbhc demo --timeline draws
    hold: bool = False  # lbhc held the node's deletion (hold.deletion on)
    scale_down: ScaleDownTimes | None = None  # its sandbox's scale-down, step by step
    released: str = ""  # with a hold: the note of lbhc's DeletionReleased Event on the node

    @property
    def name(self) -> str:
        return run_name(self.delete_delay, self.hold)(self.kind)


def run_name(delete_delay: float, hold: bool = False) -> Callable[[str], str]:
    """`with-lbhc`, `with-lbhc-delay-5s` for the runs at the autoscaler's default, and
    `with-lbhc-delay-5s-hold` with lbhc's deletion hold on."""
    suffix = "-hold" if hold else ""
    if delete_delay == DEFAULT_DELETE_DELAY_SEC:
        return lambda kind: f"{kind}-delay-{delete_delay:g}s{suffix}"
    return lambda kind: f"{kind}{suffix}"


@dataclass(frozen=True)
class ComparisonOptions:
    time_scale: float = 0.25
    operation_latency: float = 0.05
    nodes: int = 3
    load: LoadSpec = field(
        default_factory=lambda: LoadSpec(rate_per_sec=20, duration_sec=1, long_lived=6)
    )
    delays: tuple[float, ...] = (LONG_DELETE_DELAY_SEC, DEFAULT_DELETE_DELAY_SEC)
    # Delete delays run again with lbhc's deletion hold on (sandbox with lbhc only).
    hold_delays: tuple[float, ...] = (DEFAULT_DELETE_DELAY_SEC,)
    step_timeout: float = 60.0


@dataclass
class _World:
    """One sandbox, the pools it is measured through, lbhc when it runs there."""

    sandbox: Sandbox
    pools: dict[str, str]  # kind -> pool (and forwarding rule) name
    app: ControllerApp | None = None
    thread: threading.Thread | None = None


def compare(
    options: ComparisonOptions, say: Callable[[str], None] = lambda _: None
) -> list[ConnectionRun]:
    runs: list[ConnectionRun] = []
    # lbhc judges drain time in real seconds (DeletedBeforeDrained: gone before interval x
    # (unhealthy threshold + 1)), while the sandbox's checks run at the time scale: its
    # warning that a node went too early is about a clock these runs do not keep.
    timing = logging.getLogger("lbhc.controller.drain_timing")
    quiet = logging.Filter("nothing")  # a name no record has: drops every record
    timing.addFilter(quiet)
    try:
        for delay in options.delays:
            runs += _scale_down_at(delay, options, say)
        for delay in options.hold_delays:
            runs += _scale_down_at(delay, options, say, hold=True)
    finally:
        timing.removeFilter(quiet)
    return runs


def _scale_down_at(
    delay: float, options: ComparisonOptions, say: Callable[[str], None], *, hold: bool = False
) -> list[ConnectionRun]:
    with_lbhc = _World(_sandbox(options), {})
    worlds = [with_lbhc] if hold else [with_lbhc, _World(_sandbox(options), {})]
    named = run_name(delay, hold)
    with contextlib.ExitStack() as stack:
        for world in worlds:
            stack.enter_context(world.sandbox)
        with_lbhc.pools = {
            "upstream": _pool_of(with_lbhc.sandbox, "web-0"),
            "with-lbhc": _pool_of(with_lbhc.sandbox, _legacy(with_lbhc.sandbox)),
        }
        for without in worlds[1:]:
            without.pools = {"without-check": _pool_of(without.sandbox, _legacy(without.sandbox))}
        try:
            _start_lbhc(with_lbhc, options, hold)
            for world in worlds:
                _wait_ready(world, options, hold)
            reports, times = _measure(delay, options, worlds, say, hold)
            released = _released(with_lbhc.sandbox, node_name(1)) if hold else ""
            found = {
                kind: counts
                for world, report in zip(worlds, reports, strict=True)
                for kind, counts in _counts(report, world, node_name(1)).items()
            }
            traces = {
                trace.name: trace
                for world, report, scaled in zip(worlds, reports, times, strict=True)
                for trace in traces_of(world.sandbox, world.pools, report, scaled, named)
            }
        finally:
            _stop_lbhc(with_lbhc)
    world_of = {kind: i for i, world in enumerate(worlds) for kind in world.pools}
    runs = [
        ConnectionRun(kind, delay, found[kind], hold=hold, scale_down=times[world_of[kind]])
        for kind in KINDS
        if kind in found
    ]
    return [dataclasses.replace(run, trace=traces.get(run.name), released=released) for run in runs]


def _released(sandbox: Sandbox, node: str) -> str:
    """What lbhc's DeletionReleased Event on the node says ("" for none)."""
    for event in sandbox.kube.objects("Event"):
        regarding = event.get("regarding") or {}
        if event.get("reason") == "DeletionReleased" and regarding.get("name") == node:
            return str(event.get("note") or "")
    return ""


def _sandbox(options: ComparisonOptions) -> Sandbox:
    spec = SandboxSpec(
        nodes=options.nodes,
        services=1,
        local_services=0,
        cloud_provider="current",
        backend_service_lbs=False,
    )
    return Sandbox(
        SandboxOptions(
            spec=spec,
            time_scale=options.time_scale,
            operation_latency=options.operation_latency,
            kube_proxy_port=0,  # two sandboxes in one process: one ephemeral port each
            data_path=True,
        )
    )


def _legacy(sandbox: Sandbox) -> str:
    """The Service whose pool the cloud provider made before it had the nodes check."""
    names = [str(o["metadata"]["name"]) for o in sandbox.kube.objects("Service")]
    return next(name for name in names if name.startswith("legacy-"))


def _pool_of(sandbox: Sandbox, service: str) -> str:
    obj = sandbox.kube.get("Service", sandbox.spec.namespace, service)
    return target_pool_name(Service.model_validate(obj).metadata.uid)


def _settings(sandbox: Sandbox, scale: float, hold: bool = False) -> Settings:
    spec = sandbox.spec
    return load_settings(
        hold_deletion="on" if hold else "off",
        project=spec.project,
        region=spec.region,
        node_tags="gke-sandbox-node",
        gce_endpoint=sandbox.compute_url,
        kubeconfig=str(sandbox.kubeconfig),
        lb_health_reads_per_minute=min(1500, round(30 / scale)),
        # A marked node is read every min(10 s, this) (lbhc/controller/lb_verifier.py): at
        # the sandbox's time scale, as its checks run, so a hold's release is not late by
        # an unscaled 10 s.
        lb_health_sample_sec=10 * scale,
    )


def _start_lbhc(world: _World, options: ComparisonOptions, hold: bool = False) -> None:
    run = RunOptions(identity=IDENTITY, http_address="127.0.0.1:0", leader_elect=False)
    world.app = ControllerApp(_settings(world.sandbox, options.time_scale, hold), run)
    world.thread = threading.Thread(target=world.app.run, name="lbhc-connections", daemon=True)
    world.thread.start()


def _stop_lbhc(world: _World) -> None:
    if world.app is not None:
        world.app.stop()
    if world.thread is not None:
        world.thread.join(15)


def _wait_ready(world: _World, options: ComparisonOptions, hold: bool = False) -> None:
    """Every pool that carries a check carries it, and calls every node HEALTHY; every
    forwarding rule has its listener; with a hold, every node carries lbhc's annotation."""
    sandbox, timeout = world.sandbox, options.step_timeout
    if hold and world.app is not None:
        wait_until(lambda: _all_held(sandbox), timeout, "lbhc's hold on every node")
    spec = sandbox.spec
    data_path = sandbox.data_path
    assert data_path is not None
    for kind, pool in world.pools.items():
        wait_until(lambda p=pool: data_path.address(p), timeout, f"{kind}'s listener")  # type: ignore[misc]
        if kind == "without-check":
            continue
        wait_until(
            lambda p=pool: sandbox.compute.target_pools(spec.project, spec.region)[p].get(  # type: ignore[misc]
                "healthChecks"
            ),
            timeout,
            f"a check on the {kind} pool",
        )
        wait_until(
            lambda p=pool: _all_healthy(sandbox, p),  # type: ignore[misc]
            timeout,
            f"every node HEALTHY in the {kind} pool",
        )


def _all_held(sandbox: Sandbox) -> bool:
    return all(
        HOLD_ANNOTATION in (node["metadata"].get("annotations") or {})
        for node in sandbox.kube.objects("Node")
    )


def _all_healthy(sandbox: Sandbox, pool_name: str) -> bool:
    spec = sandbox.spec
    pool = sandbox.compute.target_pools(spec.project, spec.region)[pool_name]
    prober = sandbox.prober
    assert prober is not None
    members = pool.get("instances") or []
    return bool(members) and all(prober.health(pool, url) == "HEALTHY" for url in members)


def _measure(
    delay: float,
    options: ComparisonOptions,
    worlds: Sequence[_World],
    say: Callable[[str], None],
    hold: bool = False,
) -> tuple[list[LoadReport], list[ScaleDownTimes]]:
    """Load through every pool of both worlds, the same node scaled down in both, at once;
    per world, its load's report and when its scale-down took each step."""
    scale = options.time_scale
    victim = node_name(1)
    # 5.0: the lifecycle controller; with a hold, the drain bound and lbhc's release margin.
    held_for = HOLD_BOUND_SEC if hold else 0.0
    span = (WARM_UP_SEC + delay + held_for + 5.0 + AFTER_SEC) * scale
    spec = LoadSpec(
        rate_per_sec=options.load.rate_per_sec,
        duration_sec=span,
        long_lived=options.load.long_lived,
        ping_interval_sec=max(0.05, 1.0 * scale),
        connect_timeout_sec=max(0.2, 2.0 * scale),
        response_timeout_sec=max(0.2, 2.0 * scale),
    )
    generators = []
    for world in worlds:
        data_path = world.sandbox.data_path
        assert data_path is not None
        targets = {kind: data_path.address(pool) for kind, pool in world.pools.items()}
        generators.append(LoadGenerator({k: a for k, a in targets.items() if a}, spec).start())
    time.sleep(WARM_UP_SEC * scale)  # the load's own schedule: warm-up before the taint
    times: dict[int, ScaleDownTimes] = {}  # by world
    errors: dict[int, BaseException] = {}

    def scale_down(index: int, sandbox: Sandbox) -> None:
        scaler = ScaleDown(sandbox.kube, sandbox.delete_vm, time_scale=scale)
        try:
            times[index] = scaler.run(victim, delay)
        except Exception as exc:  # said below, with the run it spoiled
            log.exception("scale-down of %s in sandbox %d", victim, index + 1)
            errors[index] = exc

    threads = [
        threading.Thread(target=scale_down, args=(i, world.sandbox), name=f"scale-down-{i}")
        for i, world in enumerate(worlds)
    ]
    held = ", lbhc holding its deletion" if hold else ""
    say(
        f"scale-down of {victim} with --node-delete-delay-after-taint={delay:g}s{held}, under "
        f"{spec.rate_per_sec:g} new connections/s and {spec.long_lived} long-lived per pool"
    )
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(options.step_timeout + delay * scale)
    reports = [generator.wait(options.step_timeout) for generator in generators]
    if errors:
        index, exc = min(errors.items())
        raise RuntimeError(f"the scale-down of {victim} in sandbox {index + 1} failed: {exc!r}")
    if len(times) != len(worlds):
        raise RuntimeError(f"a scale-down of {victim} did not finish within the step timeout")
    if hold:
        _say_hold(times[0], delay * scale, say, _released(worlds[0].sandbox, victim))
    return reports, [times[i] for i in range(len(worlds))]


def _say_hold(
    times: ScaleDownTimes, delay: float, say: Callable[[str], None], released: str
) -> None:
    """How long the autoscaler waited on lbhc's annotation, after its own delete delay."""
    if times.held_until is None:
        say(f"{times.node} was not held: the autoscaler found no delay-deletion annotation")
        return
    waited = times.held_until - times.tainted - delay
    how = "its timeout ran out" if times.hold_timed_out else "lbhc took its annotation off"
    why = f" ({released})" if released and not times.hold_timed_out else ""
    say(
        f"{times.node} held {waited:.2f}s after the delete delay, until {how}{why}; then its "
        "VM went"
    )


def _counts(report: LoadReport, world: _World, victim: str) -> dict[str, ConnectionCounts]:
    """`failed` counts the new connections the load balancer sent to the node being deleted
    that did not complete (the data path's flow log says where each went). Skipped (over the
    in-flight cap) and stopped (cut by the end of the run) attempts were never the load
    balancer's to serve; nor was one that failed on a node that stays (the client itself
    stalled on a loaded machine, say): both are left out, the latter logged."""
    data_path = world.sandbox.data_path
    assert data_path is not None
    to_victim = {(f.rule, f.client_port) for f in data_path.flows() if f.node == victim}
    found = {}
    for target in report.targets:
        rule = world.pools[target]
        short = [
            a
            for a in report.attempts
            if a.target == target and a.kind == "short" and a.outcome not in ("skipped", "stopped")
        ]
        elsewhere = [
            a for a in short if a.outcome != "completed" and (rule, a.client_port) not in to_victim
        ]
        if elsewhere:
            log.info(
                "%s: %d new connection(s) failed that were not sent to %s (%s): not counted",
                target,
                len(elsewhere),
                victim,
                ", ".join(sorted({a.outcome for a in elsewhere})),
            )
        left_out = {id(a) for a in elsewhere}
        short = [a for a in short if id(a) not in left_out]
        long = [a for a in report.attempts if a.target == target and a.kind == "long"]
        completed = sum(1 for a in short if a.outcome == "completed")
        found[target] = ConnectionCounts(
            attempted=len(short),
            completed=completed,
            failed=len(short) - completed,
            cut=sum(1 for a in long if a.cut),
        )
    return found
