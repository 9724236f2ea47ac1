"""NodeProber: probes the health port of the nodes whose kube-proxy version no Pod image
tells (planner.kube_proxy.nodes_to_probe), again every interval, in a background thread; a
changed answer triggers a reconcile. Never probes from the reconcile itself, so a slow or
black-holed node cannot stall a pass.

A node that does not answer is retried before that counts, and "no health server" is a
verdict only when refusals persist: every attempt refused, on several rounds spanning at
least a minute, on a node that is Ready (a kube-proxy merely restarting refuses for seconds;
calling that "no health server" would push the whole cluster into fallback, withdrawing the
check the moment it matters). Until then the node keeps its last answer, or has none (a gap:
nothing is attached or detached on a guess); a refused round is retried sooner than the
interval. A timeout says nothing (unknown). A node that becomes marked for deletion is probed
again at once, since its answer may now show draining."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lbhc.model.cluster import HealthProbe, ProbeTarget
from lbhc.probe.health_port import probe_health_port

log = logging.getLogger(__name__)
ProbeFn = Callable[[str, int, float], HealthProbe]


@dataclass(frozen=True)
class Refusals:
    """A node's run of rounds in which every attempt was refused."""

    since: float  # when the first refused round ended
    rounds: int


class NodeProber:
    def __init__(
        self,
        port: int,
        interval: float,
        timeout: float,
        on_change: Callable[[str], None],
        *,
        concurrency: int = 16,
        attempts: int = 3,
        retry_delay: float = 1.0,
        probe: ProbeFn = probe_health_port,
        refusal_rounds: int = 3,
        refusal_window: float = 60.0,
        observe: Callable[[str], None] = lambda result: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`observe(result)` sees each probe request's outcome: answered, refused, timeout."""
        self._port, self._interval, self._timeout = port, interval, timeout
        self._attempts, self._retry_delay = attempts, retry_delay
        self._refusal_rounds, self._refusal_window = refusal_rounds, refusal_window
        self._on_change = on_change
        self._probe = probe
        self._observe = observe
        self._clock = clock
        self._refusals: dict[str, Refusals] = {}
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="probe")
        self._lock = threading.Lock()
        self._targets: dict[str, ProbeTarget] = {}
        self._results: dict[str, HealthProbe] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="node-prober", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.ident is not None:
            self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def set_targets(self, targets: Mapping[str, ProbeTarget]) -> None:
        """New nodes, moved nodes and nodes whose deletion mark changed are probed at once;
        until then they have no result (the controller counts that as an incomplete view)."""
        with self._lock:
            changed = {n for n, t in targets.items() if self._targets.get(n) != t}
            self._targets = dict(targets)
            self._results = {
                n: r for n, r in self._results.items() if n in self._targets and n not in changed
            }
            self._refusals = {
                n: r for n, r in self._refusals.items() if n in self._targets and n not in changed
            }
        if changed:
            self._wake.set()

    def results(self) -> dict[str, HealthProbe]:
        with self._lock:
            return dict(self._results)

    def _run(self) -> None:
        next_round = self._clock() + self._interval
        while not self._stop.is_set():
            with self._lock:
                refusing = bool(self._refusals)
            # A refused round is looked at again sooner: the verdict needs several.
            recheck = self._refusal_window / max(1, self._refusal_rounds - 1)
            wait = min(next_round - self._clock(), recheck if refusing else self._interval)
            self._wake.wait(max(0.0, wait))
            self._wake.clear()
            if self._stop.is_set():
                return
            due = self._clock() >= next_round
            with self._lock:
                targets = dict(self._targets)
                if not due:  # what has no answer yet, or is refusing; the rest waits
                    targets = {
                        n: t
                        for n, t in targets.items()
                        if n not in self._results or n in self._refusals
                    }
            if due:
                next_round = self._clock() + self._interval
            if targets:
                self.probe_now(targets)

    def _confirmed(self, target: ProbeTarget) -> tuple[HealthProbe, bool]:
        """(the round's result, whether every attempt was refused)."""
        result = self._attempt(target)
        refusals = int(result.refused)
        for _ in range(self._attempts - 1):
            if result.healthz is not None or self._stop.wait(self._retry_delay):
                break
            result = self._attempt(target)
            refusals += int(result.refused)
        all_refused = result.healthz is None and refusals == self._attempts
        result = dataclasses.replace(result, refused=False, node_marked=target.node_marked)
        return result, all_refused

    def _attempt(self, target: ProbeTarget) -> HealthProbe:
        result = self._probe(target.address, self._port, self._timeout)
        answered = result.healthz is not None
        self._observe("answered" if answered else "refused" if result.refused else "timeout")
        return result

    def _verdict(
        self, node: str, target: ProbeTarget, result: HealthProbe, refused: bool
    ) -> HealthProbe | None:
        """The answer to record, or None to keep the last one (a refusal not yet persistent:
        most likely a kube-proxy restarting). Call with the lock held."""
        if not refused:
            self._refusals.pop(node, None)
            return result
        now = self._clock()
        run = self._refusals.get(node)
        run = Refusals(now, 1) if run is None else Refusals(run.since, run.rounds + 1)
        self._refusals[node] = run
        persistent = (
            target.settled
            and run.rounds >= self._refusal_rounds
            and now - run.since >= self._refusal_window
        )
        return dataclasses.replace(result, refused=True) if persistent else None

    def probe_now(self, targets: Mapping[str, ProbeTarget]) -> None:
        futures = {node: self._pool.submit(self._confirmed, t) for node, t in targets.items()}
        changed = []
        for node, future in futures.items():
            answer, all_refused = future.result()
            with self._lock:
                if self._targets.get(node) != targets[node]:
                    continue  # the node went away, moved or changed while probing
                result = self._verdict(node, targets[node], answer, all_refused)
                if result is None:
                    continue
                if self._results.get(node) != result:
                    changed.append(node)
                self._results[node] = result
        if changed:
            log.info("kube-proxy probe answers changed on %d node(s)", len(changed))
            self._on_change(f"kube-proxy probe changed on {changed[0]}")
