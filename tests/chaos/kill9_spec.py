"""What a kill -9 trial is (seed, where the kill lands, what follows it) and its timings."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from tests.chaos.kill9_scenario import Phase, Scenario
from tests.chaos.kill9_switch import KillPoint, Moment
from tests.chaos.process import RunFlags
from tests.controller.harness import PROJECT, REGION

Restart = Literal["same-identity", "new-identity", "standby", "no-election"]
RESTARTS: tuple[Restart, ...] = ("same-identity", "new-identity", "standby", "no-election")

# Operations stay PENDING/RUNNING this long, so kills land while they are in flight. In a
# slow trial the k-th mutation's operation outlives the successor's start: the successor
# reads a cloud still changing, and its own operations finish before the victim's.
FAST_LATENCY, SLOW_LATENCY = 0.25, 10.0
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD, RESYNC = 3.0, 2.0, 0.25, 2.0
# Generous bounds derived from the settings, never speed claims: a cold `lbhc run` start on
# a loaded 2-core machine, the Lease a killed leader never released, a few failed passes
# under the controller's backoff (1 + 2 + 4 + 8 s), resyncs, and the serial steps of an
# apply (firewall, check, attaches, detaches, check delete, firewall delete) at the latency.
START_ALLOWANCE = 45.0
_STEPS = 6

# The executor step a kill in each phase may hit (attaches and replacements run
# concurrently in one step, so either half of a replacement may be k-th).
KILLED_IN: dict[Phase, frozenset[str]] = {
    "ensure": frozenset({"ensure"}),
    "attach": frozenset({"attach", "replace"}),
    "replace": frozenset({"attach", "replace"}),
    "detach": frozenset({"detach"}),
    "delete": frozenset({"delete"}),
}


@dataclass(frozen=True)
class TrialSpec:
    seed: int
    phase: Phase
    moment: Moment
    restart: Restart
    slow: bool = False

    def __str__(self) -> str:
        speed = "-slow" if self.slow else ""
        return f"seed{self.seed}-{self.phase}-{self.moment}-{self.restart}{speed}"

    @property
    def kth_latency(self) -> float:
        """How long the k-th mutation's operation stays in flight."""
        return SLOW_LATENCY if self.slow else FAST_LATENCY

    @property
    def kill_timeout(self) -> float:
        return START_ALLOWANCE + 2 * _STEPS * FAST_LATENCY + self.kth_latency

    @property
    def converge_timeout(self) -> float:
        apply = 2 * _STEPS * FAST_LATENCY + self.kth_latency
        return START_ALLOWANCE + LEASE_DURATION + 15.0 + 4 * RESYNC + apply


def kill_point(scenario: Scenario, spec: TrialSpec) -> KillPoint:
    """The k-th mutation, seeded, among those of the spec's phase in an uninterrupted apply."""
    rng = random.Random(spec.seed * 31 + 7)
    positions = scenario.mutations_in(spec.phase)
    assert positions, f"{spec}: scenario has no {spec.phase} work: {scenario}"
    delay = rng.uniform(0.0, spec.kth_latency) if spec.moment == "delay" else 0.0
    return KillPoint(rng.choice(positions), spec.moment, delay, spec.kth_latency)


def flags(scenario: Scenario, spec: TrialSpec) -> RunFlags:
    settings = {
        "LBHC_GCE_BACKOFF_INITIAL_SEC": "0.05",
        "LBHC_GCE_BACKOFF_MAX_SEC": "0.5",
        "LBHC_HEALTH_CHECK_MODE": "takeover" if scenario.takeover else "coexist",
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
