"""Leader election on a coordination.k8s.io/v1 Lease, written small and strict instead of
using kubernetes.leaderelection, which keeps running the leader callback after losing the
lease, judges expiry on the wall clock, and sys.exit()s on bad config (kubernetes-client/python
kubernetes/leaderelection/leaderelection.py).

Safety rule: `may_write()` is True only until `renew_deadline` after the last successful
renew, measured on this process's monotonic clock. Another replica may take over only after
observing no renew for `lease_duration` (> renew_deadline) on its own clock, so writes stop
here before anyone else can start.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lbhc.kube.client import KubeApi, describe_kube_error, status_of

log = logging.getLogger(__name__)


def micro_time(now: dt.datetime | None = None) -> str:
    """MicroTime as the API requires it: exactly 6 fractional digits and a zone."""
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    # No defaults here: `lbhc run`'s settings say them once (lbhc/settings.py).
    lease_duration: float
    renew_deadline: float
    retry_period: float

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs retry period < renew deadline < lease duration, got "
                f"{self.retry_period} s, {self.renew_deadline} s, {self.lease_duration} s"
            )

    @property
    def lease_seconds(self) -> int:
        """What the Lease says, and so what others wait: whole seconds, rounded UP so a
        fractional duration never lets anyone take over before our renew deadline."""
        return math.ceil(self.lease_duration)


class LeaseElector:
    def __init__(
        self,
        api: KubeApi,
        config: LeaseConfig,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self._api = api
        self.config = config
        self._clock = clock
        self._on_change = on_change or (lambda leader: None)
        self._renewed_at: float | None = None  # monotonic time of our last successful write
        # The resourceVersion of the record we last wrote: a Lease naming us is ours only if
        # it is that record (a record naming us that we did not write, by hand or by a
        # predecessor with our identity, is acquired like any other).
        self._written_version: str | None = None
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-elector", daemon=True)
        self._was_leader = False
        # Monotonic times of successful acquires/renews (bounded): lets tests prove that a
        # write happened inside this replica's window.
        # When each renew was sent (the window counts from there: it errs short) and when
        # the API confirmed it (what orders renews between replicas); for tests and debugging.
        self.renewals: collections.deque[float] = collections.deque(maxlen=10_000)
        self.confirmations: collections.deque[float] = collections.deque(maxlen=10_000)

    def may_write(self) -> bool:
        renewed = self._renewed_at
        return renewed is not None and self._clock() < renewed + self.config.renew_deadline

    def start(self) -> None:
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        """Stop renewing; on a clean shutdown also release, so a successor need not wait."""
        self._stop.set()
        if self._thread.ident is not None:
            # Long enough for a request in flight to time out (the read timeout is 30 s).
            self._thread.join(timeout=self.config.retry_period + 35)
        if release and self.may_write() and not self._thread.is_alive():
            self._release()
        self._renewed_at = None
        self._notify()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.try_acquire_or_renew()
            except Exception as exc:
                log.warning("leader election: %s", describe_kube_error(exc))
            self._notify()
            self._stop.wait(self.config.retry_period)

    def _notify(self) -> None:
        leader = self.may_write()
        if leader != self._was_leader:
            self._was_leader = leader
            log.info(
                "leader election: %s %s",
                self.config.identity,
                "became leader" if leader else "is not leader",
            )
            self._on_change(leader)

    def try_acquire_or_renew(self) -> bool:
        """One round. True when this replica holds the lease afterwards."""
        now = self._clock()  # before the request: our own window errs on the short side
        lease = self._api.get_lease(self.config.namespace, self.config.name)
        if self._stop.is_set():
            return False  # stopped while the request was in flight: acquire nothing
        if lease is None:
            created = self._api.create_lease(self.config.namespace, self._body(None, transitions=0))
            self._renewed(now, created)
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, str(spec.get("renewTime", "")))
        if record != self._observed:
            # After the response: someone else's lease is dated no earlier than we saw it.
            self._observed, self._observed_at = record, self._clock()
        version = (lease.get("metadata") or {}).get("resourceVersion")
        mine = holder == self.config.identity and version == self._written_version
        if not mine and self._renewed_at is not None:
            # Someone else's record: whatever our clock says, we no longer hold the lease.
            log.warning(
                "leader election: the Lease is no longer the record we wrote (it names %r); "
                "stopping writes",
                holder,
            )
            self._renewed_at = None
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        if not mine and holder and now < self._observed_at + duration:
            return False  # held by someone (maybe a predecessor of ours), not yet expired
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if mine else 1)
        body = self._body(lease, transitions, acquire=not mine)
        try:
            written = self._api.replace_lease(self.config.namespace, self.config.name, body)
        except Exception as exc:
            if status_of(exc) == 409:
                # Someone else wrote the Lease since we read it: if we held it, we may not
                # any more, so writes stop now rather than at the renew deadline.
                self._renewed_at = None
                return False
            raise
        self._renewed(now, written)
        return True

    def _renewed(self, at: float, written: dict[str, Any]) -> None:
        self._written_version = (written.get("metadata") or {}).get("resourceVersion")
        self._renewed_at = at
        self.renewals.append(at)
        self.confirmations.append(self._clock())

    def _body(
        self, lease: dict[str, Any] | None, transitions: int, acquire: bool = True
    ) -> dict[str, Any]:
        now = micro_time()
        spec = dict((lease or {}).get("spec") or {})
        spec.update(
            holderIdentity=self.config.identity,
            leaseDurationSeconds=self.config.lease_seconds,
            renewTime=now,
            leaseTransitions=transitions,
        )
        if acquire or "acquireTime" not in spec:
            spec["acquireTime"] = now
        metadata = {"name": self.config.name, "namespace": self.config.namespace}
        if lease is not None:
            metadata["resourceVersion"] = lease["metadata"]["resourceVersion"]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": spec,
        }

    def _release(self) -> None:
        try:
            lease = self._api.get_lease(self.config.namespace, self.config.name)
            if (
                lease is None
                or (lease.get("spec") or {}).get("holderIdentity") != self.config.identity
            ):
                return
            body = self._body(lease, int(lease["spec"].get("leaseTransitions") or 0))
            body["spec"].update(holderIdentity="", leaseDurationSeconds=1)
            self._api.replace_lease(self.config.namespace, self.config.name, body)
            log.info("leader election: released %s/%s", self.config.namespace, self.config.name)
        except Exception as exc:
            log.warning("leader election: release failed: %s", describe_kube_error(exc))
