"""One seeded soak: the world, foreign resources, the controller, the monitor; then `steps`
times (faults injected, churn, faults held, faults lifted, the cloud judged converged within
a bound derived from settings, the promises checked); then a converged controller must stay
still for two more passes, and with every Service deleted nothing of ours may remain."""

from __future__ import annotations

import logging
import random
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from lbhc.model.cloud import instance_url
from lbhc.model.cluster import Node
from tests.chaos.soak_churn import Churn
from tests.chaos.soak_faults import FaultMix
from tests.chaos.soak_foreign import Foreign
from tests.chaos.soak_journal import wrong_gce_writes, wrong_kube_writes
from tests.chaos.soak_monitor import BlackHoleMonitor, Tally
from tests.chaos.soak_oracle import Oracle, eligible_pools, ours, shared_problems
from tests.chaos.soak_world import IDENTITY, SoakOptions, SoakWorld
from tests.waiting import wait_for

log = logging.getLogger(__name__)


class SoakFailed(AssertionError):
    pass


@dataclass
class Step:
    index: int
    faults: list[str]
    actions: list[str]
    converge_s: float = 0.0  # from the faults' lift
    settle_s: float = 0.0  # from the churn (faults included)


@dataclass
class SoakResult:
    seed: int
    steps: list[Step] = field(default_factory=list)
    injected: Counter[str] = field(default_factory=Counter)
    hits: Counter[str] = field(default_factory=Counter)
    tally: Tally = field(default_factory=Tally)
    foreign_touched: list[str] = field(default_factory=list)
    wrong_writes: list[str] = field(default_factory=list)
    lbhc_kube_writes: int = 0  # its Lease and Events: proof the audit sees lbhc's writes
    leaked: int = 0
    gc_s: float = 0.0
    mutations: int = 0  # successful GCE mutations by lbhc over the run
    fallback_steps: int = 0  # steps that converged in version-skew fallback (no check anywhere)
    fallback_entered: int = 0
    shared_created: int = 0  # the check created (again) after garbage collection
    shared_deleted: int = 0
    wall_s: float = 0.0

    def figures(self) -> dict[str, Any]:
        """What tests.chaos.record keeps for docs/reliability.md."""
        times = [s.converge_s for s in self.steps]
        settle = [s.settle_s for s in self.steps]
        by_class: dict[str, list[Step]] = defaultdict(list)
        for step in self.steps:
            for name in step.faults or ["none"]:
                by_class[name].append(step)
        return {
            "seed": self.seed,
            "steps": len(self.steps),
            "faults_injected": sum(self.injected.values()),
            "by_fault": dict(sorted(self.injected.items())),
            "fault_hits": dict(sorted(self.hits.items())),
            "converge_s_median": round(statistics.median(times), 3) if times else 0.0,
            "converge_s_max": round(max(times), 3) if times else 0.0,
            "settle_s_median": round(statistics.median(settle), 3) if settle else 0.0,
            "settle_s_max": round(max(settle), 3) if settle else 0.0,
            # [median, max] per fault class ("none": churn alone)
            "converge_s_by_fault": _spread(by_class, lambda s: s.converge_s),
            "settle_s_by_fault": _spread(by_class, lambda s: s.settle_s),
            "black_hole_instants": self.tally.black_holes,
            "check_without_firewall_instants": self.tally.unguarded,
            "instants_checked": self.tally.instants,
            "all_unhealthy_instants_drained": self.tally.excused_drained,
            "all_unhealthy_instants_in_grace": self.tally.excused_grace,
            "foreign_touched": len(self.foreign_touched),
            "wrong_writer_mutations": len(self.wrong_writes),
            "leaked": self.leaked,
            "gc_s": round(self.gc_s, 3),
            "fallback_steps": self.fallback_steps,
            "fallback_entered": self.fallback_entered,
            "check_created": self.shared_created,
            "check_deleted": self.shared_deleted,
            "lbhc_gce_mutations": self.mutations,
            "lbhc_kube_writes": self.lbhc_kube_writes,
            "wall_s": round(self.wall_s, 1),
        }


