"""Compute API faults against the real controller over real HTTP. Every fault
class ends converged to the planner's desired state, or in a reported, stable conflict,
inside a bound derived from the settings and the fault, within the retry budget, with no
duplicate shared resource and nothing foreign touched. `make test` runs the cases marked
short, small and with one seed; `make chaos` runs every case larger, with several seeds and
longer bursts, and records the figures (tests.chaos.record)."""

from __future__ import annotations

import json
import random
import time
import uuid

import pytest

# The cases assert inside helper modules: have pytest explain those failures too, which
# must happen before they are imported (hence the file-wide E402 below).
# ruff: noqa: E402
pytest.register_assert_rewrite(
    "tests.chaos.compute_cases",
    "tests.chaos.compute_cases_errors",
    "tests.chaos.compute_cases_hand",
    "tests.chaos.compute_cases_world",
    "tests.chaos.compute_checks",
)

from tests.chaos.compute_cases import SCALES, Case, Scale, converge_first, desired_body
from tests.chaos.compute_cases_errors import CASES as ERROR_CASES
from tests.chaos.compute_cases_hand import CASES as HAND_CASES
from tests.chaos.compute_cases_world import CASES as WORLD_CASES
from tests.chaos.compute_checks import (
    SLACK_SEC,
    URL,
    assert_budget,
    assert_stable,
    bound_sec,
    duplicates,
    foreign_touches,
    problems,
    wait_converged,
    wait_passes,
)
from tests.chaos.compute_world import (
    API,
    FOREIGN_CHECK,
    IDENTITY,
    OTHER_CLUSTER,
    OTHER_REGION,
    RESYNC_SEC,
    FaultWorld,
    fault_world,
)
from tests.chaos.record import record
from tests.controller.harness import NAME, PROJECT
from tests.waiting import wait_for

CASES = ERROR_CASES + WORLD_CASES + HAND_CASES


def run_case(case: Case, scale: Scale, seed: int) -> None:
    rng = random.Random(f"{case.id}/{seed}")
    with fault_world() as fw:
        fw.add_services(scale.cluster, scale.local)
        started = time.monotonic()
        run = case.arm(fw, rng, scale)
        bound = bound_sec(
            fw.settings,
            failed_passes=run.failed_passes,
            calls=run.changes,
            waits=run.waits,
            resync=RESYNC_SEC if run.resync else 0.0,
        )
        converged_at = wait_converged(fw, bound, case.id, run.conflict_pools)
        if run.check is not None:
            run.check(fw)
        fault_end = (
            started if run.during else max(run.fault_end, fw.compute.faults.last_ended(), started)
        )
        assert_stable(fw, scale.stable_passes, run.conflict_pools)

        failed = fw.failed_passes()
        assert failed <= run.failed_passes, (
            f"{failed} failed passes, the fault explains {run.failed_passes}"
        )
        worst = assert_budget(fw, run.changes, run.failed_passes)
        duplicated = duplicates(fw, run.creations)
        assert duplicated == 0, "a shared resource was created twice"
        touched = foreign_touches(fw, run.replaces)
        assert touched == [], [(m.method, m.path) for m in touched]
        injected = fw.compute.faults.injected()
        record(
            "compute-faults",
            case.id,
            fault_class=case.fault_class,
            scale=scale.name,
            seed=seed,
            services=scale.cluster + scale.local,
            faults_injected=sum(injected.values()) + run.world_faults,
            attempts_max=worst,
            attempt_budget=fw.settings.gce.max_attempts,
            mutations=len(fw.lbhc_mutations()),
            failed_passes=failed,
            converge_s=round(max(0.0, converged_at - fault_end), 3),
            bound_s=round(bound, 1),
            duplicates=duplicated,
            foreign_touched=len(touched),
            **run.figures,
        )


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.id, marks=() if c.short else pytest.mark.chaos) for c in CASES],
)
def test_compute_fault(case: Case, chaos_scale: str) -> None:
    scale = SCALES[chaos_scale]
    for seed in scale.seeds[: case.max_seeds]:
        run_case(case, scale, seed)


