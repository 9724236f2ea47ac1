"""The Lease elector, round by round: a manual monotonic clock and an in-memory Lease store
(conditional on resourceVersion, as the API server is) that can be scripted to lose races,
fail, be slow, or be rewritten by someone else. No threads and no sleeping: each round is one
call of try_acquire_or_renew, as the elector's own loop makes it.

What must hold (lbhc/controller/leader.py): may_write() is true only until renew_deadline
after the send time of the last successful write, and another replica takes over only after
observing no change for the Lease's leaseDurationSeconds on its own clock."""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError

from lbhc.controller.leader import LeaseConfig, LeaseElector, micro_time
from lbhc.kube.client import KubeApi

NAMESPACE, NAME, ME, OTHER = "lbhc", "lbhc-leader", "me", "other"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LONG_AGO = "2000-01-01T00:00:00.000000Z"  # a renewTime far in the past by the wall clock


class ManualClock:
    """A monotonic clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def at(self, moment: float) -> None:
        assert moment >= self.now, "a monotonic clock does not go back"
        self.now = moment


Action = Callable[[], None]


@dataclass
class LeaseStore:
    """Exactly the three calls LeaseElector makes on KubeApi, against one Lease held in memory.
    A replace with a stale metadata.resourceVersion is a 409, as on the API server; `before`
    scripts what happens when a call reaches the server (an error, a rival's write)."""

    clock: ManualClock
    lease: dict[str, Any] | None = None
    version: int = 0
    calls: list[str] = field(default_factory=list)
    written: list[dict[str, Any]] = field(default_factory=list)  # bodies stored, any writer
    before: dict[str, list[BaseException | Action]] = field(default_factory=dict)

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._arrive("get", namespace, name)
        return copy.deepcopy(self.lease)

    def create_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self._arrive("create", namespace, body["metadata"]["name"])
        if self.lease is not None:
            raise ApiException(status=409, reason="Conflict")  # AlreadyExists
        return self._store(body)

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self._arrive("replace", namespace, name)
        if self.lease is None:
            raise ApiException(status=404, reason="Not Found")
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        return self._store(body)

    def rival_writes(self, holder: str, renew_time: str = "", duration: int = 15) -> None:
        """Another writer's record: a new resourceVersion and (unless given) a renewTime
        never seen before, as any real write has."""
        renew_time = renew_time or f"2030-01-01T00:00:00.{self.version + 1:06d}Z"
        spec = dict((self.lease or {}).get("spec") or {})
        spec.update(holderIdentity=holder, renewTime=renew_time, leaseDurationSeconds=duration)
        self._store({"metadata": {"name": NAME, "namespace": NAMESPACE}, "spec": spec})

    def _arrive(self, call: str, namespace: str, name: str) -> None:
        assert (namespace, name) == (NAMESPACE, NAME)
        self.calls.append(call)
        pending = self.before.get(call)
        if pending:
            action = pending.pop(0)
            if isinstance(action, BaseException):
                raise action
            action()

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.lease = stored
        self.written.append(copy.deepcopy(stored))
        return copy.deepcopy(stored)

    def ours(self) -> list[dict[str, Any]]:
        return [w for w in self.written if w["spec"].get("holderIdentity") == ME]


def held_by(holder: str, duration: int = 15, transitions: int = 3) -> dict[str, Any]:
    return {
        "metadata": {"name": NAME, "namespace": NAMESPACE, "resourceVersion": "41"},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "renewTime": LONG_AGO,
            "acquireTime": LONG_AGO,
            "leaseTransitions": transitions,
        },
    }


CONFIG = LeaseConfig(NAMESPACE, NAME, ME, lease_duration=15, renew_deadline=10, retry_period=2)


def elector(
    lease: dict[str, Any] | None, config: LeaseConfig = CONFIG
) -> tuple[LeaseElector, LeaseStore, ManualClock]:
    clock = ManualClock()
    store = LeaseStore(clock, lease=copy.deepcopy(lease), version=41 if lease else 0)
    return LeaseElector(cast(KubeApi, store), config, clock=clock), store, clock


# What can happen to a round: scripted into the store before it.
@dataclass(frozen=True)
class Fail:
    """`call` reaches nothing: the request raises."""

    call: str
    error: BaseException