def _spread(
    by_class: dict[str, list[Step]], value: Callable[[Step], float]
) -> dict[str, list[float]]:
    return {
        name: [round(statistics.median(map(value, steps)), 3), round(max(map(value, steps)), 3)]
        for name, steps in sorted(by_class.items())
    }


class Soak:
    def __init__(self, seed: int, steps: int, options: SoakOptions | None = None) -> None:
        self.seed, self.step_count = seed, steps
        self.options = options or SoakOptions()
        self.rng = random.Random(seed)
        self.result = SoakResult(seed)
        self.history: list[str] = []  # what happened, for a failure's message
        self._in_fallback = False

    def run(self) -> SoakResult:
        started = time.monotonic()
        with SoakWorld(self.options) as world:
            self.world = world
            spec = world.spec
            nodes = [Node.model_validate(n) for n in world.kube.objects("Node")]
            self.foreign = Foreign(spec.project, spec.region)
            self.foreign.seed(
                world.compute, [instance_url(n, spec.project, spec.zone) for n in nodes[:2]]
            )
            self.gce_mark, self.kube_mark = len(world.compute.journal), len(world.kube.journal)
            assert world.settings is not None
            self.oracle = Oracle(
                world.settings, world.kube_url, world.kube, world.compute, current=spec.current
            )
            self.churn = Churn(world.kube, spec, self.rng)
            self.faults = FaultMix(world.compute, world.kube, self.rng)
            if self.oracle.verdict().converged:  # else the oracle could not see a thing
                self._fail("the sandbox looks converged before lbhc ever ran")
            world.start_controller()
            monitor = BlackHoleMonitor(world).start()
            try:
                self._converge("start")
                for index in range(1, self.step_count + 1):
                    self._step(index, monitor)
                self._stays_still()
                self._garbage_collected(monitor)
            except BaseException:
                self.faults.lift()
                monitor.stop(check=False)
                raise
            self.result.tally = monitor.stop()
            self._audit_writes()
        self.result.injected = self.faults.injected
        self.result.hits = self.faults.hits
        self.result.wall_s = time.monotonic() - started
        return self.result

    # -- a step ---------------------------------------------------------------------------

    def _step(self, index: int, monitor: BlackHoleMonitor) -> None:
        faults = self.faults.inject()
        acted = time.monotonic()
        actions = self.churn.step()
        monitor.judge_now()
        step = Step(index, faults, actions)
        self.history.append(f"step {index}: faults {faults or 'none'}; " + "; ".join(actions))
        log.info("soak %s", self.history[-1])
        # The faults last a while (that is the fault, not a wait for anything): long enough
        # for the controller to react to the churn through them.
        window = self.rng.uniform(0.3, 1.5)
        time.sleep(window / 2)
        self.faults.during(faults)
        time.sleep(window / 2)
        self.faults.lift()
        step.converge_s = self._converge(f"step {index}")
        step.settle_s = step.converge_s + (self._lifted - acted)
        self.result.steps.append(step)
        self._check_promises(f"step {index}")

    def _converge(self, when: str) -> float:
        """Seconds from now (faults lifted) until the cloud is in the planner's desired state,
        to the start of the read that showed it (reads take tenths of a second)."""
        lifted = self._lifted = time.monotonic()
        deadline = lifted + self.world.converge_bound()
        while True:
            asked = time.monotonic()
            verdict = self.oracle.verdict()
            if verdict.converged:
                log.info("soak: converged after %s in %.2f s", when, asked - lifted)
                return asked - lifted
            if time.monotonic() > deadline:
                self._fail(
                    f"not converged {deadline - lifted:.0f} s after {when}: {verdict.describe()}"
                )
            time.sleep(0.05)

    def _check_promises(self, when: str) -> None:
        world, spec = self.world, self.world.spec
        verdict = self.oracle.verdict()
        if verdict.unsettled:
            # The cloud provider began on the step only after convergence was seen (under
            # load, a Cluster<->Local flip recreates the pool a moment later): lbhc is judged
            # once it has caught up, not in the middle of its recreation.
            self._converge(f"{when}, once the cloud provider caught up")
            verdict = self.oracle.verdict()
        if not verdict.converged or verdict.plan is None:
            self._fail(f"after {when}, no longer converged: {verdict.describe()}")
        found = ours(world.compute, spec.project, spec.region, world.cluster_id, world.check_url)
        eligible = eligible_pools(
            world.kube, world.compute, spec.project, spec.region, world.check_url
        )
        fallback = verdict.plan.fallback is not None
        if fallback and eligible:
            self.result.fallback_steps += 1
            self.result.fallback_entered += not self._in_fallback
        self._in_fallback = fallback and bool(eligible)
        problems, leaked = shared_problems(found, eligible, world.check_name, fallback=fallback)
        changed = self.foreign.changed(world.compute)
        if changed:
            problems.append(f"foreign resources changed: {changed}")
        if problems or leaked:
            self._fail(f"after {when}: {'; '.join(problems)} (leaked {leaked})")

    # -- the end --------------------------------------------------------------------------

    def _stays_still(self) -> None:
        """Converged, lbhc changes nothing: two more passes (one at least a resync) and no
        GCE mutation of its own, nor any change the oracle would plan."""
        world = self.world
        mark, passes = len(world.compute.journal), world.passes()
        bound = 2 * self.options.resync_period + world.converge_bound()
        wait_for(lambda: world.passes() >= passes + 2, bound, "two more passes")
        moved = [e for e in world.compute.journal[mark:] if e.mutating and e.client_id == IDENTITY]
        if moved:
            self._fail(f"converged, yet lbhc wrote: {[f'{e.method} {e.path}' for e in moved]}")
        self._check_promises("two idle passes")

    def _garbage_collected(self, monitor: BlackHoleMonitor) -> None:
        world, spec = self.world, self.world.spec
        for obj in world.kube.objects("Service"):
            meta = obj["metadata"]
            if not meta.get("deletionTimestamp"):
                world.kube.delete("Service", meta["namespace"], meta["name"])
        monitor.judge_now()
        self.history.append("every Service deleted")
        self.result.gc_s = self._converge("every Service deleted")
        found = ours(world.compute, spec.project, spec.region, world.cluster_id, world.check_url)
        _, self.result.leaked = shared_problems(found, set(), world.check_name, fallback=False)
        self._check_promises("every Service deleted")

    def _audit_writes(self) -> None:
        world = self.world
        gce = world.compute.journal[self.gce_mark :]
        kube = world.kube.journal[self.kube_mark :]
        self.result.foreign_touched = [f"{e.method} {e.path}" for e in self.foreign.touched(gce)]
        self.result.wrong_writes = wrong_gce_writes(
            gce,
            identity=IDENTITY,
            check_name=world.check_name,
            service_pools=self.churn.service_pools,
        ) + wrong_kube_writes(kube)
        self.result.lbhc_kube_writes = sum(
            1 for e in kube if e.user_agent and e.method in ("POST", "PUT", "PATCH", "DELETE")
        )
        done = [e for e in gce if e.mutating and e.client_id == IDENTITY and e.status < 300]
        self.result.mutations = len(done)
        checks = "/global/httpHealthChecks"
        created = [e for e in done if e.method == "POST" and e.path.endswith(checks)]
        deleted = [e for e in done if e.method == "DELETE" and f"{checks}/" in e.path]
        self.result.shared_created, self.result.shared_deleted = len(created), len(deleted)

    def _fail(self, what: str) -> NoReturn:
        recent = "\n  ".join(self.history[-8:])
        raise SoakFailed(f"seed {self.seed}: {what}\nlast steps:\n  {recent}")