# ---- the oracle itself: each check fails on the breach it is there to catch -------------
LBHC = {"x-lbhc-client-id": IDENTITY, "Content-Type": "application/json"}


def converged_by_hand(fw: FaultWorld) -> None:
    """What lbhc would have made, made without lbhc."""
    fw.configure()
    fw.add_services(2, 1)
    for collection in ("firewalls", "httpHealthChecks"):
        fw.call("POST", f"/global/{collection}", desired_body(fw, collection))
    for pool in fw.cluster_pools:
        fw.pool_op(pool, "addHealthCheck", URL)


def as_lbhc(fw: FaultWorld, method: str, path: str, body: dict[str, object], rid: str) -> None:
    raw = json.dumps(body).encode()
    fw.compute.handle(method, f"{API}{path}?requestId={rid}", None, LBHC, raw)


def test_the_oracle_accepts_a_converged_world_and_names_each_breach() -> None:
    with fault_world() as fw:
        converged_by_hand(fw)
        assert problems(fw) == []
        fw.pool_op(fw.local_pools[0], "addHealthCheck", URL)
        fw.pool_op(fw.cluster_pools[0], "removeHealthCheck", URL)
        twin = {**desired_body(fw, "httpHealthChecks"), "name": "k8s-l4-healthcheck-twin"}
        fw.call("POST", "/global/httpHealthChecks", twin)
        found = " | ".join(problems(fw))
        assert "Local pool" in found and f"Cluster pool {fw.cluster_pools[0]}" in found
        assert "checks of ours" in found and "planner still wants" in found


def test_the_oracle_catches_foreign_touches_budget_breaches_and_duplicates() -> None:
    with fault_world() as fw:
        converged_by_hand(fw)
        fw.configure({"gce_max_attempts": 2})
        rid = str(uuid.uuid4())
        for _ in range(3):
            as_lbhc(fw, "PATCH", f"/global/httpHealthChecks/{FOREIGN_CHECK}", {"port": 1}, rid)
        assert [m.path.rsplit("/", 1)[-1] for m in foreign_touches(fw)] == [FOREIGN_CHECK] * 3
        with pytest.raises(AssertionError, match="tried 3 times"):
            assert_budget(fw, changes=10, failed_passes=0)
        fw.call("DELETE", f"/global/firewalls/{NAME}")
        fw.call("POST", "/global/firewalls", desired_body(fw, "firewalls"))
        assert duplicates(fw) == 1
        assert duplicates(fw, {"firewalls": 2, "httpHealthChecks": 1}) == 0


def test_a_check_held_by_another_owner_is_reported() -> None:
    """The clean-up cannot finish while another owner's pool (outside lbhc's region, so
    outside its view) holds our check: a situation lbhc cannot resolve on its own
    must be reported (Event, warning or metric), not only retried."""
    with fault_world() as fw:
        fw.add_services(1)
        converge_first(fw)
        fw.compute.add_target_pool(
            PROJECT,
            OTHER_REGION,
            "a0therregi0np001",
            description=OTHER_CLUSTER,
            health_checks=[NAME],
        )
        fw.flip(fw.cluster_pools[0], "Local")
        wait_for(
            lambda: sum(m.method == "DELETE" for m in fw.lbhc_mutations()) >= 2,
            timeout=SLACK_SEC,
            what="the refused delete",
        )
        wait_passes(fw, 3, bound=SLACK_SEC)

        def reported() -> bool:
            notes = [str(e.get("note", "")) for e in fw.w.kube.objects("Event")]
            said = [n for n in notes + list(fw.warnings()) if NAME in n and "use" in n]
            return bool(said) or fw.metric("lbhc_target_pools", state="conflicting") >= 1

        assert reported()
