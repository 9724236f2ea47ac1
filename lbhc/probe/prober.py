"""NodeProber: probes the health port of the nodes whose kube-proxy version no Pod or node
field tells (planner.kube_proxy.nodes_to_probe), again every interval, in a background
thread; a changed answer triggers a reconcile. Never probes from the reconcile itself, so a
slow or black-holed node cannot stall a pass.

A node that does not answer is retried before that counts: only a refusal every time says
"no health server"; a timeout says nothing (the planner treats it as unknown). A node that
becomes marked for deletion is probed again at once, since its answer may now show
draining."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from lbhc.model.cluster import HealthProbe, ProbeTarget
from lbhc.probe.health_port import probe_health_port

log = logging.getLogger(__name__)
ProbeFn = Callable[[str, int, float], HealthProbe]


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
    ) -> None:
        self._port, self._interval, self._timeout = port, interval, timeout
        self._attempts, self._retry_delay = attempts, retry_delay
        self._on_change = on_change
        self._probe = probe
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
        if changed:
            self._wake.set()

    def results(self) -> dict[str, HealthProbe]:
        with self._lock:
            return dict(self._results)

    def _run(self) -> None:
        while not self._stop.is_set():
            woken = self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            with self._lock:
                targets = dict(self._targets)
                if woken:  # only what has no answer yet; the rest waits for its interval
                    targets = {n: t for n, t in targets.items() if n not in self._results}
            if targets:
                self.probe_now(targets)

    def _confirmed(self, target: ProbeTarget) -> HealthProbe:
        result = self._probe(target.address, self._port, self._timeout)
        refusals = int(result.refused)
        for _ in range(self._attempts - 1):
            if result.healthz is not None or self._stop.wait(self._retry_delay):
                break
            result = self._probe(target.address, self._port, self._timeout)
            refusals += int(result.refused)
        if result.healthz is None:  # "no health server" only if refused every time
            result = dataclasses.replace(result, refused=refusals == self._attempts)
        return dataclasses.replace(result, node_marked=target.node_marked)

    def probe_now(self, targets: Mapping[str, ProbeTarget]) -> None:
        futures = {node: self._pool.submit(self._confirmed, t) for node, t in targets.items()}
        changed = []
        for node, future in futures.items():
            result = future.result()
            with self._lock:
                if self._targets.get(node) != targets[node]:
                    continue  # the node went away, moved or changed while probing
                if self._results.get(node) != result:
                    changed.append(node)
                self._results[node] = result
        if changed:
            log.info("kube-proxy probe answers changed on %d node(s)", len(changed))
            self._on_change(f"kube-proxy probe changed on {changed[0]}")
