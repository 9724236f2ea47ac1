"""The vocabulary of the Compute fault cases: how big a run is, what a case arms, and what
it tells the runner to expect. The cases themselves live in compute_cases_*.py."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lbhc.model.cloud import firewall_to_json, health_check_to_json
from lbhc.planner.planner import resolve_cluster_id
from lbhc.planner.shared import desired_firewall, desired_health_check
from lbhc.sandbox.compute_fake import JournalEntry
from tests.chaos.compute_checks import bound_sec, cluster_snapshot, wait_converged
from tests.chaos.compute_world import FaultWorld
from tests.controller.harness import NAME

ATTEMPTS = 6  # gce_max_attempts (the default), stated so every budget derives from it
START: dict[str, Any] = {"gce_max_attempts": ATTEMPTS}
OP_TIMEOUT = 1.0  # gce_operation_timeout_sec where operations stall
REQUEST_TIMEOUT = 1.0  # the GCE client's per-request timeout where requests are slow


@dataclass(frozen=True)
class Scale:
    name: str
    cluster: int  # Cluster-policy Services
    local: int  # Local-policy Services
    seeds: tuple[int, ...]
    burst: tuple[int, int]  # a burst fails between these many times gce_max_attempts
    stable_passes: int  # passes that must change nothing once converged
    spike: float  # seconds added to every request in a latency spike
    op_latency: float  # seconds every operation takes in an operation-latency spike
    stall: float  # seconds a stalled operation stays RUNNING (finite stalls)


SCALES = {
    "short": Scale("short", 2, 1, (0,), (1, 1), 2, 0.1, 0.3, 2.0),
    "full": Scale("full", 8, 2, (11, 12, 13), (2, 3), 4, 0.4, 1.5, 5.0),
}


@dataclass
class Run:
    """What an armed case lets the runner expect. `changes`: mutations a clean run of the
    whole case needs; `failed_passes`: the most passes its faults can fail (each derived
    in the case); `waits`: seconds the faults hold lbhc up; `fault_end`: when the fault
    ended (a hand change, a resolution), else the last error answer lbhc got."""

    changes: int
    failed_passes: int = 0
    waits: float = 0.0
    resync: bool = False
    creations: dict[str, int] | None = None
    conflict_pools: tuple[str, ...] = ()
    fault_end: float = 0.0
    during: bool = False  # the fault lasts through convergence: timed from the start
    world_faults: int = 0  # faults made by the world (hand changes), not counted by the fake
    replaces: str | None = None  # a foreign check lbhc may take off (replace setting on)
    check: Callable[[FaultWorld], None] | None = None
    figures: dict[str, object] = field(default_factory=dict)


Arm = Callable[[FaultWorld, random.Random, Scale], Run]


@dataclass(frozen=True)
class Case:
    id: str
    fault_class: str  # the fault class the report groups runs by
    arm: Arm
    short: bool = True  # also part of make test (small, one seed)
    max_seeds: int | None = None  # the slowest cases run fewer seeds


# ---- helpers the cases share ---------------------------------------------------------
def clean_changes(fw: FaultWorld) -> int:
    """Firewall, check, and one attach per Cluster pool."""
    return 2 + len(fw.cluster_pools)


def converge_first(fw: FaultWorld, settings: dict[str, Any] | None = None, **options: Any) -> None:
    fw.start({**START, **(settings or {})}, **options)
    bound = bound_sec(fw.settings, failed_passes=0, calls=clean_changes(fw))
    wait_converged(fw, bound, "before the fault")


def desired_body(fw: FaultWorld, collection: str) -> dict[str, object]:
    """Our shared resource as the planner wants it: what an earlier insert would have sent."""
    config = fw.settings.planner_config()
    cluster_id = resolve_cluster_id(cluster_snapshot(fw), config)
    if collection == "firewalls":
        return firewall_to_json(desired_firewall(NAME, cluster_id, config))
    return health_check_to_json(desired_health_check(NAME, cluster_id, config))


def removals(fw: FaultWorld) -> list[JournalEntry]:
    return [
        m
        for m in fw.lbhc_mutations()
        if m.method == "DELETE" or m.path.endswith("removeHealthCheck")
    ]


def no_removal(fw: FaultWorld) -> None:
    """Failures while attaching never make lbhc take anything away."""
    assert removals(fw) == [], [(m.method, m.path) for m in removals(fw)]


def now() -> float:
    return time.monotonic()
