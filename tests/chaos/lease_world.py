"""Electing replicas (ControllerApp with leader election, in threads), each talking to the
kube fake through its own named apiserver front, so one replica's API access can be cut or
slowed while the others' works, and its Lease reads are told apart in the journal. Then the
ways a leader loses its lease, each with its cure."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lbhc.controller.app import ControllerApp
from lbhc.sandbox.kube_fake import KubeFakeServer
from tests.chaos.kube_world import REFLECTOR_BACKOFF_MAX, has_gap
from tests.chaos.lease_windows import LEASE_NAME, LEASE_NAMESPACE
from tests.controller.harness import World, world

LEASE = f"/leases/{LEASE_NAME}"
SLACK_SEC = 15.0  # a shared, loaded 2-core machine
FRESH_BOUND_SEC = REFLECTOR_BACKOFF_MAX + SLACK_SEC  # a healed replica's view complete again


@dataclass(frozen=True)
class Timings:
    lease_duration: float = 3.0
    renew_deadline: float = 2.0
    retry_period: float = 0.25

    def takeover_bound(self) -> float:
        """How long after a leader goes quiet another replica must hold the lease: it waits
        the Lease's whole seconds from the last change it saw (seen within a retry period),
        then acquires on its next round."""
        return math.ceil(self.lease_duration) + 3 * self.retry_period + SLACK_SEC


@dataclass
class Replicas:
    w: World
    apps: list[ControllerApp]
    fronts: dict[str, KubeFakeServer]
    timings: Timings

    def all_fresh(self) -> bool:
        """Every replica's view is complete (a replica healed from a fault may still be
        backing off before it relists: up to the reflector's backoff ceiling)."""
        return not any(has_gap(app) for app in self.apps)

    def leader(self) -> ControllerApp | None:
        writers = [a for a in self.apps if a.elector is not None and a.elector.may_write()]
        return writers[0] if len(writers) == 1 else None

    def lease(self) -> dict[str, Any]:
        lease = self.w.kube.get("Lease", LEASE_NAMESPACE, LEASE_NAME)
        assert lease is not None, "no Lease yet"
        return lease

    def overwrite_holder(self, holder: str) -> None:
        """What `kubectl edit lease` does: another holder, renewed now."""
        from lbhc.controller.leader import micro_time

        spec = self.lease()["spec"]
        now = micro_time()
        self.w.kube.patch(
            "Lease",
            LEASE_NAMESPACE,
            LEASE_NAME,
            {
                "spec": {
                    "holderIdentity": holder,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": int(spec.get("leaseTransitions") or 0) + 1,
                }
            },
        )


@contextmanager
def replicas(
    count: int, timings: Timings = Timings(), operation_latency: float = 0.0
) -> Iterator[Replicas]:
    identities = [f"replica-{chr(ord('a') + i)}" for i in range(count)]
    with world(operation_latency=operation_latency) as w:
        fronts = {i: KubeFakeServer(w.kube, name=i).start() for i in identities}
        apps = [
            w.start(
                identity=identity,
                leader_elect=True,
                kube_host=fronts[identity].url,
                lease_duration=timings.lease_duration,
                renew_deadline=timings.renew_deadline,
                retry_period=timings.retry_period,
            )
            for identity in identities
        ]
        try:
            yield Replicas(w, apps, fronts, timings)
        finally:
            for app in apps:  # before their fronts go: a clean stop releases the lease
                app.stop()
            for thread in w.threads:
                thread.join(timeout=40)
            for front in fronts.values():
                front.stop()


# -- how a leader loses its lease -------------------------------------------------------------


@dataclass(frozen=True)
class LeaseLoss:
    name: str
    strike: Callable[[Replicas, str, random.Random], None]  # (replicas, leader, rng)
    heal: Callable[[Replicas, str], None]


def _reject_renews(r: Replicas, leader: str, rng: random.Random) -> None:
    status = rng.choice([500, 503, 429])
    r.w.kube.faults.fail_requests(times=10**6, status=status, path_contains=LEASE, server=leader)


def _clear(r: Replicas, leader: str) -> None:
    r.w.kube.faults.clear()


def _cut_api(r: Replicas, leader: str, rng: random.Random) -> None:
    r.fronts[leader].stop()  # connections refused


def _restore_api(r: Replicas, leader: str) -> None:
    r.fronts[leader] = r.fronts[leader].restarted()


def _reset_api(r: Replicas, leader: str, rng: random.Random) -> None:
    r.w.kube.faults.start_outage(None, server=leader)


def _fail_api(r: Replicas, leader: str, rng: random.Random) -> None:
    r.w.kube.faults.start_outage(503, server=leader)


def _end_outage(r: Replicas, leader: str) -> None:
    r.w.kube.faults.end_outage()


def _blackhole_api(r: Replicas, leader: str, rng: random.Random) -> None:
    """Every request hangs longer than the lease lasts (a half-open path): nothing fails
    fast, so only the leader's own clock can tell it to stop."""
    hang = r.timings.lease_duration + rng.uniform(1.0, 3.0)
    r.w.kube.faults.delay_requests(hang, times=10**6, server=leader)


LOSSES = [
    LeaseLoss("renew-rejected", _reject_renews, _clear),
    LeaseLoss("api-refused", _cut_api, _restore_api),
    LeaseLoss("api-reset", _reset_api, _end_outage),
    LeaseLoss("api-503", _fail_api, _end_outage),
    LeaseLoss("api-blackholed", _blackhole_api, _clear),
]
