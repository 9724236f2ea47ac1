"""What one pass tells the cluster: Events and metrics from the plan's findings, its
fallback and the apply's outcomes. Everything is decided from kinds and statuses, never from
text, which holds names users chose."""

from __future__ import annotations

import logging
from collections.abc import Callable

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.executor import ApplyResult, Status
from lbhc.model.cloud import Firewall
from lbhc.model.plan import Action, Attach, Detach, Ensure, FindingKind, Kind, Plan
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import Coverage
from lbhc.planner.scope import ScopeMismatch
from lbhc.planner.shared import firewall_command
from lbhc.planner.status import LbhcCheckState, StatusReport

log = logging.getLogger(__name__)


class PassReporter:
    def __init__(
        self,
        config: PlannerConfig,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        lease: ObjectRef,
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._record = record
        # Events about lbhc itself (conflicts, fallback, scope) regard its Lease.
        self._lease = lease
        self._in_fallback = False

    def planned(self, the_plan: Plan) -> None:
        """Once per pass, before anything is applied."""
        self._metrics.withheld.set(len(the_plan.withheld))
        self._fallback(the_plan)
        conflicts = [f for f in the_plan.findings if f.kind is FindingKind.CONFLICT]
        self._metrics.conflicts.set(len(conflicts))
        for finding in conflicts:  # the recorder rate-limits repeats
            self._event(self._lease, "Conflict", "Skip", finding.text, "Warning")
        if the_plan.out_of_scope:
            wrong_scope = ScopeMismatch(the_plan.out_of_scope).message(self._config)
            log.warning("%s", wrong_scope)
            self._event(self._lease, "OutOfScope", "Skip", wrong_scope, "Warning")

    def reset(self) -> None:
        """On losing the lease: a follower no longer plans, so the gauges the alerts read must
        not keep saying what was true at its last pass (the new leader says it now)."""
        for gauge in (
            self._metrics.conflicts,
            self._metrics.fallback,
            self._metrics.firewall_change_needed,
            self._metrics.gc_blocked,
            self._metrics.withheld,
        ):
            gauge.set(0)

    def applied(self, result: ApplyResult, the_plan: Plan) -> None:
        self._gc_blocked(result)
        self._outcomes(result)
        self._firewall_forbidden(result, the_plan)

    def assessed(self, report: StatusReport, the_plan: Plan) -> None:
        """Pools counted from coverage kinds: pools carrying a check that is not
        kube-proxy's, and pools that need lbhc's check while a resource not lbhc's holds its
        check's or firewall's name."""
        self._metrics.pools.labels("attached").set(report.lbhc_pools)
        blocked = {Coverage.OTHER_CHECK} | ({Coverage.NONE} if the_plan.shared_conflict else set())
        conflicting = sum(
            1
            for s in report.services
            if s.check_coverage in blocked and s.lbhc is LbhcCheckState.NOT_ATTACHED
        )
        self._metrics.pools.labels("conflicting").set(conflicting)

    # ---- the parts ------------------------------------------------------------------------
    def _fallback(self, the_plan: Plan) -> None:
        active = the_plan.fallback is not None
        self._metrics.fallback.set(1 if active else 0)
        if active == self._in_fallback:
            return
        self._in_fallback = active
        if the_plan.fallback is None:
            self._event(
                self._lease,
                "FallbackLeft",
                "Fallback",
                "every node's kube-proxy serves /healthz again",
            )
            return
        fallback = the_plan.fallback
        self._event(
            self._lease,
            "FallbackEntered",
            "Fallback",
            f"{fallback.reason}: {fallback.effect}",
            "Warning",
        )
        for node in fallback.nodes:
            self._event(
                ObjectRef("Node", node.node),
                "KubeProxyTooOld",
                "Fallback",
                f"kube-proxy {node.version} (from {node.source}) cannot serve "
                f"/healthz: {fallback.effect}",
                "Warning",
            )

    def _gc_blocked(self, result: ApplyResult) -> None:
        blocked = [o for o in result.outcomes if o.blocked]
        self._metrics.gc_blocked.set(1 if blocked else 0)
        for outcome in blocked:  # the recorder rate-limits the repeats of every resync
            self._event(
                self._lease,
                "GarbageCollectionBlocked",
                "Delete",
                f"{outcome.change.kind} {outcome.change.name} is no longer needed but cannot "
                f"be deleted ({outcome.detail}): something outside lbhc's view uses it, such "
                "as a pool in another region or cluster; lbhc retries at every resync",
                "Warning",
            )

    def _outcomes(self, result: ApplyResult) -> None:
        for outcome in result.outcomes:
            change = outcome.change
            if isinstance(change, Attach | Detach):
                self._metrics.pool_changes.labels(change.action.value, outcome.status.value).inc()
            if outcome.status is not Status.DONE:
                continue
            match change:
                case Attach(service=service) | Detach(service=service) if service:
                    namespace, _, name = service.partition("/")
                    attached = isinstance(change, Attach)
                    self._event(
                        ObjectRef("Service", name, namespace),
                        "HealthCheckAttached" if attached else "HealthCheckDetached",
                        "Attach" if attached else "Detach",
                        f"target pool {change.name}: {change.reason}",
                    )
                case Ensure() if change.action is Action.UPDATE:
                    self._event(
                        self._lease,
                        "Repaired",
                        "Update",
                        f"{change.kind} {change.name} drifted ({', '.join(change.diff)}); restored",
                        "Warning",
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
            f"lbhc may not write Firewall {change.name} in project "
            f"{self._config.firewall_project} ({refused[0].detail}); a network admin runs: "
            f"{command}"
        )
        log.warning("%s", note)
        waiting = {
            o.change.service
            for o in result.outcomes
            if isinstance(o.change, Attach) and o.status is Status.SKIPPED and o.change.service
        }
        for service in sorted(waiting) or [""]:
            namespace, _, name = service.partition("/")
            ref = ObjectRef("Service", name, namespace) if service else self._lease
            self._event(ref, "FirewallChangeNeeded", "Firewall", note, "Warning")

    def _event(
        self, ref: ObjectRef, reason: str, action: str, note: str, type_: str = "Normal"
    ) -> None:
        self._record(EventSpec(ref, reason, action, note, type_))
