"""One kill -9 trial: seed the fakes, start `lbhc run` as a process, SIGKILL it at a seeded
point of its apply, start the successor (a restart with the same or a new identity, a standby
replica already running, or no leader election), wait for convergence and judge the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from lbhc.cli import main
from lbhc.model.cloud import http_health_check_url
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.chaos import kill9_checks as checks
from tests.chaos.kill9_monitor import SafetyMonitor
from tests.chaos.kill9_scenario import Scenario, build
from tests.chaos.kill9_spec import (
    FAST_LATENCY,
    RESYNC,
    START_ALLOWANCE,
    TrialSpec,
    flags,
    kill_point,
)
from tests.chaos.kill9_switch import HookedComputeServer, Kill, KillPoint, KillSwitch
from tests.chaos.kill9_world import CLUSTER_ID, UPSTREAM_CHECK, Seeded, our_check_url, seed_world
from tests.chaos.process import LbhcProcess, ProcessGroup
from tests.controller.harness import PROJECT, REGION
from tests.waiting import wait_for


@dataclass(frozen=True)
class TrialResult:
    spec: TrialSpec
    scenario: Scenario
    point: KillPoint
    kill: Kill
    converge_s: float
    in_flight: bool  # the successor started while the victim's operations were running
    verdict: checks.Verdict


@dataclass(frozen=True)
class _Run:
    kill: Kill
    victim: LbhcProcess
    successor: LbhcProcess

    @property
    def restarted(self) -> float:
        """The successor's start, or the kill for a standby already running."""
        return max(self.successor.started_at, self.kill.at)


def run_trial(spec: TrialSpec, workdir: Path) -> TrialResult:
    scenario = build(spec.seed, spec.phase)
    point = kill_point(scenario, spec)
    kube, compute = KubeFake(), ComputeFake()
    seeded = seed_world(scenario, kube, compute, spec.seed)
    compute.operation_latency = FAST_LATENCY
    compute.clear_journal()
    before = checks.untouchable(compute, scenario, seeded)
    switch = KillSwitch(our_check_url(), compute)
    try:
        with (
            HookedComputeServer(compute, switch) as compute_server,
            KubeFakeServer(kube) as kube_server,
            SafetyMonitor(compute) as monitor,
        ):
            kubeconfig = kube_server.write_kubeconfig(workdir / "kubeconfig")
            with ProcessGroup(workdir, kubeconfig, compute_server.url) as group:
                run = _kill_and_restart(spec, scenario, point, kube, group, switch)
                converge_s = _converge(spec, compute, scenario, seeded, run)
                code = run.successor.terminate()
                assert code == 0, f"{spec}: successor exited {code}\n{run.successor.log_tail()}"
    finally:
        switch.close()
    journal = compute.journal
    verdict = checks.touched(before, checks.untouchable(compute, scenario, seeded), journal)
    verdict.leaked = checks.leaked(compute, scenario, seeded)
    verdict.missing = checks.missing(compute, scenario, seeded)
    verdict.duplicates = checks.duplicates(compute)
    verdict.unsafe = monitor.violations
    victim, successor = run.victim.identity, run.successor.identity
    verdict.wrong_writer = checks.wrong_writers(journal, run.kill.at, victim, successor)
    in_flight = checks.saw_in_flight(
        journal, run.kill.landed_at, spec.kth_latency, successor, run.restarted
    )
    if scenario.takeover:
        verdict.not_given_back = _teardown(compute, seeded)
    return TrialResult(spec, scenario, point, run.kill, converge_s, in_flight, verdict)


def _teardown(compute: ComputeFake, seeded: Seeded) -> list[str]:
    """The uninstall an operator would run next: GCE access only, this cluster's id (the
    project holds another lbhc cluster's check too)."""
    with ComputeFakeServer(compute) as server:
        code = main(
            [
                *("teardown", "--project", PROJECT, "--region", REGION),
                *("--cluster-id", CLUSTER_ID, "--gce-endpoint", server.url),
            ]
        )
    problems = [] if code == 0 else [f"lbhc teardown exited {code}"]
    return problems + checks.after_teardown(
        compute, seeded, http_health_check_url(PROJECT, UPSTREAM_CHECK)
    )


def _kill_and_restart(
    spec: TrialSpec,
    scenario: Scenario,
    point: KillPoint,
    kube: KubeFake,
    group: ProcessGroup,
    switch: KillSwitch,
) -> _Run:
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
    try:
        wait_for(
            lambda: switch.fired.is_set() or not victim.alive(),
            timeout=spec.kill_timeout,
            what=f"{spec}: the victim to reach mutation {point.mutation} of {scenario}",
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{victim.log_tail()}") from None
    assert switch.kill is not None, f"{spec}: the victim died on its own\n{victim.log_tail()}"
    victim.kill9()  # reaped before anything else starts
    return _Run(switch.kill, victim, standby or group.start(successor_id, run))


def _holder(kube: KubeFake) -> str:
    lease = kube.get("Lease", "lbhc-system", "lbhc")
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def _converge(
    spec: TrialSpec, compute: ComputeFake, scenario: Scenario, seeded: Seeded, run: _Run
) -> float:
    """Seconds from the restart until the cloud is what the cluster needs; then lbhc must
    agree: a pass of its own plans nothing more and withholds nothing."""
    try:
        wait_for(
            lambda: not checks.convergence_problems(compute, scenario, seeded),
            timeout=spec.converge_timeout,
            what="convergence",
        )
    except AssertionError:
        problems = checks.convergence_problems(compute, scenario, seeded)
        raise AssertionError(
            f"{spec}: not converged after {spec.converge_timeout:.0f} s: {problems}\n"
            f"{run.successor.log_tail()}"
        ) from None
    converged = time.monotonic() - run.restarted
    wait_for(
        lambda: _plans_nothing(run.successor),
        timeout=START_ALLOWANCE + 3 * RESYNC,
        what=f"the successor's own plan to be empty\n{run.successor.log_tail()}",
    )
    return converged


def _plans_nothing(process: LbhcProcess) -> bool:
    plan = process.last_plan()
    return plan is not None and not plan["changes"] and not plan.get("withheld")
