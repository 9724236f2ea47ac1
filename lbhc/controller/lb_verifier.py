"""GCE's own health view, read within one read budget: the evidence behind drain verdicts and
pool health (planner/pool_classes, planner/drain_evidence).

targetPools.getHealth answers for one instance per call and counts against the project's
Compute read quota, which every other client of the project shares (Compute Engine rate
quotas: per-minute windows, 403 rateLimitExceeded past them). So at most
`controller.lb_health_reads_per_minute` reads are made in any minute (read_budget), the next
ones chosen by planner/verify_reads (nodes marked for deletion first, then a few serving nodes
per class of pools), on a thread of their own: a pass never waits on them. Only the
leader reads. What the reads show goes back into the next pass through the cloud snapshot
(`CloudSnapshot.lb_health`); a change that matters (a marked node turning UNHEALTHY or let go,
a class changing health) fires a pass at once.

A getHealth refusal (400) is taken to mean "not in the pool" only once the pool's instance
list, read as a partial response of that one field, confirms it: the refusal's wording for a
non-member is not documented."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from lbhc.controller.backend_reads import (
    BackendCall,
    BackendCalls,
    GroupHealth,
    backend_call,
    reading_of,
)
from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.controller.read_budget import ReadBudget
from lbhc.gce.errors import result_label, status_of
from lbhc.model.cloud import resource_path
from lbhc.model.lb_health import HealthReading, InstanceHealth, LbHealthView
from lbhc.planner.fail_open import serving_nodes
from lbhc.planner.lb_views import LbKind
from lbhc.planner.pool_classes import ClassHealth, PoolClass, judge_class
from lbhc.planner.status import StatusReport
from lbhc.planner.verify_reads import HealthRead, MarkedNode, Purpose, Serving, choose_reads

log = logging.getLogger(__name__)
HEALTH_CHECK_CANNOT_PASS = "HealthCheckCannotPass"
CUT_BEFORE_DRAINED = "CutBeforeDrained"
MARKED_EVERY_SEC = 10.0  # a marked node's turn to UNHEALTHY (or out of the pool) matters now
_BAD_REQUEST = 400


class HealthSource(Protocol):
    def get_health(self, pool: str, instance_url: str) -> tuple[str, ...]: ...

    def pool_instances(self, pool: str) -> frozenset[str]: ...

    def backend_health(self, backend: str, group_url: str) -> GroupHealth: ...


@dataclass(frozen=True)
class VerifierOptions:
    reads_per_minute: int = 30  # 0: off
    sample_every: float = 60.0  # how often a class's serving nodes are read again
    marked_every: float = MARKED_EVERY_SEC
    tick: float = 1.0

    @classmethod
    def of(cls, reads_per_minute: int, sample_every: float) -> VerifierOptions:
        """A marked node is read at least as often as a class is sampled: sampling every 5 s
        asks for a view fresher than the 10 s default."""
        marked = min(MARKED_EVERY_SEC, sample_every) if sample_every > 0 else MARKED_EVERY_SEC
        return cls(reads_per_minute, sample_every, marked, tick=min(1.0, marked))


@dataclass(frozen=True)
class _Targets:
    classes: tuple[PoolClass, ...] = ()
    marked: tuple[MarkedNode, ...] = ()
    serving: Serving = field(default_factory=Serving)
    instances: Mapping[str, str] = field(default_factory=dict)  # node -> its VM's URL
    kube_proxy_healthy: bool | None = None
    by_name: Mapping[str, PoolClass] = field(default_factory=dict)  # member -> its class


class LbVerifier:
    def __init__(
        self,
        gce: HealthSource,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        lease: ObjectRef,
        fire: Callable[[str], None],
        options: VerifierOptions,
        may_read: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._gce, self._metrics, self._record, self._lease = gce, metrics, record, lease
        self._fire, self._options, self._may_read, self._clock = fire, options, may_read, clock
        per_minute = options.reads_per_minute
        self._budget = ReadBudget(per_minute, clock) if per_minute > 0 else None
        self._lock = threading.Lock()
        self._targets = _Targets()
        self._readings: dict[tuple[str, str], HealthReading] = {}
        self._failing: set[PoolClass] = set()
        self._cut_reported: set[tuple[str, PoolClass]] = set()
        metrics.lb_health_read_budget.set(options.reads_per_minute)

    @property
    def max_age(self) -> float:
        """How old a reading may be and still count: a few periods, so one missed turn (the
        budget spent on marked nodes) does not make a class unverified."""
        return 3 * max(self._options.sample_every, self._options.marked_every)

    def view(self) -> LbHealthView:
        if self._budget is None:
            return LbHealthView(off="GCE's health view is off (lb_health_reads_per_minute: 0)")
        with self._lock:
            return LbHealthView(dict(self._readings), self._clock(), self.max_age, off="")

    def observe(self, report: StatusReport, instances: Mapping[str, str]) -> None:
        """The classes and nodes of the newest pass; `instances`: node -> its VM's URL."""
        classes = tuple(v.pool_class for v in report.pool_classes)
        marked = tuple(
            MarkedNode(n.node, n.drain.marked_at)
            for n in report.nodes
            if n.drain.marked_for_deletion
        )
        by_name = {p: c for c in classes for p in c.pools}
        targets = _Targets(
            classes,
            marked,
            Serving.of(serving_nodes(report)),
            instances,
            report.kube_proxy.healthy,
            by_name,
        )
        pools = by_name.keys()
        with self._lock:
            self._targets = targets
            self._readings = {
                key: r
                for key, r in self._readings.items()
                if key[0] in pools and key[1] in instances
            }

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self._options.tick):
            try:
                self.tick()
            except Exception:  # a reporting bug must never take the controller down
                log.exception("reading GCE's health view failed; trying again next tick")

    def tick(self) -> None:
        """The reads due now, as far as the budget goes."""
        if self._budget is None or not self._may_read():
            return
        with self._lock:
            targets, view = self._targets, LbHealthView(dict(self._readings), self._clock())
        reads = choose_reads(
            targets.classes,
            targets.marked,
            targets.serving,
            view,
            marked_every=self._options.marked_every,
            sample_every=self._options.sample_every,
        )
        changed: list[str] = []
        confirmed: dict[str, frozenset[str] | None] = {}
        calls = BackendCalls()
        made = 0
        for i, read in enumerate(reads):
            call = self._backend_call(read, targets)
            if call is None or calls.costs(call):  # several nodes of one group: one call
                if not self._budget.try_take():
                    self._metrics.lb_health_reads_deferred.inc(len(reads) - i)
                    break
                made += 1
            if call is None:
                reading = self._read(read, targets, confirmed)
            else:
                reading = self._read_backend(read, call, targets, calls)
            if reading is not None and self._store(reading, read, targets):
                changed.append(f"{read.node} {reading.state.value} in {read.pool}")
        if made:  # the classes change only with what was read
            changed = self._judge(targets) + changed  # a class's change says the most
        if changed:
            self._fire("GCE's health view changed: " + "; ".join(changed[:3]))

    # ---- one read ---------------------------------------------------------------------
    def _backend_call(self, read: HealthRead, targets: _Targets) -> BackendCall | None:
        """The backend service's call that answers for the node (None: a target pool's)."""
        pool_class = targets.by_name.get(read.pool)
        instance = targets.instances.get(read.node)
        if pool_class is None or pool_class.lb is not LbKind.BACKEND_SERVICE or instance is None:
            return None
        return backend_call(pool_class, read.pool, instance)

    def _read_backend(
        self, read: HealthRead, call: BackendCall, targets: _Targets, calls: BackendCalls
    ) -> HealthReading:
        answer = None
        if call.group:
            fresh = calls.costs(call)
            answer = calls.answer(call, self._gce.backend_health)
            if fresh:
                result = result_label(answer) if isinstance(answer, Exception) else "ok"
                self._metrics.lb_health_reads.labels(read.purpose.value, result).inc()
        return reading_of(call, read.node, targets.instances[read.node], answer, self._clock())

    def _read(
        self, read: HealthRead, targets: _Targets, confirmed: dict[str, frozenset[str] | None]
    ) -> HealthReading | None:
        instance = targets.instances.get(read.node)
        if instance is None:
            return None
        now = self._clock()
        try:
            states = self._gce.get_health(read.pool, instance)
        except Exception as exc:
            self._metrics.lb_health_reads.labels(read.purpose.value, result_label(exc)).inc()
            if status_of(exc) != _BAD_REQUEST:
                return HealthReading(
                    read.pool, read.node, InstanceHealth.UNKNOWN, now, None, str(exc)[:200]
                )
            return self._confirm(read, instance, now, confirmed)
        self._metrics.lb_health_reads.labels(read.purpose.value, "ok").inc()
        if not states:
            return HealthReading(
                read.pool, read.node, InstanceHealth.UNKNOWN, now, None, "no state"
            )
        healthy = all(s == "HEALTHY" for s in states)
        state = InstanceHealth.HEALTHY if healthy else InstanceHealth.UNHEALTHY
        return HealthReading(read.pool, read.node, state, now)

    def _confirm(
        self,
        read: HealthRead,
        instance: str,
        now: float,
        confirmed: dict[str, frozenset[str] | None],
    ) -> HealthReading:
        """getHealth refused the instance: read the pool's members (once a tick per pool,
        from the same budget) before calling it out of the pool."""
        if read.pool not in confirmed:
            members: frozenset[str] | None = None
            if self._budget is not None and self._budget.try_take():
                try:
                    members = self._gce.pool_instances(read.pool)
                    self._metrics.lb_health_reads.labels("membership", "ok").inc()
                except Exception as exc:
                    self._metrics.lb_health_reads.labels("membership", result_label(exc)).inc()
            confirmed[read.pool] = members
        members = confirmed[read.pool]
        if members is None:
            why = "getHealth refused it; the pool's instance list could not be read to confirm"
            return HealthReading(read.pool, read.node, InstanceHealth.UNKNOWN, now, None, why)
        if resource_path(instance) in members:
            why = "getHealth refused it, yet the pool lists it"
            return HealthReading(read.pool, read.node, InstanceHealth.UNKNOWN, now, None, why)
        return HealthReading(read.pool, read.node, InstanceHealth.NOT_MEMBER, now)

    def _store(self, reading: HealthReading, read: HealthRead, targets: _Targets) -> bool:
        """Keep the reading; True when its state differs from the last one."""
        key = (reading.pool, reading.node)
        pool_class = next((c for c in targets.classes if reading.pool in c.members), None)
        pools = pool_class.members if pool_class else frozenset((reading.pool,))
        with self._lock:
            before = self._readings.get(key)
            # The node's last reading in any pool of the class: pools are probed alike, so an
            # UNHEALTHY run goes on across the pools the rotation reads it in.
            last = LbHealthView(self._readings).newest_in(pools, reading.node)
            if reading.state is InstanceHealth.UNHEALTHY:
                since = (
                    last.unhealthy_since
                    if last is not None and last.state is InstanceHealth.UNHEALTHY
                    else reading.at
                )
                reading = replace(reading, unhealthy_since=since)
            self._readings[key] = reading
        if read.purpose is Purpose.MARKED and reading.state is InstanceHealth.NOT_MEMBER:
            self._cut(reading, before, pool_class, targets)
        return before is None or before.state is not reading.state

    def _cut(
        self,
        reading: HealthReading,
        before: HealthReading | None,
        pool_class: PoolClass | None,
        targets: _Targets,
    ) -> None:
        """A marked node GCE shows out of a class's pool: fine once that pool's check had time
        to mark it UNHEALTHY (or GCE was seen doing so); before that, its connections there
        were cut, since a target pool has no connection draining."""
        marked = next((m for m in targets.marked if m.name == reading.node), None)
        if pool_class is None or marked is None or (reading.node, pool_class) in self._cut_reported:
            return
        if pool_class.lb is not LbKind.TARGET_POOL:
            return  # a backend service's removal is judged by its connection draining
        self._cut_reported.add((reading.node, pool_class))
        at = marked.since
        if at is None:
            return
        # Drained: GCE called it UNHEALTHY there after the mark (before it, UNHEALTHY says only
        # that its check had not passed yet).
        if before is not None and before.state is InstanceHealth.UNHEALTHY and before.at >= at:
            return
        window = max(0.0, reading.at - at)
        if window >= pool_class.bound_seconds:
            return
        self._metrics.cut_before_drained.inc()
        note = (
            f"node {reading.node} was out of target pool {reading.pool} ({pool_class.describe()}) "
            f"at most {window:.0f} s after it was marked for deletion, before its check could "
            f"mark it UNHEALTHY (up to {pool_class.bound_seconds} s): the service controller's "
            "node sync took it out, and a target pool has no connection draining, so "
            "connections through it to this node were cut"
        )
        log.warning("%s", note)
        self._record(
            EventSpec(ObjectRef("Node", reading.node), CUT_BEFORE_DRAINED, "Drain", note, "Warning")
        )

    # ---- what the readings say --------------------------------------------------------
    def _judge(self, targets: _Targets) -> list[str]:
        view = self.view()
        counts = dict.fromkeys(ClassHealth, 0)
        failing: set[PoolClass] = set()
        changed: list[str] = []
        for pool_class in targets.classes:
            verdict = judge_class(
                pool_class, view, targets.serving.names, targets.kube_proxy_healthy, self.max_age
            )
            counts[verdict.health] += 1
            if verdict.health is not ClassHealth.FAILING_OPEN:
                continue
            failing.add(pool_class)
            if pool_class not in self._failing:
                note = f"{pool_class.describe()} fail open: {verdict.reason}"
                log.warning("%s", note)
                self._record(
                    EventSpec(self._lease, HEALTH_CHECK_CANNOT_PASS, "Sample", note, "Warning")
                )
                changed.append(f"{pool_class.describe()} failing open")
        changed += [f"{c.describe()} no longer failing open" for c in self._failing - failing]
        self._failing = failing
        for health, n in counts.items():
            self._metrics.pool_classes.labels(health.value).set(n)
        self._metrics.pools_failing_open.set(sum(len(c.pools) for c in failing))
        return changed
