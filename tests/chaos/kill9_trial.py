"""One kill -9 trial: seed the fakes, start `lbhc run` as a process, SIGKILL it at a seeded
point of its apply, start the successor (a restart with the same or a new identity, a standby
replica already running, or no leader election), wait for convergence and judge the result.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lbhc.sandbox.compute_fake import ComputeFake, JournalEntry
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.chaos import kill9_checks as checks
from tests.chaos.kill9_scenario import Phase, Scenario, build
from tests.chaos.kill9_switch import HookedComputeServer, Kill, KillPoint, KillSwitch, Moment
from tests.chaos.kill9_world import Seeded, our_check_url, seed_world
from tests.chaos.process import LbhcProcess, ProcessGroup, RunFlags
from tests.controller.harness import PROJECT, REGION, wait_for

Restart = Literal["same-identity", "new-identity", "standby", "no-election"]
RESTARTS: tuple[Restart, ...] = ("same-identity", "new-identity", "standby", "no-election")

OPERATION_LATENCY = 0.25  # operations stay PENDING/RUNNING this long: kills land mid-flight
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD, RESYNC = 3.0, 2.0, 0.25, 2.0
# Generous bounds derived from the settings, never speed claims: a cold `lbhc run` start on
# a loaded 2-core machine, the Lease a killed leader never released, a few failed passes
# under the controller's backoff (1 + 2 + 4 + 8 s), and resyncs.
START_ALLOWANCE = 45.0
CONVERGE_TIMEOUT = START_ALLOWANCE + LEASE_DURATION + 15.0 + 4 * RESYNC
KILL_TIMEOUT = START_ALLOWANCE + 60 * OPERATION_LATENCY


@dataclass(frozen=True)
class TrialSpec:
    seed: int
    phase: Phase
    moment: Moment
    restart: Restart

    def __str__(self) -> str:
        return f"seed{self.seed}-{self.phase}-{self.moment}-{self.restart}"


@dataclass(frozen=True)
class TrialResult:
    spec: TrialSpec
    scenario: Scenario
    point: KillPoint
    kill: Kill
    converge_s: float
    verdict: checks.Verdict


def kill_point(scenario: Scenario, spec: TrialSpec) -> KillPoint:
    rng = random.Random(spec.seed * 31 + 7)
    positions = scenario.mutations_in(spec.phase)
    assert positions, f"{spec}: scenario has no {spec.phase} work: {scenario}"
    delay = rng.uniform(0.0, OPERATION_LATENCY) if spec.moment == "delay" else 0.0
    return KillPoint(rng.choice(positions), spec.moment, delay)


def flags(scenario: Scenario, spec: TrialSpec) -> RunFlags:
    settings = {
        "LBHC_GCE_BACKOFF_INITIAL_SEC": "0.05",
        "LBHC_GCE_BACKOFF_MAX_SEC": "0.5",
        "LBHC_REPLACE_FOREIGN_HEALTH_CHECKS": str(scenario.replace_foreign).lower(),
    }
    return RunFlags(
        project=PROJECT,
        region=REGION,
        leader_elect=spec.restart != "no-election",
        lease_duration=f"{LEASE_DURATION}s",
        renew_deadline=f"{RENEW_DEADLINE}s",
        retry_period=f"{RETRY_PERIOD}s",
        resync_period=f"{RESYNC}s",
        settings=settings,
    )


def run_trial(spec: TrialSpec, workdir: Path) -> TrialResult:
    scenario = build(spec.seed, spec.phase)
    point = kill_point(scenario, spec)
    kube, compute = KubeFake(), ComputeFake()
    seeded = seed_world(scenario, kube, compute, spec.seed)
    compute.operation_latency = OPERATION_LATENCY
    compute.clear_journal()
    before = checks.untouchable(compute, scenario, seeded)
    switch = KillSwitch(our_check_url())
    try:
        with (
            HookedComputeServer(compute, switch) as compute_server,
            KubeFakeServer(kube) as kube_server,
        ):
            kubeconfig = kube_server.write_kubeconfig(workdir / "kubeconfig")
            with ProcessGroup(workdir, kubeconfig, compute_server.url) as group:
                kill, victim, successor = _kill_and_restart(
                    spec, scenario, point, kube, group, switch
                )
                converge_s = _converge(compute, scenario, seeded, successor, kill)
                code = successor.terminate()
                assert code == 0, f"{spec}: successor exited {code}\n{successor.log_tail()}"
    finally:
        switch.close()
    verdict = _judge(compute, scenario, seeded, before, kill, (victim, successor))
    return TrialResult(spec, scenario, point, kill, converge_s, verdict)


def _kill_and_restart(
    spec: TrialSpec,
    scenario: Scenario,
    point: KillPoint,
    kube: KubeFake,
    group: ProcessGroup,
    switch: KillSwitch,
) -> tuple[Kill, LbhcProcess, LbhcProcess]:
    run = flags(scenario, spec)
    victim_id = f"lbhc-{spec.seed}-a"
    successor_id = victim_id if spec.restart == "same-identity" else f"lbhc-{spec.seed}-b"
    if spec.restart == "standby":
        switch.gate.clear()  # the victim's writes wait until the standby is up
    victim = group.start(victim_id, run)
    switch.arm(victim, point)
    standby: LbhcProcess | None = None
    if spec.restart == "standby":
        wait_for(
            lambda: _holder(kube) == victim_id or not victim.alive(),
            timeout=START_ALLOWANCE,
            what="the victim to hold the Lease",
        )
        standby = group.start(successor_id, run)
        wait_for(
            lambda: standby.get("/readyz")[0] == 200 or not standby.alive(),
            timeout=START_ALLOWANCE,
            what="the standby replica's caches to sync",
        )
        switch.gate.set()
    wait_for(
        lambda: switch.fired.is_set() or not victim.alive(),
        timeout=KILL_TIMEOUT,
        what=f"{spec}: the victim to reach mutation {point.mutation} of {scenario}",
    )
    assert switch.kill is not None, f"{spec}: the victim died on its own\n{victim.log_tail()}"
    victim.kill9()  # reaped before anything else starts
    successor = standby or group.start(successor_id, run)
    return switch.kill, victim, successor


def _holder(kube: KubeFake) -> str:
    lease = kube.get("Lease", "lbhc-system", "lbhc")
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def _converge(
    compute: ComputeFake, scenario: Scenario, seeded: Seeded, successor: LbhcProcess, kill: Kill
) -> float:
    """Seconds from the restart (the successor's start, or the kill for a standby already
    running) until the cloud is what the cluster needs; then lbhc must agree: a pass of its
    own plans nothing more and withholds nothing."""
    restarted = max(successor.started_at, kill.at)
    try:
        wait_for(
            lambda: not checks.convergence_problems(compute, scenario, seeded),
            timeout=CONVERGE_TIMEOUT,
            what="convergence",
        )
    except AssertionError:
        problems = checks.convergence_problems(compute, scenario, seeded)
        raise AssertionError(
            f"not converged after {CONVERGE_TIMEOUT:.0f} s: {problems}\n{successor.log_tail()}"
        ) from None
    converged = time.monotonic() - restarted
    wait_for(
        lambda: _plans_nothing(successor),
        timeout=START_ALLOWANCE + 3 * RESYNC,
        what=f"the successor's own plan to be empty\n{successor.log_tail()}",
    )
    return converged


def _plans_nothing(process: LbhcProcess) -> bool:
    plan = process.last_plan()
    return plan is not None and not plan["changes"] and not plan.get("withheld")


def _judge(
    compute: ComputeFake,
    scenario: Scenario,
    seeded: Seeded,
    before: checks.Untouchable,
    kill: Kill,
    processes: tuple[LbhcProcess, LbhcProcess],
) -> checks.Verdict:
    journal = compute.journal
    verdict = checks.touched(before, checks.untouchable(compute, scenario, seeded), journal)
    verdict.leaked = checks.leaked(compute, scenario, seeded)
    verdict.missing = checks.missing(compute, scenario, seeded)
    verdict.duplicates = checks.duplicates(compute)
    verdict.out_of_order = checks.out_of_order(compute)
    verdict.wrong_writer = _wrong_writers(journal, kill, *processes)
    return verdict


def _wrong_writers(
    journal: list[JournalEntry], kill: Kill, victim: LbhcProcess, successor: LbhcProcess
) -> list[str]:
    """Only the two processes write; a successor with its own identity (a standby) writes
    nothing while the victim lives. (The fake's clock is this process's monotonic clock.)"""
    out: list[str] = []
    for entry in (e for e in journal if e.mutating):
        what = f"{entry.method} {entry.path} by {entry.client_id!r}"
        if entry.client_id not in (victim.identity, successor.identity):
            out.append(what)
        elif entry.client_id != victim.identity and entry.time < kill.at:
            out.append(f"{what} before the leader was killed")
    return out
