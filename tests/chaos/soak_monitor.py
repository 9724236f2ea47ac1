"""The "no black hole" monitor: at no instant may a target pool carry our check while every
one of its instances is UNHEALTHY in GCE's (emulated) checker although one of them should be
healthy; nor may a pool carry our check while our firewall is missing (real health checkers
would then be blocked on every node; the fake's prober ignores firewalls, so this is judged
from the resources).

Instants. The prober's answers only change at its transitions and when pairs of (check,
instance) appear or go; its observer hook hands over every such state, in order, with the
time. Each is judged, and so is the world after every churn action (the driver calls
`judge_now`) and on a tick of `tick` seconds (a node's grace, below, runs out with time
alone). Each judgement is one instant checked: the prober's states as of that change, the
pools, firewall and nodes as read when it is judged (milliseconds later; pools are read
before and after the firewall, so a check-without-firewall needs both reads to agree).

"Because of us". A node *should be healthy* when it exists, is not being deleted or tainted
ToBeDeletedByClusterAutoscaler (unless its kube-proxy version does not drain), its kube-proxy
is a version that serves /healthz to a remote checker and its emulated server is up; judged
from the kube fake and the fleet, with the emulator's own rules (lbhc.sandbox.kube_proxy), not
lbhc's. A pool whose instances are all draining or down is legitimately all-UNHEALTHY (a target
pool then fails open) and is not counted. A node counts only once it has been such for
`grace`, and an instance only once its pair has been probed for `grace`: the prober marks a
new pair UNHEALTHY until it passes `healthyThreshold` probes, the first within one interval
(as GCE reports an instance UNHEALTHY until its first checks pass; the pool fails open
meanwhile), and a recovered node needs one passing probe. grace = (healthyThreshold + 2) x
interval + timeout + 1 s: the first probe's phase (up to an interval), the passing probes,
one more interval and a second of slack for a loaded machine.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lbhc.model.cloud import resource_path
from lbhc.sandbox.kube_proxy import drains, image_version, node_eligible, reachable
from tests.chaos.soak_world import SoakWorld

HEALTHY = "HEALTHY"
# (check URL, instance URL, forwarding rule IP or "") -> state, as the prober keeps it
States = dict[tuple[str, str, str], str]


@dataclass
class Tally:
    instants: int = 0
    black_holes: int = 0  # instants with at least one pool black-holed because of us
    unguarded: int = 0  # instants with our check on a pool and no firewall of ours
    # Instants with a pool of ours all UNHEALTHY that did not count: no node should serve
    # (every one draining or down), or one should but is still within its grace.
    excused_drained: int = 0
    excused_grace: int = 0
    details: list[str] = field(default_factory=list)  # the first few, for the failure message

    def note(self, what: str) -> None:
        if len(self.details) < 10:
            self.details.append(what)


class BlackHoleMonitor:
    def __init__(self, world: SoakWorld, *, tick: float = 0.05) -> None:
        interval, timeout, healthy = world.check_timings()
        self.grace = (healthy + 2) * interval + timeout + 1.0
        self._world = world
        self._tick = tick
        self._events: queue.SimpleQueue[tuple[float, States]] = queue.SimpleQueue()
        self._lock = threading.Lock()  # one judgement at a time; the fields below
        self._states: States = {}
        self._first_seen: dict[tuple[str, str, str], float] = {}
        self._able_since: dict[str, float] = {}
        self.tally = Tally()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-monitor", daemon=True)
        self._error: BaseException | None = None

    def start(self) -> BlackHoleMonitor:
        self._world.prober.add_observer(lambda at, states: self._events.put((at, states)))
        self._thread.start()
        return self

    def stop(self, *, check: bool = True) -> Tally:
        """`check`: raise if the monitor died (a dead monitor proves nothing); off when
        another failure is already on its way, so it is not masked."""
        self._stop.set()
        self._thread.join(10)
        if check and self._error is not None:
            raise AssertionError("the black-hole monitor failed") from self._error
        return self.tally

    def judge_now(self) -> None:
        """After a churn action: judge the world as it is now (from the caller's thread)."""
        self._judge(time.monotonic(), None)

    # -- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    at, states = self._events.get(timeout=self._tick)
                except queue.Empty:
                    self._judge(time.monotonic(), None)
                    continue
                self._judge(at, states)
        except BaseException as exc:  # surfaced by stop(): a dead monitor proves nothing
            self._error = exc

    def _judge(self, at: float, states: States | None) -> None:
        world = self._world
        with self._lock:
            if states is not None:
                self._track_pairs(at, states)
            able = self._track_nodes()
            project, region = world.spec.project, world.spec.region
            before = world.compute.target_pools(project, region)
            firewall = world.compute.firewalls(project).get(world.check_name)
            after = world.compute.target_pools(project, region)
            ips: dict[str, list[str]] = {}
            for rule in world.compute.forwarding_rules(project, region).values():
                ips.setdefault(str(rule.get("target")), []).append(str(rule["IPAddress"]))
            self.tally.instants += 1
            ours = resource_path(world.check_url)
            holes, unguarded, excuses = [], [], set()
            for name, pool in after.items():
                checks = [str(u) for u in pool.get("healthChecks", [])[:1]]
                if not checks or resource_path(checks[0]) != ours:
                    continue
                if _carries(before.get(name), ours) and not _opens(firewall, world):
                    unguarded.append(name)
                hole = self._black_hole(
                    at, checks[0], pool, ips.get(pool["selfLink"]) or [""], able
                )
                if hole in ("drained", "grace"):
                    excuses.add(hole)
                elif hole:
                    holes.append(f"{name}: {hole}")
            if holes:
                self.tally.black_holes += 1
                self.tally.note(f"t={at:.2f} black hole: {'; '.join(holes)}")
            self.tally.excused_drained += "drained" in excuses
            self.tally.excused_grace += "grace" in excuses
            if unguarded:
                self.tally.unguarded += 1
                self.tally.note(f"t={at:.2f} check without firewall on {sorted(unguarded)}")

    def _track_pairs(self, at: float, states: States) -> None:
        for key in self._first_seen.keys() - states.keys():
            del self._first_seen[key]  # detached: if it comes back it starts over
        for key in states.keys() - self._first_seen.keys():
            self._first_seen[key] = at
        self._states = states

    def _track_nodes(self) -> dict[str, float]:
        """Node -> since when it should be healthy: the first judgement that saw it so (not
        the prober event's time, which may be a moment older)."""
        seen = time.monotonic()
        world = self._world
        versions = _kube_proxy_versions(world.kube.objects("Pod"))
        able_now = {
            name
            for node in world.kube.objects("Node")
            if _should_serve(node, versions.get(name := node["metadata"]["name"]))
            and world.fleet.endpoint(name) is not None
        }
        for name in self._able_since.keys() - able_now:
            del self._able_since[name]
        for name in able_now - self._able_since.keys():
            self._able_since[name] = seen
        return dict(self._able_since)

    def _black_hole(
        self, at: float, check: str, pool: dict[str, Any], ips: list[str], able: dict[str, float]
    ) -> str:
        """Why this pool is black-holed because of us at `at`; "" if some instance is
        HEALTHY at one of the pool's forwarding rule IPs (the prober keeps health per IP;
        "" for a pool no rule points at); "drained" or "grace" if all are UNHEALTHY for a
        reason not ours."""
        instances = [str(i) for i in pool.get("instances", [])]
        keys = {i: [(check, i, ip) for ip in ips] for i in instances}
        if not instances or any(
            self._states.get(key) == HEALTHY for i in instances for key in keys[i]
        ):
            return ""
        if not any(_node_of(i) in able for i in instances):
            return "drained"
        settled = [
            i
            for i in instances
            if at - able.get(_node_of(i), at) >= self.grace
            and all(at - self._first_seen.get(key, at) >= self.grace for key in keys[i])
        ]
        if not settled:
            return "grace"
        return f"every instance UNHEALTHY, yet {[_node_of(i) for i in settled]} should serve"


def _carries(pool: dict[str, Any] | None, ours: str) -> bool:
    checks = (pool or {}).get("healthChecks", [])[:1]
    return bool(checks) and resource_path(str(checks[0])) == ours


def _opens(firewall: dict[str, Any] | None, world: SoakWorld) -> bool:
    """Our firewall exists and lets the checker reach the check's port."""
    if firewall is None:
        return False
    port = str(world.settings.health_check.port if world.settings else 10256)
    return any(
        a.get("IPProtocol") == "tcp" and port in a.get("ports", [])
        for a in firewall.get("allowed", [])
    )


def _kube_proxy_versions(pods: list[dict[str, Any]]) -> dict[str, tuple[int, int, int] | None]:
    found: dict[str, tuple[int, int, int] | None] = {}
    for pod in pods:
        if (pod.get("metadata") or {}).get("namespace") != "kube-system":
            continue
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        node = (pod.get("spec") or {}).get("nodeName", "")
        found[node] = image_version(str(containers[0].get("image") or ""))
    return found


def _should_serve(node: dict[str, Any], version: tuple[int, int, int] | None) -> bool:
    if version is None or not reachable(version):
        return False
    return node_eligible(node) or not drains(version)


def _node_of(instance_url: str) -> str:
    return instance_url.rsplit("/", 1)[-1]
