"""Seeded random faults for one soak step, through the fakes' public fault plans: Compute
429, 403 rateLimitExceeded and 503 bursts, mutations applied but answered 503 (a lost
response), operations that end in error, a rate limit and latency; Kubernetes 500s (on any
path, or on one resource's), watches cut mid-stream and expired continue tokens. `lift()`
clears them all; what was injected and what was answered with an injected error are counted.

A Kubernetes fault only bites a request that is made: lbhc's watches stay open for minutes,
so 500s come with the streams cut (an apiserver restarting), and expired continue tokens
with short pages and a 410 on the re-watch (etcd compacted: the reflector must relist, page
by page, and the tokens expire under it).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake

KUBE_PATHS = (None, "/nodes", "/services", "/pods", "/leases", "/events")


class FaultMix:
    def __init__(self, compute: ComputeFake, kube: KubeFake, rng: random.Random) -> None:
        self._compute, self._kube, self._rng = compute, kube, rng
        self.injected: Counter[str] = Counter()  # fault class -> injections
        self.hits: Counter[str] = Counter()  # "compute"/"kube" -> requests answered by a fault
        self._marks = (0, 0)
        self._classes: dict[str, Callable[[], None]] = {
            "compute-429": lambda: self._compute_burst(429),
            "compute-403-rate-limit-exceeded": lambda: self._compute_burst(403),
            "compute-503": lambda: self._compute_burst(503),
            "compute-lost-response": self._lost_response,
            "compute-operation-error": self._operation_error,
            "compute-rate-limit": lambda: self._compute.faults.rate_limit(
                per_second=self._rng.choice((1.0, 2.0, 5.0)), burst=2
            ),
            "compute-latency": lambda: self._compute.faults.latency(self._rng.uniform(0.1, 0.6)),
            "kube-500": self._kube_500,
            "kube-drop-watches": self._kube.faults.drop_watches,
            "kube-expire-continue": self._kube_expired,
        }

    @property
    def classes(self) -> list[str]:
        return sorted(self._classes)

    def inject(self) -> list[str]:
        """None (a third of the steps: churn alone), one or two fault classes, at once."""
        count = self._rng.choices((0, 1, 2), (1, 2, 1))[0]
        chosen = self._rng.sample(self.classes, count)
        self._marks = (len(self._compute.journal), len(self._kube.journal))
        for name in chosen:
            self._classes[name]()
            self.injected[name] += 1
        return chosen

    def during(self, chosen: list[str]) -> None:
        """While faults hold: cut the watches again, as a flapping load balancer would."""
        if "kube-drop-watches" in chosen:
            self._kube.faults.drop_watches()

    def lift(self) -> None:
        self._compute.faults.clear()
        self._kube.faults.clear()
        compute_mark, kube_mark = self._marks
        self.hits["compute"] += sum(
            1 for e in self._compute.journal[compute_mark:] if e.status in (403, 429, 503)
        )
        self.hits["kube"] += sum(
            1 for e in self._kube.journal[kube_mark:] if e.status in (410, 500)
        )
        self._marks = (len(self._compute.journal), len(self._kube.journal))

    # -- the classes ----------------------------------------------------------------------

    def _times(self) -> int:
        # Up to 8 in a row: more than a GCE call's 6 attempts, so some calls fail outright.
        return self._rng.randint(1, 8)

    def _compute_burst(self, status: int) -> None:
        self._compute.faults.fail_requests(times=self._times(), status=status)

    def _lost_response(self) -> None:
        self._compute.faults.fail_requests(
            times=self._rng.randint(1, 3), status=503, method="POST", after_apply=True
        )

    def _operation_error(self) -> None:
        reason = self._rng.choice(("backendError", "resourceInUseByAnotherResource"))
        status = 503 if reason == "backendError" else 400
        self._compute.faults.fail_operations(
            times=self._rng.randint(1, 3), status=status, reason=reason
        )

    def _kube_500(self) -> None:
        self._kube.faults.fail_requests(
            times=self._times(), status=500, path_contains=self._rng.choice(KUBE_PATHS)
        )
        self._kube.faults.drop_watches()

    def _kube_expired(self) -> None:
        faults = self._kube.faults
        faults.limit_page_size(self._rng.choice((1, 2, 3)))
        faults.expire_continue_tokens(self._rng.randint(1, 3))
        faults.fail_requests(times=self._rng.randint(1, 4), status=410, watch=True)
        faults.drop_watches()