@dataclass(frozen=True)
class Rival:
    """Another replica's write lands just before our `call` is served."""

    call: str
    holder: str = OTHER


@dataclass(frozen=True)
class Slow:
    """Our `call` takes `seconds` to be answered (the clock moves while it is in flight)."""

    call: str
    seconds: float


@dataclass(frozen=True)
class Rewrite:
    """Between rounds someone rewrites the Lease (by hand, or a replica with our identity)."""

    holder: str
    renew_time: str = ""  # "" for one never seen before


Fault = Fail | Rival | Slow | Rewrite
SERVER_ERROR = ApiException(status=500, reason="Internal Server Error")
# What the client raises when nothing answers (urllib3 gave up retrying the connection).
UNREACHABLE = MaxRetryError(
    cast(Any, None), "/apis/coordination.k8s.io/v1", ConnectionRefusedError()
)


@dataclass(frozen=True)
class Round:
    """One try_acquire_or_renew at `at`: True/False as it returns, or what it raises."""

    at: float
    outcome: bool | type[BaseException]
    calls: tuple[str, ...]
    fault: Fault | None = None


@dataclass(frozen=True)
class Probe:
    """may_write() at `at`, between rounds."""

    at: float
    may_write: bool


@dataclass(frozen=True)
class Case:
    id: str
    lease: dict[str, Any] | None
    steps: tuple[Round | Probe, ...]


CASES = [
    Case(
        "no Lease: creates it and may write until the renew deadline",
        None,
        (
            Probe(0, False),
            Round(0, True, ("get", "create")),
            Probe(9.999, True),
            Probe(10, False),
        ),
    ),
    Case(
        "a released Lease (no holder) is taken at once",
        held_by(""),
        (Round(0, True, ("get", "replace")), Probe(9.999, True)),
    ),
    Case(
        "another's Lease is respected for lease_duration on OUR clock, however old its "
        "renewTime, then taken over",
        held_by(OTHER),
        (
            Round(0, False, ("get",)),
            Probe(5, False),
            Round(14.999, False, ("get",)),
            Round(15, True, ("get", "replace")),
            Probe(24.999, True),
            Probe(25, False),
        ),
    ),
    Case(
        "the holder's renewal restarts the wait",
        held_by(OTHER),
        (
            Round(0, False, ("get",)),
            Round(10, False, ("get",), Rewrite(OTHER)),
            Round(24.999, False, ("get",)),
            Round(25, True, ("get", "replace")),
        ),
    ),
    Case(
        "the wait is the Lease's own leaseDurationSeconds, not ours",
        held_by(OTHER, duration=40),
        (
            Round(0, False, ("get",)),
            Round(39.999, False, ("get",)),
            Round(40, True, ("get", "replace")),
        ),
    ),
    Case(
        "a lost race on create (409): not leader, and the winner's Lease is then respected",
        None,
        (
            Round(0, ApiException, ("get", "create"), Rival("create")),
            Probe(0, False),
            Round(2, False, ("get",)),
            Probe(2, False),
        ),
    ),
    Case(
        "a lost race on a takeover (409): not leader, and the winner's Lease is respected",
        held_by(OTHER),
        (
            Round(0, False, ("get",)),
            Round(15, False, ("get", "replace"), Rival("replace")),
            Probe(15, False),
            Round(17, False, ("get",)),  # the winner's record, first seen now
            Round(31.999, False, ("get",)),
            Round(32, True, ("get", "replace")),
        ),
    ),
    Case(
        "renewals failing: writes allowed until renew_deadline after the last success, "
        "not a moment longer",
        None,
        (
            Round(0, True, ("get", "create")),
            Round(2, ApiException, ("get", "replace"), Fail("replace", SERVER_ERROR)),
            Round(4, MaxRetryError, ("get",), Fail("get", UNREACHABLE)),
            Probe(9.999, True),
            Probe(10, False),
        ),
    ),
    Case(
        "a renewal after failures, within the deadline, extends the window from itself",
        None,
        (
            Round(0, True, ("get", "create")),
            Round(2, ApiException, ("get", "replace"), Fail("replace", SERVER_ERROR)),
            Round(4, MaxRetryError, ("get",), Fail("get", UNREACHABLE)),
            Round(6, True, ("get", "replace")),
            Probe(15.999, True),
            Probe(16, False),
        ),
    ),
    Case(
        "past the deadline a renewal of the record we wrote resumes leadership",
        None,
        (
            Round(0, True, ("get", "create")),
            Round(2, MaxRetryError, ("get",), Fail("get", UNREACHABLE)),
            Probe(10, False),
            Round(12, True, ("get", "replace")),
            Probe(21.999, True),
        ),
    ),
    Case(
        "the window counts from when the write was SENT, not when it was answered",
        None,
        (
            Round(0, True, ("get", "create"), Slow("create", 3)),
            Probe(9.999, True),
            Probe(10, False),
        ),
    ),
    Case(
        "a renewal answered late still counts from its send time",
        None,
        (
            Round(0, True, ("get", "create")),
            Round(2, True, ("get", "replace"), Slow("replace", 7)),
            Probe(11.999, True),
            Probe(12, False),
        ),
    ),
    Case(
        "the Lease rewritten to name another holder: writes stop at once",
        None,
        (
            Round(0, True, ("get", "create")),
            Round(1, False, ("get",), Rewrite(OTHER)),
            Probe(1, False),
            Round(15.999, False, ("get",)),
            Round(16, True, ("get", "replace")),
        ),
    ),
    Case(
        "the Lease rewritten under our own name (not the record we wrote): writes stop at once",
        None,
        (
            Round(0, True, ("get", "create")),
            Round(1, False, ("get",), Rewrite(ME)),
            Probe(1, False),
            Round(15.999, False, ("get",)),
        ),
    ),
]


