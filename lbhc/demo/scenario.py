"""The demo's scenario. Each step acts as the cluster's other actors would (the autoscaler
tainting a node, a node joining, Services deleted) and is verified against the fakes' state,
never assumed; the controller is the real `lbhc run` code path (ControllerApp with a
kubeconfig and a Compute endpoint)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lbhc.controller.app import ControllerApp, RunOptions
from lbhc.demo.observe import (
    SandboxView,
    check,
    http_status,
    journal_kind,
    read_cluster,
    wait_until,
)
from lbhc.demo.timeline import DemoSummary, StepResult, Timeline
from lbhc.gce.client import GceClient
from lbhc.model.cloud import http_health_check_url, instance_url
from lbhc.model.cluster import Node
from lbhc.model.plan import Action, Kind
from lbhc.planner.coverage import Coverage, drain_bound_seconds
from lbhc.planner.drain import DrainState
from lbhc.planner.planner import plan, shared_name
from lbhc.planner.status import assess
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, kube_proxy_pod, node, node_name
from lbhc.settings import Settings, load_settings

IDENTITY = "lbhc-demo"
LET_GO = frozenset({"UNHEALTHY", "out"})
TAINT = "ToBeDeletedByClusterAutoscaler"
OLD_KUBE_PROXY = "v1.6.13"  # before 1.7.2: no /healthz a cloud health checker can reach


@dataclass(frozen=True)
class DemoOptions:
    time_scale: float = 0.25  # an 8 s check interval takes 2 s: real logic, faster clock
    operation_latency: float = 0.05
    nodes: int = 3
    # Cluster Services only: a Local pool drains a node as its endpoints go, which the
    # sandbox has none of; other tests cover Local pools.
    services: int = 3
    step_timeout: float = 60.0
    cloud_provider: str = "current"  # or "legacy": the old world, with no check on any pool
    # Then the same scale-down under client load through each kind of pool, counting the
    # connections it breaks (lbhc.demo.connections), at the same time scale.
    connections: bool = True
    # Where to draw those runs (lbhc demo --timeline FILE; the CLI has checked the path and
    # that plotly imports): lbhc.demo.picture.write_timeline.
    timeline: Path | None = None


class Demo:
    def __init__(self, options: DemoOptions, out: TextIO | None) -> None:
        self.options = options
        self.timeline = Timeline(out)
        self.summary = DemoSummary()
        self.sandbox = Sandbox(
            SandboxOptions(
                spec=demo_spec(options),
                time_scale=options.time_scale,
                operation_latency=options.operation_latency,
            )
        )
        self.app: ControllerApp | None = None
        self.backfill: list[str] = []  # Cluster pools made without a check
        self.blocked: list[str] = []  # pools whose probes the firewall drops, at the start
        self._thread: threading.Thread | None = None

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> DemoSummary:
        say = self.timeline.say
        with self.sandbox:
            settings = self.settings()
            self.gce = GceClient(
                settings.gce_client_config(read_only=True, client_id="demo-checker")
            )
            config = settings.planner_config()
            _, self.check_name = shared_name(read_cluster(settings), config)
            self.check_url = http_health_check_url(self.sandbox.spec.project, self.check_name)
            self.view = SandboxView(self.sandbox, self.gce, self.check_name, self.check_url, config)
            spec = self.sandbox.spec
            say(
                f"sandbox up ({spec.cloud_provider} cloud provider): {spec.nodes} nodes, "
                f"{spec.service_count} LoadBalancer Services; health checking time scale "
                f"{self.options.time_scale}"
            )
            steps: list[tuple[str, Callable[[Settings], None]]] = [
                ("plan", self.step_plan),
                ("converge", self.step_converge),
                ("scale-down", self.step_scale_down),
                ("scale-down-aborted", self.step_scale_down_aborted),
                ("version-skew", self.step_version_skew),
                ("clean-up", self.step_clean_up),
            ]
            try:
                for name, step in steps:
                    result = self._run_step(name, step, settings)
                    if not result.ok:
                        break
            finally:
                self._stop_controller()
            # Those GCE carried out: a detach racing the cloud provider's delete of the same
            # pool is refused (404) and changes nothing, as clean-up counts detaches.
            self.summary.gce_mutations = sum(
                1
                for e in self.sandbox.compute.mutating_requests()
                if e.client_id == IDENTITY and e.status < 300
            )
        if self.options.connections and self.summary.ok:  # sandboxes of its own, after this one
            self._run_step("connections", self.step_connections, settings)
        # The demo's sandbox, and the kubeconfig it wrote, are gone by now: point at the command
        # that serves the same world and stays up, rather than at a path that no longer exists.
        self.timeline.summary(
            self.summary,
            then="To explore this world with kubectl and lbhc, serve it until Ctrl-C (it prints "
            f"what to try):\n  {sandbox_command(self.sandbox.spec)}",
        )
        return self.summary

    def _run_step(
        self, name: str, step: Callable[[Settings], None], settings: Settings
    ) -> StepResult:
        result = StepResult(name)
        self.summary.steps.append(result)
        started = time.monotonic()
        try:
            step(settings)
            result.ok = True
        except Exception as exc:  # a failed step is reported, and the demo exits non-zero
            result.error = str(exc) or type(exc).__name__
            self.timeline.say(f"step {name} FAILED: {result.error}")
        result.seconds = time.monotonic() - started
        return result

    def settings(self) -> Settings:
        """Production defaults, but GCE's own view read at the demo's pace: health checking
        runs `time_scale` times real time, so the read budget and the sampling period scale
        with it (30 reads a minute and 60 s at 0.25 become 120 and 15 s), as they would
        against checks that fast."""
        spec, scale = self.sandbox.spec, self.options.time_scale
        return load_settings(
            project=spec.project,
            region=spec.region,
            node_tags="gke-sandbox-node",
            gce_endpoint=self.sandbox.compute_url,
            kubeconfig=str(self.sandbox.kubeconfig),
            lb_health_reads_per_minute=min(1500, round(30 / scale)),
            lb_health_sample_sec=60 * scale,
        )

    # -- steps ----------------------------------------------------------------------------------

    def step_plan(self, settings: Settings) -> None:
        config = settings.planner_config()
        cluster = read_cluster(settings)
        the_plan = plan(cluster, self.gce.read_snapshot(self.check_name), config)
        made = {(c.action, c.kind) for c in the_plan.changes if c.action is Action.CREATE}
        check(
            made == {(Action.CREATE, Kind.FIREWALL), (Action.CREATE, Kind.HTTP_HEALTH_CHECK)},
            f"expected the shared check and firewall to be created, got {made}",
        )
        cluster_pools = self.view.pools("Cluster")
        self.backfill = self.view.unchecked(cluster_pools)
        attached = sorted(c.name for c in the_plan.changes if c.action is Action.ATTACH)
        check(attached == self.backfill, "expected one attach per Cluster pool without a check")
        covered = sorted(set(cluster_pools) - set(self.backfill))
        touched = {c.name for c in the_plan.changes} & set(covered)
        check(not touched, f"pools covered by the cloud provider must be left alone: {touched}")
        self.summary.backfilled, self.summary.covered_by_cloud_provider = (
            len(attached),
            len(covered),
        )
        also = (
            f"; {len(covered)} Cluster pool(s) covered by the cloud provider's "
            f"{self.sandbox.node_health_check_name} left alone"
            if covered
            else ""
        )
        self.timeline.say(
            f"plan: create firewall + check {self.check_name}, attach {len(attached)} Cluster "
            f"pool(s) made without a check{also}"
        )
        cloud = self.gce.read_snapshot(self.check_name, backends=True)
        report = assess(cluster, cloud, config, the_plan)
        self.blocked = sorted(
            s.pool for s in report.services if s.coverage is Coverage.PROBE_BLOCKED
        )
        if self.blocked:
            why = next(s.probe_reach_reason for s in report.services if s.pool in self.blocked)
            self.timeline.say(
                f"firewall: {len(self.blocked)} pool(s) probe-blocked, failing open ({why}); "
                "lbhc's own rule admits them once GCE shows the nodes answer the port"
            )
        elif why := next((s.probe_reach_reason for s in report.services if s.probe_reach), ""):
            # Another controller's rule without destination ranges admits every probe.
            self.timeline.say(f"firewall: no load balancer's probes blocked ({why})")

    def step_converge(self, settings: Settings) -> None:
        options = RunOptions(
            identity=IDENTITY,
            http_address="127.0.0.1:0",
            lease_duration=4.0,
            renew_deadline=3.0,
            retry_period=0.5,
        )
        self.app = ControllerApp(settings, options)
        self._thread = threading.Thread(
            target=self.app.run, name="lbhc-demo-controller", daemon=True
        )
        self._thread.start()
        self.timeline.say("controller started (lbhc run, leader election on)")
        backfill, timeout = self.backfill, self.options.step_timeout
        wait_until(
            lambda: self.view.carrying() == set(backfill),
            timeout,
            "every Cluster pool without a check attached",
        )
        check(all(self.view.shared_exists()), "shared check and firewall exist")
        draining = sorted(self.view.kube_proxy_checked())
        check(draining == self.view.pools("Cluster"), "every Cluster pool carries a /healthz check")
        self.summary.converged = True
        self.timeline.say(
            f"converged: check and firewall created, {len(backfill)} pool(s) attached; every "
            f"Cluster pool now carries a kube-proxy /healthz check"
        )
        wanted = len(backfill)

        def attach_events() -> list[dict[str, Any]]:
            found = self.view.events("HealthCheckAttached")
            return found if len(found) >= wanted else []

        attached_events = wait_until(attach_events, timeout, "a HealthCheckAttached Event per pool")
        self.timeline.say(
            f"{len(attached_events)} HealthCheckAttached Event(s), on the Services whose pools "
            "lbhc attached"
        )
        for index in range(self.sandbox.spec.nodes):
            wait_until(
                lambda i=index: self.view.lb_states(node_name(i), draining) == {"HEALTHY"},  # type: ignore[misc]
                timeout,
                f"{node_name(index)} HEALTHY in every pool",
            )
        if self.blocked:
            self.timeline.say(
                f"the {len(self.blocked)} pool(s) that were probe-blocked: every node HEALTHY "
                "in getHealth, behind lbhc's firewall"
            )
        self.timeline.say("every node HEALTHY in every pool (GCE's emulated checker)")

    def step_scale_down(self, settings: Settings) -> None:
        victim, timeout = node_name(1), self.options.step_timeout
        checked = self.view.kube_proxy_checked()
        pools = sorted(checked)
        # The slowest attached check sets the bound: each pool drains at its own check's pace.
        bound = max(drain_bound_seconds(c) for c in checked.values()) * self.options.time_scale
        owners = sorted({c.name for c in checked.values()})
        tainted_at = time.monotonic()
        self.sandbox.kube.taint(victim, TAINT, str(int(time.time())), "NoSchedule")
        self.timeline.say(f"autoscaler taints {victim} {TAINT}")
        wait_until(
            lambda: self.view.lb_states(victim, pools) == {"UNHEALTHY"},
            timeout,
            f"{victim} UNHEALTHY in every pool",
        )
        assert self.sandbox.prober is not None
        spec = self.sandbox.spec
        url = instance_url(
            Node.model_validate(self.sandbox.kube.get("Node", None, victim)),
            spec.project,
            spec.zone,
        )
        down = [
            t
            for t, state in self.sandbox.prober.transitions(url)
            if state == "UNHEALTHY" and t >= tainted_at
        ]
        check(bool(down), "the prober recorded the UNHEALTHY transition")
        self.summary.drain_seconds, self.summary.drain_bound_seconds = down[0] - tainted_at, bound
        self.timeline.say(
            f"{victim} UNHEALTHY in all {len(pools)} pools ({', '.join(owners)}) after "
            f"{down[0] - tainted_at:.2f}s (bound: interval x (unhealthyThreshold + 1) = "
            f"{bound:.2f}s at time scale {self.options.time_scale})"
        )
        check(down[0] - tainted_at <= bound, "drained within the bound")
        self._backends_let_go(victim, timeout)
        endpoint = self.sandbox.fleet.endpoint(victim) if self.sandbox.fleet else None
        check(endpoint is not None, f"{victim}'s kube-proxy is listening")
        host, port = endpoint  # type: ignore[misc]
        check(http_status(f"http://{host}:{port}/healthz") == 503, "its kube-proxy fails /healthz")
        check(http_status(f"http://{host}:{port}/livez") == 200, "its kube-proxy /livez stays 200")
        pod = self.sandbox.kube.get("Pod", "kube-system", f"kube-proxy-{victim}") or {}
        ready = [c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
        check(
            ready == [{"type": "Ready", "status": "True"}],
            "kube-proxy stays Ready (readiness on /livez)",
        )
        report = wait_until(
            lambda: self._report_says(victim, DrainState.DRAINING),
            timeout,
            "the controller to report the node draining",
        )
        check(report.kube_proxy.healthy is True, "the kube-proxy health view stays healthy")
        self.timeline.say(
            f"kube-proxy on {victim}: /healthz 503, /livez 200, Pod Ready; lbhc says "
            f"draining; {report.kube_proxy.message}"
        )
        wait_until(
            lambda: self._verified_unhealthy(victim),
            timeout,
            "the controller's own getHealth reads to verify the drain",
        )
        self.timeline.say(
            f"lbhc's verdict verified against GCE's own view: {victim} read UNHEALTHY (or out) "
            "by the controller's getHealth in each class of load balancers holding it, target "
            "pools and backend services alike"
        )

    def step_connections(self, _settings: Settings) -> None:
        from lbhc.demo.connection_report import explain, render_table
        from lbhc.demo.connections import ComparisonOptions, compare

        options = ComparisonOptions(
            time_scale=self.options.time_scale,
            operation_latency=self.options.operation_latency,
            step_timeout=self.options.step_timeout,
        )
        self.summary.connections = compare(options, say=self.timeline.say)
        self.timeline.table(render_table(self.summary.connections))
        for line in explain(self.summary.connections, self.options.time_scale):
            self.timeline.say(line)
        if self.options.timeline is not None:
            from lbhc.demo.picture import write_timeline

            traces = [run.trace for run in self.summary.connections if run.trace is not None]
            write_timeline(traces, self.options.timeline)
            self.timeline.say(f"timeline written to {self.options.timeline}")
        by_name = {run.name: run.counts for run in self.summary.connections}
        check(
            by_name["with-lbhc"].failed == 0,
            "with a delete delay over the drain bound, lbhc's check fails no new connection",
        )

    def _backends_let_go(self, victim: str, timeout: float) -> None:
        """Backend services (ingress-gce's, the cloud provider's internal one) stop sending the
        node new connections too: UNHEALTHY on their own checks, or taken out of their NEG."""
        if not self.view.backend_states(victim):
            return  # the legacy world has none

        def let_go() -> dict[str, str]:
            states = self.view.backend_states(victim)
            return states if states and set(states.values()) <= LET_GO else {}

        states = wait_until(
            let_go, timeout, f"{victim} UNHEALTHY in, or out of, every backend service"
        )
        unhealthy = sum(1 for v in states.values() if v == "UNHEALTHY")
        out = len(states) - unhealthy
        self.timeline.say(
            f"{victim} UNHEALTHY in {unhealthy} backend service(s) and out of {out} (ingress-gce "
            "took it out of its NEG, with connection draining): lbhc wrote nothing there"
        )

    def _verified_unhealthy(self, victim: str) -> str:
        """The victim's evidence once it is verified and GCE called it UNHEALTHY."""
        report = self._report_says(victim, DrainState.DRAINING)
        if report is None:
            return ""
        drain = next(n.drain for n in report.nodes if n.node == victim)
        return drain.evidence if drain.verified and "UNHEALTHY" in drain.evidence else ""

    def _report_says(self, node_name_: str, state: DrainState) -> Any:
        report = self.app.controller.last_report if self.app and self.app.controller else None
        if report is None:
            return None
        states = {n.node: n.drain.state for n in report.nodes}
        return report if states.get(node_name_) is state else None

    def step_scale_down_aborted(self, settings: Settings) -> None:
        victim, pools = node_name(1), sorted(self.view.kube_proxy_checked())
        self.sandbox.kube.untaint(victim, TAINT)
        self.timeline.say(f"scale-down aborted: taint removed from {victim}")
        wait_until(
            lambda: self.view.lb_states(victim, pools) == {"HEALTHY"},
            self.options.step_timeout,
            f"{victim} HEALTHY again",
        )
        self.timeline.say(f"{victim} HEALTHY again in every pool")

    def step_version_skew(self, settings: Settings) -> None:
        spec, timeout = self.sandbox.spec, self.options.step_timeout
        index = spec.nodes
        old = node(spec, index, OLD_KUBE_PROXY)
        self.sandbox.kube.upsert(old)
        self.sandbox.kube.upsert(
            kube_proxy_pod(node_name(index), OLD_KUBE_PROXY, "/healthz", owned=False)
        )
        self.timeline.say(f"node {node_name(index)} joins with kube-proxy {OLD_KUBE_PROXY}")
        wait_until(
            lambda: not self.view.carrying(),
            timeout,
            "lbhc's check detached from every pool it covered (fallback)",
        )
        name = self.sandbox.node_health_check_name  # the legacy profile has none
        project = self.sandbox.spec.project
        covered = self.view.carrying(http_health_check_url(project, name)) if name else set()
        check(
            len(covered) == self.summary.covered_by_cloud_provider,
            "the cloud provider's check stays on the pools it covers",
        )
        last = self.app.controller.last_plan if self.app and self.app.controller else None
        check(
            last is not None
            and last.fallback is not None
            and node_name(index) in last.fallback.reason,
            "the fallback reason names the node",
        )
        self.summary.fallback_entered = bool(self.view.events("FallbackEntered"))
        check(self.summary.fallback_entered, "a FallbackEntered Event")
        self.timeline.say(f"fallback: {last.fallback.reason}")  # type: ignore[union-attr]
        if covered:
            self.timeline.say(
                f"lbhc's check withdrawn; the cloud provider's stays on {len(covered)} pool(s)"
            )
        self.sandbox.kube.delete("Pod", "kube-system", f"kube-proxy-{node_name(index)}")
        self.sandbox.kube.delete("Node", None, node_name(index))
        self.timeline.say(f"node {node_name(index)} leaves")
        wait_until(
            lambda: self.view.carrying() == set(self.backfill),
            timeout,
            "the check attached again",
        )
        self.summary.fallback_left = bool(
            wait_until(lambda: self.view.events("FallbackLeft"), timeout, "a FallbackLeft Event")
        )
        self.timeline.say("fallback left: lbhc's check is back on the pools it covers")

    def step_clean_up(self, settings: Settings) -> None:
        before = len(self.sandbox.compute.journal)
        cluster_pools = self.backfill
        for obj in self.sandbox.kube.objects("Service"):
            self.sandbox.kube.delete(
                "Service", obj["metadata"]["namespace"], obj["metadata"]["name"]
            )
        self.timeline.say("every Service deleted (the cloud provider removes their load balancers)")
        wait_until(
            lambda: self.view.shared_exists() == (False, False),
            self.options.step_timeout,
            "the shared check and firewall garbage-collected",
        )
        ours = [
            e
            for e in self.sandbox.compute.journal[before:]
            if e.mutating and e.client_id == IDENTITY and e.status < 300
        ]
        kinds = [journal_kind(e.path, e.method) for e in ours]
        detaches = kinds.count("detach")
        check(
            "delete-check" in kinds and "delete-firewall" in kinds,
            "the check and firewall deleted by lbhc",
        )
        check(
            kinds.index("delete-check") < kinds.index("delete-firewall"),
            "the check deleted before the firewall",
        )
        check(
            all(i < kinds.index("delete-check") for i, k in enumerate(kinds) if k == "detach"),
            "every detach before the check's delete",
        )
        self.summary.gc_complete = True
        removed_first = len(cluster_pools) - detaches
        self.summary.removed_before_detach = removed_first
        self.timeline.say(
            f"{detaches} pool(s) detached by lbhc"
            + (f", {removed_first} removed by the cloud provider first" if removed_first else "")
            + "; then the check, then the firewall deleted"
        )

    def _stop_controller(self) -> None:
        if self.app is not None:
            self.app.stop()
        if self._thread is not None:
            self._thread.join(15)


def demo_spec(options: DemoOptions) -> SandboxSpec:
    return SandboxSpec(
        nodes=options.nodes,
        services=options.services,
        local_services=0,
        cloud_provider=options.cloud_provider,
    )


def sandbox_command(spec: SandboxSpec) -> str:
    """The `lbhc sandbox` command that seeds the world of `spec` (the current cloud provider
    is its default)."""
    flags = [f"--nodes {spec.nodes}", f"--services {spec.services}"]
    flags.append(f"--local-services {spec.local_services}")
    if not spec.current:
        flags.append(f"--cloud-provider {spec.cloud_provider}")
    return "lbhc sandbox " + " ".join(flags)


def run_demo(options: DemoOptions | None = None, out: TextIO | None = None) -> DemoSummary:
    return Demo(options or DemoOptions(), out).run()
