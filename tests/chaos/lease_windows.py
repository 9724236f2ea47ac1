"""Who held the Lease when each GCE mutation was made: every mutation in the Compute fake's
journal judged against the lease windows of N electing replicas, from their own records
(when each renew was sent and when it was confirmed, on the monotonic clock the fakes'
journals share) and, when each replica talks through its own named apiserver front, from what
the Lease said each time a replica read it (KubeFake.revisions + the journal's versions).

A mutation is a wrong-writer mutation when its replica
- never held the lease before it;
- wrote a lease duration or more after sending its last renew (anyone may have taken over);
- wrote after another replica's acquire or renew was confirmed, and before its own next one
  (two holders at once); or
- wrote more than `grace` after reading a Lease that named someone else (it knew).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lbhc.controller.app import ControllerApp
from lbhc.sandbox.compute_fake.journal import JournalEntry
from lbhc.sandbox.kube_fake import KubeFake
from tests.controller.harness import World

LEASE_NAMESPACE, LEASE_NAME = "lbhc-system", "lbhc"
# A mutation checked may_write() before it was sent: one that arrives this long after its
# replica read a foreign holder may have been on its way already.
IN_FLIGHT_GRACE_SEC = 1.0


@dataclass(frozen=True)
class LeaseRead:
    at: float  # when the apiserver answered (its journal's time)
    reader: str  # the replica, by the name of the front it reads through
    holder: str  # who the Lease named in that answer


@dataclass(frozen=True)
class WrongWrite:
    mutation: JournalEntry
    why: str

    def __str__(self) -> str:
        m = self.mutation
        return f"{m.client_id} {m.method} {m.path.rsplit('/', 2)[-1]} at {m.time:.3f}: {self.why}"


def lease_reads(
    kube: KubeFake, namespace: str = LEASE_NAMESPACE, name: str = LEASE_NAME
) -> list[LeaseRead]:
    """Every answered GET of the Lease through a named front, with the holder it showed."""
    holders = {
        rv: str((obj.get("spec") or {}).get("holderIdentity") or "")
        for rv, obj in kube.revisions("Lease", namespace, name)
    }
    path = f"/namespaces/{namespace}/leases/{name}"
    return [
        LeaseRead(e.time, e.server, holders[e.resource_version])
        for e in kube.journal
        if e.method == "GET" and e.path.endswith(path) and e.status == 200 and e.server
        if e.resource_version in holders
    ]


def wrong_writes(
    mutations: Iterable[JournalEntry],
    apps: Sequence[ControllerApp],
    lease_duration: float,
    reads: Iterable[LeaseRead] = (),
    grace: float = IN_FLIGHT_GRACE_SEC,
) -> list[WrongWrite]:
    sent = {a.identity: sorted(a.elector.renewals) for a in apps if a.elector is not None}
    confirmed = {a.identity: sorted(a.elector.confirmations) for a in apps if a.elector}
    foreign = [r for r in reads if r.holder != r.reader]
    found: list[WrongWrite] = []
    for m in mutations:
        why = _judge(m, sent, confirmed, foreign, lease_duration, grace)
        if why:
            found.append(WrongWrite(m, why))
    return found


def _judge(
    m: JournalEntry,
    sent: dict[str, list[float]],
    confirmed: dict[str, list[float]],
    foreign: list[LeaseRead],
    lease_duration: float,
    grace: float,
) -> str:
    mine = [r for r in sent.get(m.client_id, []) if r <= m.time]
    my_confirmed = [c for c in confirmed.get(m.client_id, []) if c <= m.time]
    if not mine or not my_confirmed:
        return "never held the lease before"
    if m.time >= mine[-1] + lease_duration:
        return f"{m.time - mine[-1]:.2f} s after sending its last renew"
    last = my_confirmed[-1]
    for who, times in confirmed.items():
        if who != m.client_id and any(last < c <= m.time for c in times):
            return f"after {who}'s renew was confirmed (two holders)"
    for read in foreign:
        if read.reader == m.client_id and last < read.at and read.at + grace < m.time:
            return f"{m.time - read.at:.2f} s after reading that {read.holder!r} held the lease"
    return ""


def assert_writes_inside_lease_windows(
    w: World,
    apps: Sequence[ControllerApp],
    lease_duration: float = 3.0,
    reads: Iterable[LeaseRead] = (),
) -> dict[str, list[float]]:
    """No wrong-writer mutation in `w`'s Compute journal; each replica's renew send times."""
    wrong = wrong_writes(w.mutations(), apps, lease_duration, reads)
    assert not wrong, "wrong-writer mutations:\n" + "\n".join(map(str, wrong))
    return {app.identity: list(app.elector.renewals) for app in apps if app.elector}