def play(fault: Fault | None, store: LeaseStore, clock: ManualClock) -> None:
    if isinstance(fault, Rewrite):
        store.rival_writes(fault.holder, fault.renew_time)
    elif isinstance(fault, Fail):
        store.before.setdefault(fault.call, []).append(fault.error)
    elif isinstance(fault, Rival):
        store.before.setdefault(fault.call, []).append(lambda: store.rival_writes(fault.holder))
    elif isinstance(fault, Slow):
        store.before.setdefault(fault.call, []).append(lambda: clock.at(clock.now + fault.seconds))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rounds(case: Case) -> None:
    lease, store, clock = elector(case.lease)
    for number, step in enumerate(case.steps):
        clock.at(step.at)
        where = f"step {number} at t={step.at}"
        if isinstance(step, Probe):
            assert lease.may_write() is step.may_write, where
            continue
        play(step.fault, store, clock)
        store.calls.clear()
        ours_before = len(store.ours())
        if isinstance(step.outcome, bool):
            assert lease.try_acquire_or_renew() is step.outcome, where
        else:
            with pytest.raises(step.outcome):
                lease.try_acquire_or_renew()
        assert tuple(store.calls) == step.calls, where
        # A round writes (exactly once) if and only if it ends holding the Lease.
        assert len(store.ours()) - ours_before == (1 if step.outcome is True else 0), where


def test_the_created_lease_names_us_with_our_duration_and_microtimes() -> None:
    lease, store, _ = elector(None)
    assert lease.try_acquire_or_renew()
    (body,) = store.written
    assert body["apiVersion"] == "coordination.k8s.io/v1"
    assert body["kind"] == "Lease"
    assert body["metadata"]["name"] == NAME
    assert body["metadata"]["namespace"] == NAMESPACE
    spec = body["spec"]
    assert spec["holderIdentity"] == ME
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["renewTime"]), spec["renewTime"]
    assert spec["acquireTime"] == spec["renewTime"]


def test_a_takeover_counts_a_transition_and_is_conditional_on_what_was_read() -> None:
    lease, store, clock = elector(held_by(OTHER, transitions=3))
    assert not lease.try_acquire_or_renew()
    clock.at(15)
    assert lease.try_acquire_or_renew()
    body = store.written[-1]
    spec = body["spec"]
    assert spec["holderIdentity"] == ME
    assert spec["leaseTransitions"] == 4
    assert spec["acquireTime"] != LONG_AGO
    assert MICRO_TIME.match(spec["acquireTime"])


