"""The black-hole rule, watched while the trial runs: a pool must never start carrying our
check while our firewall is absent (every node would fail the check), and the firewall must
never go while a pool carries the check (ingress-gce#1625). Operations take at least the
fake's latency, so windows are long enough for a fine sampler to see them; sampling sees
what any observer of the API would, across both processes and their in-flight operations.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Self

from lbhc.sandbox.compute_fake import ComputeFake
from tests.chaos.kill9_world import our_check_url
from tests.controller.harness import NAME, PROJECT, REGION

SAMPLE_EVERY = 0.02


class SafetyMonitor:
    def __init__(self, compute: ComputeFake) -> None:
        self._compute = compute
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kill9-monitor", daemon=True)
        self.violations: list[str] = []
        self.samples = 0
        attached, firewall = self._sample()
        # Pools checked through a closed port before the trial (a firewall deleted by hand)
        # are drift to repair, not lbhc's doing; anything more is.
        self._inherited = attached if not firewall else set()
        self._had_firewall = firewall

    def _sample(self) -> tuple[set[str], bool]:
        # Pools first: an attachment seen here was made before the firewall read below.
        pools = self._compute.target_pools(PROJECT, REGION)
        url = our_check_url()
        attached = {name for name, pool in pools.items() if url in pool.get("healthChecks", [])}
        return attached, NAME in self._compute.firewalls(PROJECT)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            self.check()

    def check(self) -> None:
        attached, firewall = self._sample()
        self.samples += 1
        if not firewall:
            for pool in sorted(attached - self._inherited):
                self._flag(f"pool {pool} carries our check while our firewall is absent")
            if self._had_firewall and attached:
                self._flag(f"firewall gone while pools {sorted(attached)} carry the check")
        else:
            self._inherited = set()
        self._had_firewall = firewall

    def _flag(self, violation: str) -> None:
        if violation not in self.violations:
            self.violations.append(violation)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.check()  # the final state too
