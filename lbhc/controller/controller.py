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
from typing import Any

from lbhc.controller.awareness import KubeProxyReporter
from lbhc.controller.backoff import Backoff
from lbhc.controller.deletion_holder import DeletionHolder
from lbhc.controller.events import EventRecorder, EventSpec, ObjectRef
from lbhc.controller.lb_verifier import LbVerifier, VerifierOptions
from lbhc.controller.metrics import Metrics
from lbhc.controller.node_tag_check import NodeTagCheck
from lbhc.controller.pass_report import PassReporter
from lbhc.controller.readiness_enforcer import ReadinessEnforcer
from lbhc.controller.trigger import Trigger
from lbhc.evidence import EvidencePlanner
from lbhc.executor import ApplyResult, Executor, Status
from lbhc.gce.client import GceClient
from lbhc.gce.errors import describe_gce_error
from lbhc.kube.cache import ClusterCache
from lbhc.model.cloud import CloudSnapshot, InstanceUrls
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Plan
from lbhc.planner.applied import cloud_after
from lbhc.planner.config import PlannerConfig
from lbhc.planner.kube_proxy import nodes_to_probe
from lbhc.planner.nodes import is_leaving
from lbhc.planner.planner import shared_name_for
from lbhc.planner.status import StatusReport, assess
from lbhc.probe.prober import NodeProber
from lbhc.render import plan_document

log = logging.getLogger(__name__)
EVIDENCE_INTERVAL_SEC = 60.0


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
    # GCE's own health view (lb_verifier): how often a class's serving nodes are read again
    # (0: never), and the read budget all such reads share (0: none are made).
    lb_health_sample_sec: float = 60.0
    lb_health_reads_per_minute: int = 30


@dataclass(frozen=True)
class LastPass:
    """The newest pass's plan and, once the executor is done, what became of each change:
    GET /plan tells a plan still to be carried out from one already carried out. One
    attribute, replaced whole, so a reader never pairs a plan with another pass's result."""

    plan: Plan
    result: ApplyResult | None = None
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        body = plan_document(self.plan, self.result)
        if self.dry_run:
            body["state"] = "dry-run: planned, not carried out"
        elif self.result is None:
            body["state"] = "carrying out"
        else:
            body["state"] = "carried out: see results"
        return body


class Controller:
    def __init__(
        self,
        config: PlannerConfig,
        cache: ClusterCache,
        gce: GceClient,
        trigger: Trigger,
        metrics: Metrics,
        recorder: EventRecorder | None,
        lease: ObjectRef,
        options: ControllerOptions,
        may_write: Callable[[], bool] = lambda: True,
        enforcer: ReadinessEnforcer | None = None,
        prober: NodeProber | None = None,
        cloud_provider_uid: Callable[[], str | None] | None = None,
        kube_proxy_replacement: Callable[[], str | None] | None = None,
        holder: DeletionHolder | None = None,
    ) -> None:
        self._config = config
        self._cache = cache
        self._gce = gce
        self._trigger = trigger
        self._metrics = metrics
        self._recorder = recorder
        self._options = options
        self._may_write = may_write
        self._backoff = Backoff(initial=1.0, maximum=60.0)
        self._prober = prober
        self._enforcer = enforcer
        self.holder = holder
        self._cloud_provider_uid = cloud_provider_uid
        self._kube_proxy_replacement = kube_proxy_replacement
        self._reporter = KubeProxyReporter(metrics, self._record, lease)
        # Evidence for lbhc's firewall (GCE's getHealth), read at most once a minute.
        self._planner = EvidencePlanner(gce, config, min_interval=EVIDENCE_INTERVAL_SEC)
        # Reads on a thread of its own (run_verifier), paced by its budget; only the leader
        # reads, as only it passes (a dry run reads too: it writes nothing).
        self.verifier = LbVerifier(
            gce,
            metrics,
            self._record,
            lease,
            trigger.fire,
            VerifierOptions.of(options.lb_health_reads_per_minute, options.lb_health_sample_sec),
            may_read=lambda: options.dry_run or may_write(),
        )
        self.last_pass: LastPass | None = None
        self.last_report: StatusReport | None = None
        self.gce_ok: bool | None = None  # None: not tried yet (a follower never tries)
        self._pass_report = PassReporter(config, metrics, self._record, lease)
        self.node_tags = NodeTagCheck(gce, config, metrics, self._record, lease)
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
            log.warning("reconcile failed (%s); retrying in %.1f s", describe_gce_error(exc), delay)
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
            leaving = self._cache.any_node(is_leaving)
            cloud = self._gce.read_snapshot(name, backends=True, group_members=leaving)
        except Exception:
            self.gce_ok = False
            raise
        self.gce_ok = True
        cloud = dataclasses.replace(cloud, lb_health=self.verifier.view())
        # The cluster after the cloud: a GCE read can take seconds at scale, and the plan
        # should act on the newest view of the cluster, not one as old as the read.
        cluster = self._cache.snapshot()
        if self._cloud_provider_uid is not None:
            cluster = dataclasses.replace(cluster, cloud_provider_uid=self._cloud_provider_uid())
        if self._kube_proxy_replacement is not None:
            replacement = self._kube_proxy_replacement()
            cluster = dataclasses.replace(cluster, kube_proxy_replacement=replacement)
        if self._prober is not None:
            cluster = self._with_probes(cluster, self._prober)
        the_plan, cloud = self._planner.plan(cluster, cloud)
        self.last_pass = LastPass(the_plan, dry_run=self._options.dry_run)
        self.passes += 1
        for resource, size in self._cache.sizes().items():
            self._metrics.cache_objects.labels(resource).set(size)
        self._pass_report.planned(the_plan)
        if self._options.dry_run:
            _log_dry_run(the_plan)
            result = None
        else:
            result = Executor(self._gce, self._options.max_concurrency).apply(the_plan)
            self.last_pass = LastPass(the_plan, result)
            self._pass_report.applied(result, the_plan)
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
        self.node_tags.check(cluster)  # once per start, after the pass it must not delay
        if failed:
            raise PartialFailure("some changes failed; see the log above")
        return the_plan

    def _assess(self, cluster: ClusterSnapshot, cloud: CloudSnapshot, the_plan: Plan) -> bool:
        """Drain states, kube-proxy health, the readiness review: exported, and in enforce
        mode acted on. False only when a readiness patch lost a race."""
        try:
            report = assess(cluster, cloud, self._config, the_plan)
            self.last_report = report
            self._pass_report.assessed(report, the_plan)
            self._reporter.observe(report)
            urls = InstanceUrls(cluster.nodes, self._config.project, self._config.region)
            self.verifier.observe(report, urls)
            if self.holder is not None:
                complete = cluster.complete and cluster.versions_complete
                self.holder.hold(cluster.nodes, report, complete)
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

    @property
    def last_plan(self) -> Plan | None:
        """The newest pass's plan (carried out or not: last_pass says)."""
        return self.last_pass.plan if self.last_pass is not None else None

    def leadership_lost(self) -> None:
        self._reporter.reset()
        self._pass_report.reset()
        if self.holder is not None:
            self.holder.leadership_lost()

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

    def _record(self, spec: EventSpec) -> None:
        if self._recorder is not None:
            self._recorder.record(spec)
