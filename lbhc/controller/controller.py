"""One reconcile pass (the same read-plan-execute as `lbhc apply`, over the watch cache)
and the loop that runs it on events, on a resync period, and again with backoff on failure."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lbhc.controller.awareness import KubeProxyReporter
from lbhc.controller.backoff import Backoff
from lbhc.controller.cache import ClusterCache
from lbhc.controller.events import EventRecorder, EventSpec, ObjectRef
from lbhc.controller.lb_sampler import FailOpenWatch
from lbhc.controller.metrics import Metrics
from lbhc.controller.readiness_enforcer import ReadinessEnforcer
from lbhc.controller.trigger import Trigger
from lbhc.executor import ApplyResult, Executor, Status
from lbhc.gce.client import GceClient
from lbhc.gce.errors import describe
from lbhc.model.cloud import CloudSnapshot, Firewall
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Action, Ensure, FindingKind, Kind, Plan
from lbhc.planner.applied import cloud_after
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import Coverage
from lbhc.planner.kube_proxy import nodes_to_probe
from lbhc.planner.planner import plan as make_plan
from lbhc.planner.planner import shared_name_for
from lbhc.planner.scope import ScopeMismatch
from lbhc.planner.shared import firewall_command
from lbhc.planner.status import LbhcCheckState, StatusReport, assess
from lbhc.probe.prober import NodeProber

log = logging.getLogger(__name__)


class PartialFailure(RuntimeError):
    """The pass ran, but some changes failed: retried with backoff like any failure."""


def _log_dry_run(the_plan: Plan) -> None:
    if not the_plan.changes:
        return
    log.info("dry run: would apply %s", json.dumps(the_plan.to_json()["summary"]))
    for change in the_plan.changes:
        log.info("dry run: %s %s %s: %s", change.action, change.kind, change.name, change.reason)


@dataclass(frozen=True)
class ControllerOptions:
    dry_run: bool = False
    resync_period: float = 300.0
    max_concurrency: int = 32
    coalesce_sec: float = 0.05
    lb_health_sample_sec: float = 0.0  # 0: GCE's health checking is never sampled


class Controller:
    def __init__(
        self,
        config: PlannerConfig,
        cache: ClusterCache,
        gce: GceClient,
        trigger: Trigger,
        metrics: Metrics,
        recorder: EventRecorder | None,
        controller_ref: ObjectRef,
        options: ControllerOptions,
        may_write: Callable[[], bool] = lambda: True,
        enforcer: ReadinessEnforcer | None = None,
        prober: NodeProber | None = None,
        cloud_provider_uid: Callable[[], str | None] | None = None,
    ) -> None:
        self._config = config
        self._cache = cache
        self._gce = gce
        self._trigger = trigger
        self._metrics = metrics
        self._recorder = recorder
        self._controller_ref = controller_ref
        self._options = options
        self._may_write = may_write
        self._backoff = Backoff(initial=1.0, maximum=60.0)
        self._prober = prober
        self._enforcer = enforcer
        self._cloud_provider_uid = cloud_provider_uid
        self._reporter = KubeProxyReporter(metrics, self._record, controller_ref)
        self._fail_open = FailOpenWatch(
            gce, config, metrics, self._record, controller_ref, options.lb_health_sample_sec
        )
        self.last_plan: Plan | None = None
        self.last_report: StatusReport | None = None
        self.gce_ok: bool | None = None  # None: not tried yet (a follower never tries)
        self._in_fallback = False
        self.passes = 0

    # ---- the loop -----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        next_resync = time.monotonic()
        while not stop.is_set():
            synced = self._cache.synced()
            # Unsynced, a due resync must not make the wait return at once (a busy loop):
            # the list that completes the sync fires the trigger.
            due = max(0.0, next_resync - time.monotonic()) if synced else 1.0
            reasons = self._trigger.wait(min(due, 1.0), self._options.coalesce_sec)
            if stop.is_set():
                return
            if not self._cache.synced():
                # WaitForCacheSync: a pass over a partial cache withholds every removal and
                # attaches nothing, yet reads all of GCE.
                continue
            if not reasons and time.monotonic() < next_resync:
                continue
            if not reasons:
                reasons = ["periodic resync"]
            next_resync = time.monotonic() + self._options.resync_period
            self.reconcile_guarded(reasons)

    def reconcile_guarded(self, reasons: list[str]) -> None:
        """A pass that fails is retried with backoff; the error never ends the loop."""
        try:
            self.reconcile(reasons)
            self._backoff.reset()
        except Exception as exc:
            delay = self._backoff.next()
            log.warning("reconcile failed (%s); retrying in %.1f s", describe(exc), delay)
            if not isinstance(exc, PartialFailure):  # already counted as "partial"
                self._metrics.reconciles.labels("error").inc()
            self._trigger.delay_until(time.monotonic() + delay)
            self._trigger.fire("retry after failure")

    def reconcile(self, reasons: list[str]) -> Plan | None:
        if not self._options.dry_run and not self._may_write():
            log.debug("not the leader; skipping pass (%s)", reasons[0])
            return None
        # What woke it (coalesced): for an operator asking why lbhc read GCE just now.
        log.debug("pass: %s", "; ".join(reasons[:5]) + ("; ..." if len(reasons) > 5 else ""))
        started = time.monotonic()
        _, name = shared_name_for(self._cache.kube_system_uid, self._config)
        try:
            cloud = self._gce.read_snapshot(name)
        except Exception:
            self.gce_ok = False
            raise
        self.gce_ok = True
        # The cluster after the cloud: a GCE read can take seconds at scale, and the plan
        # should act on the newest view of the cluster, not one as old as the read.
        cluster = self._cache.snapshot()
        if self._cloud_provider_uid is not None:
            cluster = dataclasses.replace(cluster, cloud_provider_uid=self._cloud_provider_uid())
        if self._prober is not None:
            cluster = self._with_probes(cluster, self._prober)
        the_plan = make_plan(cluster, cloud, self._config)
        self.last_plan = the_plan
        self.passes += 1
        self._metrics.withheld.set(len(the_plan.withheld))
        for resource, size in self._cache.sizes().items():
            self._metrics.cache_objects.labels(resource).set(size)
        self._observe_fallback(the_plan)
        for finding in the_plan.findings:  # the recorder rate-limits repeats
            if finding.kind is FindingKind.CONFLICT:
                self._event(self._controller_ref, "Conflict", "Skip", finding.text, "Warning")
        if the_plan.out_of_scope:
            wrong_scope = ScopeMismatch(the_plan.out_of_scope).message(self._config)
            log.warning("%s", wrong_scope)
            self._event(self._controller_ref, "OutOfScope", "Skip", wrong_scope, "Warning")
        if self._options.dry_run:
            _log_dry_run(the_plan)
            result = None
        else:
            result = Executor(self._gce, self._options.max_concurrency).apply(the_plan)
            self._report(result)
            self._firewall_forbidden(result, the_plan)
        # Judged from the cloud as this pass left it: its own attaches count at once.
        done = [o.change for o in result.outcomes if o.status is Status.DONE] if result else []
        judged = cloud_after(cloud, done)
        # After the GCE pass, so nothing here can hold back attaches and detaches. A lost
        # readiness-patch race is retried with backoff like a failed GCE change.
        raced = not self._assess(cluster, judged, the_plan)
        failed = (result is not None and not result.ok) or raced
        self._metrics.reconciles.labels("partial" if failed else "ok").inc()
        self._metrics.reconcile_duration.observe(time.monotonic() - started)
        log.info(
            "reconciled (%s): %d change(s)%s",
            "; ".join(reasons[:3]),
            len(the_plan.changes),
            ", some failed" if failed else "",
        )
        if failed:
            raise PartialFailure("some changes failed; see the log above")
        return the_plan

    def _assess(self, cluster: ClusterSnapshot, cloud: CloudSnapshot, the_plan: Plan) -> bool:
        """Drain states, kube-proxy health, the readiness review: exported, and in enforce
        mode acted on. False only when a readiness patch lost a race."""
        try:
            report = assess(cluster, cloud, self._config, the_plan)
            self.last_report = report
            self._count_pools(report, the_plan)
            self._reporter.observe(report)
            self._fail_open.observe(cluster, cloud, report)
            if self._enforcer is None or self._options.dry_run:
                for patch in report.readiness.patches:
                    log.info(
                        "would patch DaemonSet %s/%s: %s", patch.namespace, patch.name, patch.path
                    )
                return True
            complete = cluster.complete and cluster.versions_complete
            return self._enforcer.enforce(report.readiness.patches, complete)
        except Exception:  # a reporting bug must never stop the controller from converging
            log.exception("assessing kube-proxy failed; the GCE pass was not affected")
            return True

    def leadership_lost(self) -> None:
        self._reporter.reset()

    def _with_probes(self, cluster: ClusterSnapshot, prober: NodeProber) -> ClusterSnapshot:
        """Probe answers for the nodes that need them. A node still waiting for its first
        answer is a gap: its version may be what decides fallback, so nothing is detached
        (or attached) on a guess; the prober triggers a pass when the answer comes."""
        targets = nodes_to_probe(cluster, self._config)
        prober.set_targets(targets)
        results = prober.results()
        probes = {node: results[node] for node in targets if node in results}
        pending = len(targets) - len(probes)
        if not pending:
            return dataclasses.replace(cluster, health_probes=probes)
        return dataclasses.replace(
            cluster,
            health_probes=probes,
            gaps=(*cluster.gaps, f"kube-proxy probe pending on {pending} node(s)"),
            versions_complete=False,
        )

    def _count_pools(self, report: StatusReport, the_plan: Plan) -> None:
        """From coverage kinds, never from warning text (which holds user-chosen names):
        pools carrying a check that is not kube-proxy's, and pools that need lbhc's check
        while a resource not lbhc's holds its check's or firewall's name."""
        self._metrics.pools.labels("attached").set(report.lbhc_pools)
        blocked = {Coverage.OTHER_CHECK} | ({Coverage.NONE} if the_plan.shared_conflict else set())
        conflicting = sum(
            1
            for s in report.services
            if s.coverage in blocked and s.lbhc is LbhcCheckState.NOT_ATTACHED
        )
        self._metrics.pools.labels("conflicting").set(conflicting)

    # ---- what the pass tells the cluster ------------------------------------------------
    def _observe_fallback(self, the_plan: Plan) -> None:
        active = the_plan.fallback is not None
        self._metrics.fallback.set(1 if active else 0)
        if active == self._in_fallback:
            return
        self._in_fallback = active
        if the_plan.fallback is not None:
            self._event(
                self._controller_ref,
                "FallbackEntered",
                "Fallback",
                f"{the_plan.fallback.reason}: {the_plan.fallback.effect}",
                "Warning",
            )
            for node in the_plan.fallback.nodes:
                self._event(
                    ObjectRef("Node", node.node),
                    "KubeProxyTooOld",
                    "Fallback",
                    f"kube-proxy {node.version} (from {node.source}) cannot serve "
                    f"/healthz: {the_plan.fallback.effect}",
                    "Warning",
                )
        else:
            self._event(
                self._controller_ref,
                "FallbackLeft",
                "Fallback",
                "every node's kube-proxy serves /healthz again",
            )

    def _firewall_forbidden(self, result: ApplyResult, the_plan: Plan) -> None:
        """The firewall may not be written (Shared VPC): attaches waited for it, so say on
        each Service that waits what a network admin must run, as the cloud provider's
        FirewallChangeNeeded Event does."""
        refused = [o for o in result.outcomes if o.forbidden and o.change.kind is Kind.FIREWALL]
        self._metrics.firewall_change_needed.set(1 if refused else 0)
        if not refused:
            return
        change = refused[0].change
        command = (
            firewall_command(change.desired, self._config.firewall_project)
            if isinstance(change, Ensure) and isinstance(change.desired, Firewall)
            else the_plan.firewall_command
        )
        note = (
            f"lbhc may not write Firewall {refused[0].change.name} in project "
            f"{self._config.firewall_project} ({refused[0].detail}); a network admin runs: "
            f"{command}"
        )
        log.warning("%s", note)
        waiting = {
            o.change.service
            for o in result.outcomes
            if o.change.action is Action.ATTACH and o.status is Status.SKIPPED and o.change.service
        }
        for service in sorted(waiting) or [""]:
            namespace, _, name = service.partition("/")
            ref = ObjectRef("Service", name, namespace) if service else self._controller_ref
            self._event(ref, "FirewallChangeNeeded", "Firewall", note, "Warning")

    def _report(self, result: ApplyResult) -> None:
        blocked = [o for o in result.outcomes if o.blocked]
        self._metrics.gc_blocked.set(1 if blocked else 0)
        for outcome in blocked:  # the recorder rate-limits the repeats of every resync
            self._event(
                self._controller_ref,
                "GarbageCollectionBlocked",
                "Delete",
                f"{outcome.change.kind} {outcome.change.name} is no longer needed but cannot "
                f"be deleted ({outcome.detail}): something outside lbhc's view uses it, such "
                "as a pool in another region or cluster; lbhc retries at every resync",
                "Warning",
            )
        for outcome in result.outcomes:
            change = outcome.change
            if change.kind is Kind.TARGET_POOL:
                self._metrics.pool_changes.labels(change.action.value, outcome.status.value).inc()
            if outcome.status is not Status.DONE:
                continue
            if change.kind is Kind.TARGET_POOL and change.service:
                namespace, _, svc = change.service.partition("/")
                ref = ObjectRef("Service", svc, namespace)
                if change.action is Action.ATTACH:
                    self._event(
                        ref,
                        "HealthCheckAttached",
                        "Attach",
                        f"target pool {change.name}: {change.reason}",
                    )
                else:
                    self._event(
                        ref,
                        "HealthCheckDetached",
                        "Detach",
                        f"target pool {change.name}: {change.reason}",
                    )
            elif change.action is Action.UPDATE:
                fields = ", ".join(change.diff)
                self._event(
                    self._controller_ref,
                    "Repaired",
                    "Update",
                    f"{change.kind} {change.name} drifted ({fields}); restored",
                    "Warning",
                )

    def _event(
        self, ref: ObjectRef, reason: str, action: str, note: str, type_: str = "Normal"
    ) -> None:
        self._record(EventSpec(ref, reason, action, note, type_))

    def _record(self, spec: EventSpec) -> None:
        if self._recorder is not None:
            self._recorder.record(spec)
