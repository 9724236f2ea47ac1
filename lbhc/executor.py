"""Runs a Plan through the narrow GCE writer, in an order that is safe at every step:
firewall, then check, then attaches (concurrently); detaches (concurrently), then the check's
delete, then the firewall's. A failed step skips only what depends on it. Each outcome is
reported as it happens (so `lbhc apply` can stream them), and a stop request lets the calls in
flight finish and starts no new one (so Ctrl-C never leaves a call half-made)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeVar

from lbhc.gce.errors import (
    describe_gce_error,
    is_already_exists,
    is_forbidden,
    is_in_use,
    is_not_found,
    is_not_found_in,
)
from lbhc.model.cloud import Firewall, HttpHealthCheck, resource_name
from lbhc.model.plan import Action, Attach, Change, Delete, Detach, Ensure, Kind, Plan
from lbhc.planner.shared import owner_of, read_ledger

log = logging.getLogger(__name__)
Step = TypeVar("Step", Ensure, Attach, Detach, Delete)


class ComputeWriter(Protocol):
    def get_http_health_check(self, name: str) -> HttpHealthCheck | None: ...
    def insert_http_health_check(self, check: HttpHealthCheck) -> None: ...
    def update_http_health_check(self, check: HttpHealthCheck) -> None: ...
    def delete_http_health_check(self, name: str) -> None: ...
    def get_firewall(self, name: str) -> Firewall | None: ...
    def insert_firewall(self, firewall: Firewall) -> None: ...
    def update_firewall(self, firewall: Firewall) -> None: ...
    def delete_firewall(self, name: str) -> None: ...
    def add_health_check(self, pool: str, health_check_url: str) -> None: ...
    def remove_health_check(self, pool: str, health_check_url: str) -> None: ...


class Status(StrEnum):
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Outcome:
    change: Change
    status: Status
    detail: str = ""
    # A delete refused because something outside lbhc's view still uses the resource:
    # skipped and retried at every pass, and reported as blocked garbage collection.
    blocked: bool = False
    # Refused for want of a permission (403): a Shared VPC host project lbhc may not write.
    forbidden: bool = False

    def to_json(self) -> dict[str, object]:
        return {**self.change.to_json(), "status": self.status.value, "detail": self.detail}


@dataclass(frozen=True)
class ApplyResult:
    outcomes: tuple[Outcome, ...]

    @property
    def ok(self) -> bool:
        return all(o.status is not Status.FAILED for o in self.outcomes)

    def count(self, status: Status) -> int:
        return sum(1 for o in self.outcomes if o.status is status)


# The detail of a change a stop request kept from starting; callers tell "not done" by it.
NOT_STARTED = "not started: interrupted"


class Executor:
    def __init__(
        self,
        gce: ComputeWriter,
        max_concurrency: int = 32,
        on_outcome: Callable[[Outcome], None] | None = None,
    ) -> None:
        self._gce = gce
        self._max_concurrency = max(1, max_concurrency)
        # Called once per change, from whichever thread finished it, as soon as it is known.
        self._on_outcome = on_outcome or (lambda _: None)
        self._stop = threading.Event()

    def stop(self) -> None:
        """Start no further call; those in flight finish and are reported. Safe from any
        thread, e.g. a signal handler's."""
        self._stop.set()

    def apply(self, plan: Plan) -> ApplyResult:
        outcomes: list[Outcome] = []
        by_phase = Phases.of(plan.changes)

        shared_ok = True
        for change in by_phase.ensures:
            outcome = self._run(change, self._ensure)
            outcomes.append(outcome)
            shared_ok = shared_ok and outcome.status is Status.DONE
        # A give-back (a recorded check put back on a pool) needs nothing of lbhc's; every
        # other attach needs the firewall and the check in place, and a takeover needs the
        # ledger entry written by the check's update first.
        gives_back = [c for c in by_phase.attaches if c.restores]
        attaches = [c for c in by_phase.attaches if not c.restores]
        if shared_ok:
            outcomes.extend(self._concurrently(attaches, self._attach))
        else:
            why = "the shared health check or firewall is not in place"
            outcomes.extend(self._report(Outcome(c, Status.SKIPPED, why)) for c in attaches)
        given = self._concurrently(gives_back, self._attach)
        outcomes.extend(given)

        detaches = self._concurrently(by_phase.detaches, self._detach)
        outcomes.extend(detaches)
        # The check's description holds the takeover ledger: it goes only once every check
        # it records is back where it was.
        removable = all(o.status is Status.DONE for o in (*detaches, *given))
        for delete in by_phase.deletes:  # check first, then firewall
            if not removable:
                skipped = Outcome(delete, Status.SKIPPED, "waits for an earlier step")
                outcomes.append(self._report(skipped))
                continue
            outcome = self._run(delete, self._delete)
            outcomes.append(outcome)
            removable = outcome.status is Status.DONE
        return ApplyResult(tuple(outcomes))

    # ---- steps --------------------------------------------------------------------------
    def _run(self, change: Step, step: Callable[[Step], Outcome]) -> Outcome:
        if self._stop.is_set():
            return self._report(Outcome(change, Status.SKIPPED, NOT_STARTED))
        try:
            outcome = step(change)
        except Exception as exc:  # one failing step must not stop the others
            outcome = Outcome(
                change, Status.FAILED, describe_gce_error(exc), forbidden=is_forbidden(exc)
            )
        level = logging.WARNING if outcome.status is Status.FAILED else logging.INFO
        log.log(
            level,
            "%s %s %s: %s %s",
            change.action,
            change.kind,
            change.name,
            outcome.status,
            outcome.detail,
        )
        return self._report(outcome)

    def _report(self, outcome: Outcome) -> Outcome:
        self._on_outcome(outcome)
        return outcome

    def _concurrently(self, changes: list[Step], step: Callable[[Step], Outcome]) -> list[Outcome]:
        if not changes:
            return []
        workers = min(self._max_concurrency, len(changes))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lbhc-pool") as pool:
            return list(pool.map(lambda c: self._run(c, step), changes))

    def _ensure(self, change: Ensure) -> Outcome:
        desired = change.desired
        gce = self._gce
        insert: Callable[[], None]
        update: Callable[[], None]
        get: Callable[[], HttpHealthCheck | Firewall | None]
        if isinstance(desired, HttpHealthCheck):
            insert = lambda: gce.insert_http_health_check(desired)  # noqa: E731
            update = lambda: gce.update_http_health_check(desired)  # noqa: E731
            get = lambda: gce.get_http_health_check(desired.name)  # noqa: E731
        else:
            insert = lambda: gce.insert_firewall(desired)  # noqa: E731
            update = lambda: gce.update_firewall(desired)  # noqa: E731
            get = lambda: gce.get_firewall(desired.name)  # noqa: E731
        if change.action is Action.CREATE:
            return self._insert(change, insert, get, desired)
        update()
        return Outcome(change, Status.DONE)

    def _insert(
        self,
        change: Ensure,
        insert: Callable[[], None],
        get: Callable[[], HttpHealthCheck | Firewall | None],
        desired: HttpHealthCheck | Firewall,
    ) -> Outcome:
        """alreadyExists is success only if what exists is ours (a retried insert that had
        landed, or a concurrent replica); anything else is a conflict. Ours by the owner mark,
        not the whole description, but a check must also hold every takeover record this
        pass's attaches rely on: one made by a predecessor with an older ledger fails the
        pass, whose retry records them with an update before any pool is touched."""
        try:
            insert()
        except Exception as exc:
            if not is_already_exists(exc):
                raise
            existing = get()
            if existing is None:
                # Reserved but not readable: an insert of that name (a predecessor's, whose
                # operation is still running) has not finished. A failure, so the pass is
                # retried with backoff until it has and can be judged.
                return Outcome(
                    change,
                    Status.FAILED,
                    "an insert of that name is still in progress elsewhere (alreadyExists, "
                    "not yet readable); retried",
                )
            owner = owner_of(desired.description)
            if owner is None or owner_of(existing.description) != owner:
                return Outcome(
                    change, Status.FAILED, "a resource of that name exists and is not ours"
                )
            if isinstance(existing, HttpHealthCheck) and isinstance(desired, HttpHealthCheck):
                have, want = read_ledger(existing).entries, read_ledger(desired).entries
                if not want.items() <= have.items():
                    return Outcome(
                        change,
                        Status.FAILED,
                        "it already existed without this pass's takeover records; retried",
                    )
            return Outcome(change, Status.DONE, "already existed")
        return Outcome(change, Status.DONE)

    def _attach(self, change: Attach) -> Outcome:
        """A pool deleted since the plan was made is skipped, not failed: the Service is gone
        or being re-provisioned, and the next pass sees the new state. The check deleted
        since (by hand) is a failure: the pass is retried soon and recreates it."""
        try:
            if change.replaces:
                return self._replace(change)
            self._gce.add_health_check(change.name, change.health_check_url)
        except Exception as exc:
            if is_not_found_in(exc, "httpHealthChecks"):
                return Outcome(change, Status.FAILED, "the health check no longer exists")
            if is_not_found(exc):
                return Outcome(change, Status.SKIPPED, "target pool no longer exists")
            raise
        return Outcome(change, Status.DONE)

    def _replace(self, change: Attach) -> Outcome:
        """A pool holds one check: the foreign one must go first. If ours then cannot be
        added, the foreign one is put back rather than leaving the pool unchecked."""
        self._gce.remove_health_check(change.name, change.replaces)
        try:
            self._gce.add_health_check(change.name, change.health_check_url)
        except Exception as exc:
            self._gce.add_health_check(change.name, change.replaces)
            return Outcome(
                change, Status.FAILED, f"{describe_gce_error(exc)}; previous check restored"
            )
        return Outcome(change, Status.DONE)

    def _detach(self, change: Detach) -> Outcome:
        try:
            self._gce.remove_health_check(change.name, change.health_check_url)
        except Exception as exc:
            if is_not_found(exc):  # the pool is gone, and our check with it
                return Outcome(change, Status.DONE, "target pool no longer exists")
            raise
        if change.restores:
            return self._give_back_after_detach(change)
        return Outcome(change, Status.DONE)

    def _give_back_after_detach(self, change: Detach) -> Outcome:
        """Put the recorded check back. If it cannot go on, lbhc's goes back on rather than
        leave the pool unchecked; the ledger keeps the record for the next try."""
        try:
            self._gce.add_health_check(change.name, change.restores)
        except Exception as exc:
            if is_not_found_in(exc, "targetPools"):
                return Outcome(change, Status.DONE, "target pool no longer exists")
            self._gce.add_health_check(change.name, change.health_check_url)
            return Outcome(
                change, Status.FAILED, f"{describe_gce_error(exc)}; lbhc's check put back"
            )
        return Outcome(change, Status.DONE, f"gave back {resource_name(change.restores)}")

    def _delete(self, change: Delete) -> Outcome:
        delete = (
            self._gce.delete_http_health_check
            if change.kind is Kind.HTTP_HEALTH_CHECK
            else self._gce.delete_firewall
        )
        try:
            delete(change.name)
        except Exception as exc:
            if is_not_found(exc):
                return Outcome(change, Status.DONE, "already gone")
            if is_in_use(exc):
                # Still referenced, maybe by a pool outside this view: try again next time.
                return Outcome(
                    change, Status.SKIPPED, f"still in use: {describe_gce_error(exc)}", blocked=True
                )
            raise
        return Outcome(change, Status.DONE)


@dataclass(frozen=True)
class Phases:
    """A plan's changes by the phase that runs them: firewall before check on the way in,
    check before firewall on the way out."""

    ensures: list[Ensure]
    attaches: list[Attach]
    detaches: list[Detach]
    deletes: list[Delete]

    @classmethod
    def of(cls, changes: Iterable[Change]) -> Phases:
        phases = cls([], [], [], [])
        for change in changes:
            match change:
                case Ensure():
                    phases.ensures.append(change)
                case Attach():
                    phases.attaches.append(change)
                case Detach():
                    phases.detaches.append(change)
                case Delete():
                    phases.deletes.append(change)
        phases.ensures.sort(key=lambda c: c.kind is not Kind.FIREWALL)
        phases.deletes.sort(key=lambda c: c.kind is not Kind.HTTP_HEALTH_CHECK)
        return phases
