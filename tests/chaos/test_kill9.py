"""kill -9 during apply, restart, converge: `lbhc run` as a real process, SIGKILLed at seeded
points of its apply (ensure, attach, foreign-check replacement, detach, garbage collection;
before a mutation is sent, after it landed but before its answer was read, while its
operation is RUNNING, at a random moment inside that), then a successor: a restart with the
same identity or a new one (which waits out the Lease the dead leader never released), a
standby replica already running, or no leader election.

Every trial asserts: the cloud converges to what the cluster needs (no resource of ours
leaked or missing, drift repaired) and lbhc's own next pass plans nothing; nothing foreign
changed or was written to; pools already carrying our check were not touched; no shared
resource was inserted twice; no pool was ever checked through a closed firewall, nor the
firewall removed under an attached check (sampled throughout); only the two processes wrote,
and a standby not before the leader died. After a trial in takeover mode, `lbhc teardown`
must leave every pool with the check it carried before lbhc took it over.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.kill9_scenario import PHASES, build
from tests.chaos.kill9_spec import KILLED_IN, RESTARTS, TrialSpec
from tests.chaos.kill9_switch import MOMENTS
from tests.chaos.kill9_trial import TrialResult, run_trial
from tests.chaos.record import record

# make test: one kill in the ensure step, one among attaches, one mid-takeover (then
# `lbhc teardown` must give every replaced check back), one in detach + GC.
SHORT = (
    TrialSpec(11, "ensure", "landed", "new-identity"),
    TrialSpec(12, "attach", "polling", "same-identity"),
    TrialSpec(13, "replace", "landed", "same-identity"),
    TrialSpec(14, "detach", "unsent", "standby"),
)
FULL_TRIALS = 60


def full_specs() -> list[TrialSpec]:
    """Every pair of phase, moment and successor kind occurs, and every phase and every
    successor kind with slow operations (in flight when the successor starts)."""
    return [
        TrialSpec(
            1000 + i,
            PHASES[i % len(PHASES)],
            MOMENTS[(i // len(PHASES)) % len(MOMENTS)],
            RESTARTS[i % len(RESTARTS)],
            slow=i % 3 == 0,
        )
        for i in range(FULL_TRIALS)
    ]


_results: dict[str, list[TrialResult]] = {"short": [], "full": []}


@pytest.fixture(scope="module", autouse=True)
def figures() -> Iterator[None]:
    """Figures for docs/reliability.md, once per scale that ran."""
    yield
    for scale, results in _results.items():
        if not results:
            continue
        record("kill-9", scale, **summary(results))
        # Time to converge differs by what follows the kill: one row per successor kind.
        for restart in RESTARTS:
            subset = [r for r in results if r.spec.restart == restart]
            if subset:
                record("kill-9", f"{scale}: {restart}", **summary(subset))
        slow = [r for r in results if r.spec.slow]
        if slow:
            record("kill-9", f"{scale}: k-th operation slow", **summary(slow))


def summary(results: list[TrialResult]) -> dict[str, object]:
    converge = [r.converge_s for r in results]

    def total(name: str) -> int:
        return sum(len(getattr(r.verdict, name)) for r in results)

    return {
        "trials": len(results),
        "kills_by_phase": dict(Counter(r.kill.phase for r in results)),
        "kills_by_moment": dict(Counter(r.spec.moment for r in results)),
        "successors": dict(Counter(r.spec.restart for r in results)),
        "successor_saw_ops_in_flight": sum(r.in_flight for r in results),
        "leaked": total("leaked"),
        "missing": total("missing"),
        "foreign_touched": total("foreign_touched"),
        "churn": total("churn"),
        "duplicates": total("duplicates"),
        "unsafe_moments": total("unsafe"),
        "wrong_writer": total("wrong_writer"),
        "not_given_back_by_teardown": total("not_given_back"),
        "converge_s_median": round(statistics.median(converge), 2),
        "converge_s_max": round(max(converge), 2),
    }


def _trial(spec: TrialSpec, tmp_path: Path, scale: str) -> None:
    result = run_trial(spec, tmp_path)
    _results[scale].append(result)
    where = f"{spec} killed at {result.kill} in {result.scenario}"
    assert result.kill.phase in KILLED_IN[spec.phase], where
    assert result.verdict.problems() == [], f"{where}: {result.verdict}"


def test_short_trials_cover_ensure_attach_takeover_and_detach_with_gc() -> None:
    assert [s.phase for s in SHORT] == ["ensure", "attach", "replace", "detach"]
    assert build(SHORT[2].seed, "replace").takeover
    assert not build(SHORT[3].seed, "detach").eligible  # its detaches end in GC


@pytest.mark.parametrize("spec", SHORT, ids=str)
def test_kill9_short(spec: TrialSpec, tmp_path: Path, chaos_scale: str) -> None:
    if chaos_scale == "full":
        pytest.skip("the full run covers these")
    _trial(spec, tmp_path, "short")


@pytest.mark.chaos
@pytest.mark.parametrize("spec", full_specs(), ids=str)
def test_kill9_full(spec: TrialSpec, tmp_path: Path) -> None:
    _trial(spec, tmp_path, "full")