def test_a_renewal_keeps_acquire_time_and_transitions_and_sends_what_it_read() -> None:
    lease, store, clock = elector(None)
    assert lease.try_acquire_or_renew()
    first = store.written[-1]
    clock.at(2)
    assert lease.try_acquire_or_renew()
    second = store.written[-1]
    assert second["spec"]["acquireTime"] == first["spec"]["acquireTime"]
    assert second["spec"]["leaseTransitions"] == 0
    assert MICRO_TIME.match(second["spec"]["renewTime"])
    # The store accepted it because it carried the version just read: a stale one is a 409.
    assert (
        int(second["metadata"]["resourceVersion"]) == int(first["metadata"]["resourceVersion"]) + 1
    )


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [(15.0, 15), (15.2, 16), (10.000001, 11), (16, 16), (3.5, 4)],
)
def test_lease_seconds_round_up_so_no_one_takes_over_early(duration: float, seconds: int) -> None:
    config = LeaseConfig(
        NAMESPACE, NAME, ME, lease_duration=duration, renew_deadline=3, retry_period=1
    )
    assert config.lease_seconds == seconds
    lease, store, _ = elector(None, config)
    assert lease.try_acquire_or_renew()
    assert store.written[-1]["spec"]["leaseDurationSeconds"] == seconds


@pytest.mark.parametrize(
    ("retry", "renew", "duration"),
    [
        (0, 10, 15),  # no wait between rounds
        (-1, 10, 15),
        (10, 10, 15),  # a single failed round would already pass the deadline
        (2, 15, 15),  # another replica could take over while we still write
        (2, 20, 15),
        (5, 3, 15),
    ],
)
def test_timings_that_could_overlap_two_leaders_are_refused(
    retry: float, renew: float, duration: float
) -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        LeaseConfig(NAMESPACE, NAME, ME, duration, renew, retry)


@pytest.mark.parametrize(("retry", "renew", "duration"), [(2, 10, 15), (0.1, 0.2, 0.3)])
def test_ordered_timings_are_accepted(retry: float, renew: float, duration: float) -> None:
    assert LeaseConfig(NAMESPACE, NAME, ME, duration, renew, retry).renew_deadline == renew


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        # Whole seconds still carry six digits: isoformat() would drop them and the API
        # server rejects the MicroTime (kubernetes/kubernetes#89156).
        (dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "2024-01-02T03:04:05.000000Z"),
        (dt.datetime(2024, 1, 2, 3, 4, 5, 7, tzinfo=dt.UTC), "2024-01-02T03:04:05.000007Z"),
        (
            dt.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            "2024-01-02T01:04:05.120000Z",
        ),
    ],
)
def test_micro_time_has_six_fractional_digits_in_utc(moment: dt.datetime, text: str) -> None:
    assert micro_time(moment) == text


def test_stopping_the_leader_releases_the_lease_for_an_immediate_successor() -> None:
    lease, store, clock = elector(None)
    assert lease.try_acquire_or_renew()
    clock.at(1)
    lease.stop()
    assert not lease.may_write()
    assert store.calls[-2:] == ["get", "replace"]
    assert store.lease is not None
    assert store.lease["spec"]["holderIdentity"] == ""
    assert store.lease["spec"]["leaseDurationSeconds"] == 1


def test_stopping_a_follower_writes_nothing() -> None:
    lease, store, _ = elector(held_by(OTHER))
    assert not lease.try_acquire_or_renew()
    lease.stop()
    assert store.calls == ["get"]
    assert store.written == []


def test_stopped_while_a_read_is_in_flight_acquires_nothing() -> None:
    """A shutdown must not be followed by a write the successor does not expect."""
    lease, store, _ = elector(None)
    store.before["get"] = [lambda: lease.stop(release=False)]
    assert not lease.try_acquire_or_renew()
    assert store.calls == ["get"]
    assert store.written == []
    assert not lease.may_write()


def test_a_leader_whose_renewal_loses_a_race_stops_writing_at_once() -> None:
    """A 409 on the renewal means someone wrote the Lease after we read it (a rival, or a
    person by hand): being cautious costs one round; not being cautious may cost two writers."""
    elected, store, clock = elector(None)
    assert elected.try_acquire_or_renew() and elected.may_write()
    clock.at(2.0)
    store.before["replace"] = [lambda: store.rival_writes(OTHER)]
    assert not elected.try_acquire_or_renew()
    assert not elected.may_write()  # well before the renew deadline (10 s after 0.0)
