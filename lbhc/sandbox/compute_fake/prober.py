"""HealthProber: GCE-style HTTP health checking of load balancers' members for the fake.

Installed as `ComputeFake.health_source`, it makes `targetPools.getHealth` and
`regionBackendServices.getHealth` answer what real probes saw. Every target pool with a check
attached, and every regional backend service with an HTTP-type check (any project, any
region), has each of its members probed (probe_targets says which) with
`GET http://HOST:PORT{requestPath}` once per `checkIntervalSec`; an HTTP 200 within
`timeoutSec` is a success, anything else (another status, a refused or reset connection, a
timeout, an instance `resolve` cannot place) a failure.

Probes go where GCE sends them, and pass the firewall GCE would apply:
- A passthrough network load balancer's probes are addressed to the forwarding rule's IP on the
  check's port (kubernetes/kubernetes#117723; GCE docs "Health checks overview", "Probe IP
  ranges and firewall rules"), from Google's probe ranges for its scheme (external or
  internal passthrough: probe_targets). So health is kept per (check URL, instance URL,
  forwarding rule IP): a pool with two forwarding rules on two IPs has two states per
  instance, and pools sharing a check but not an IP do not share a state. Pools sharing a
  check and an IP share one state and one probe per interval, as one prober per check and
  address would.
- Before each probe the fake's own evaluator (firewall_eval) decides whether GCE would deliver
  it: from a concrete source address (the ranges in turn, a different address each probe, so a
  rule admitting part of a range admits part of the probes, as on GCE), to the rule's IP, tcp
  on the check's port, at the instance as the firewall sees it (its network, network tags and
  service accounts), under the VPC firewall rules and firewall policies the fake holds
  (networks.getEffectiveFirewalls) in the network's enforcement order. A dropped probe fails
  as a dropped packet does: at the timeout. Changes to the firewall apply from the next rescan.
- How an instance looks to the firewall, and where each probe comes from: probe_targets.py.
- A pool no forwarding rule points at has no address to probe in GCE terms; it keeps the
  fake's earlier behaviour: its instances are probed with no firewall gate, under the key
  (check, instance, ""), and getHealth (which then lists no IP) answers that state.

Choices:
- Keys that leave the fake's state (check detached or deleted, instance removed, pool
  deleted, forwarding rule deleted) are dropped; if they come back they start over.
- A new key is UNHEALTHY until `healthyThreshold` consecutive successes, because GCE reports
  instances unhealthy until they have passed their first checks. Its first probe goes out within
  one interval, at a fixed phase derived from the key, so that many keys appearing together
  (a check attached to a big pool) spread their probes over the interval instead of arriving at
  every instance server in one burst.
- The probe itself is sent to the address `resolve` gives for the instance (the sandbox's
  servers listen on loopback, not on the forwarding rule's IP). `Host` is the check's `host`
  when set; otherwise "host:port" of that address (GCE would send the forwarding rule's IP,
  which the sandbox's servers do not care about).
- An instance `resolve` cannot place is probed as a VM that never answers: it fails at the
  timeout. Such probes count in `probes()` like any other.
- A pool referring to a check the fake does not hold (seeded pools are not verified) is not
  probed; its instances read UNHEALTHY.

Probes run on one asyncio loop in a background thread (no thread per probe, at most
`max_in_flight` open connections); the fake's state is rescanned every `rescan_sec` under its
lock, probes never run under it, and probes add no journal entries (they are not API calls).
All durations from the checks are multiplied by `time_scale`; `clock` stamps transitions and
decides when probes are due.

Observers (`add_observer`) see every state the prober passes through, in order: each
transition and each change of the key set comes with a copy of every key's state taken in
the same critical section, so a test can judge every instant getHealth could have answered
rather than a sample of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

from lbhc.sandbox.lifecycle import StartedInWith

from .fake import ComputeFake
from .firewall_eval import Vm
from .probe_targets import PROBE_RANGES, Key, ProbeTargets, probe_source, read_targets
from .prober_http import CheckConfig, probe_http
from .prober_records import HEALTHY, UNHEALTHY, Observer, ProberRecords
from .store import HealthSource

log = logging.getLogger(__name__)

Resolve = Callable[[str, int], tuple[str, int] | None]
__all__ = ["HEALTHY", "UNHEALTHY", "HealthProber", "Observer", "Resolve"]


@dataclass(eq=False)
class _Pair:
    check: str
    instance: str
    ip: str  # the forwarding rule's IP the probes go to; "" for none (no firewall gate)
    config: CheckConfig
    vm: Vm
    first_due: float
    state: str = UNHEALTHY
    successes: int = 0  # consecutive
    failures: int = 0  # consecutive
    slot: float | None = None  # nominal time of the last probe; None before the first
    in_flight: bool = False
    gen: int = 0  # bumped to invalidate the pair's queued entry (its interval changed)
    sent: int = 0  # probes sent, to pick each one's source address
    sources: tuple[str, ...] = PROBE_RANGES  # where its probes come from

    @property
    def key(self) -> Key:
        return (self.check, self.instance, self.ip)

    def due(self, now: float) -> float:
        return self.first_due if self.slot is None else self.slot + self.config.interval


class HealthProber(ProberRecords, StartedInWith):
    """Probe every (check, instance, forwarding rule IP) of the fake's target pools and backend
    services through the fake's firewall; serve getHealth from it.

    `resolve(instance_url, check_port)` gives the (host, port) to probe or None (no address). It
    is called on the probing loop for every probe, so it must be quick and must not block.
    """

    def __init__(
        self,
        fake: ComputeFake,
        resolve: Resolve,
        *,
        time_scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        rescan_sec: float = 0.05,
        max_in_flight: int = 256,
    ) -> None:
        if time_scale <= 0 or rescan_sec <= 0 or max_in_flight < 1:
            raise ValueError("time_scale and rescan_sec must be > 0, max_in_flight >= 1")
        self._fake = fake
        self._resolve = resolve
        self._scale = time_scale
        self._clock = clock
        self._rescan = rescan_sec
        self._max_in_flight = max_in_flight
        self._lock = threading.Lock()  # pairs' health state, counters, history, lifecycle
        self._pairs: dict[Key, _Pair] = {}
        self._pool_ips: dict[str, list[str]] = {}  # LB URL -> its rules' IPs, last rescan
        self._unprobed: frozenset[str] = frozenset()  # backend services' checks not HTTP
        ProberRecords.__init__(self)
        self._source: HealthSource = self.health  # the exact object installed in the fake
        self._previous: HealthSource | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # The probing loop's own state (touched by its thread only): due probes, earliest first.
        self._queue: list[tuple[float, int, int, _Pair]] = []  # (due, seq, gen, pair)
        self._seq = itertools.count()
        self._targets = ProbeTargets()  # what the last rescan read
        self._wake = asyncio.Event()
        self._stopping = False
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> Self:
        """Install as the fake's health_source and start probing. Idempotent while running."""
        with self._lock:
            if self._closed:
                raise RuntimeError("HealthProber was closed; make a new one")
            if self._thread is not None:
                return self
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._run, args=(self._loop,), name="compute-fake-prober", daemon=True
            )
        # Outside our lock: the fake's store lock is never taken while holding it.
        self._previous = self._fake.health_source
        self._fake.health_source = self._source
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop probing and give the fake back its previous health_source, unless someone has
        replaced this prober meanwhile. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if thread is None:
            return
        if self._fake.health_source is self._source:
            self._fake.health_source = self._previous
        assert loop is not None
        with contextlib.suppress(RuntimeError):  # the loop already ended
            loop.call_soon_threadsafe(self._stop_soon)
        thread.join(timeout=10)

    # -- the health source and observability ---------------------------------------------------

    def health(
        self, pool: dict[str, Any], instance_url: str, ip_address: str | None = None
    ) -> str | None:
        """The fake's health_source: the state of (the pool's or backend service's check,
        instance, forwarding rule IP); UNHEALTHY if not probed yet. Without an IP (getHealth
        of a load balancer no rule points at, or a caller asking for it as a whole): HEALTHY
        only if HEALTHY at every IP of its forwarding rules as of the last rescan."""
        checks = pool.get("healthChecks") or []
        with self._lock:
            service = pool.get("kind") == "compute#backendService"
            if not checks or (service and checks[0] in self._unprobed):
                return None  # no check, or one not probed (not HTTP): the fake's own rule
            if ip_address is None:
                ips = self._pool_ips.get(str(pool.get("selfLink")), [""])
            else:
                ips = [ip_address]
            found = [self._pairs.get((checks[0], instance_url, ip)) for ip in ips]
            healthy = all(pair is not None and pair.state == HEALTHY for pair in found)
            return HEALTHY if healthy else UNHEALTHY

    # -- the probing loop ----------------------------------------------------------------------

    def _stop_soon(self) -> None:
        self._stopping = True
        self._wake.set()

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._schedule())
        except Exception:
            log.exception("health prober stopped")
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _schedule(self) -> None:
        slots = asyncio.Semaphore(self._max_in_flight)
        tasks: set[asyncio.Task[None]] = set()
        next_scan = self._clock()
        while not self._stopping:
            now = self._clock()
            if now >= next_scan:
                self._rescan_fake()
                next_scan = now + self._rescan
            while self._queue and self._queue[0][0] <= now:
                _, _, gen, pair = heapq.heappop(self._queue)
                if gen != pair.gen or pair.in_flight or not self._current(pair):
                    continue  # a stale entry
                due, interval = pair.due(now), pair.config.interval
                # Keep the phase unless more than a whole interval late (then restart it).
                pair.slot = due if pair.slot is not None and now - due < interval else now
                pair.in_flight = True
                task = asyncio.create_task(self._probe(pair, slots))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            wake = min(next_scan, self._queue[0][0]) if self._queue else next_scan
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, wake - self._clock()))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _enqueue(self, pair: _Pair) -> None:
        """Queue the pair's next probe (loop thread only); wake the loop if it comes first."""
        due = pair.due(self._clock())
        if not self._queue or due < self._queue[0][0]:
            self._wake.set()
        heapq.heappush(self._queue, (due, next(self._seq), pair.gen, pair))

    def _current(self, pair: _Pair) -> bool:
        return self._pairs.get(pair.key) is pair

    def _rescan_fake(self) -> None:
        try:
            targets = read_targets(self._fake, self._scale)
        except Exception:  # keep probing what is known; a later scan may succeed
            log.exception("health prober: reading the Compute fake failed")
            return
        now = self._clock()
        requeue: list[_Pair] = []
        told: list[Observer] = []
        states: dict[Key, str] = {}
        self._targets = targets  # its firewalls are read by probes, on this same thread
        wanted = targets.keys
        with self._lock:
            self._pool_ips = targets.pool_ips
            gone = self._pairs.keys() - wanted.keys()
            added = wanted.keys() - self._pairs.keys()
            for key in gone:
                del self._pairs[key]  # its queued entry goes stale
            self._unprobed = targets.unprobed
            for key, target in wanted.items():
                pair = self._pairs.get(key)
                config = target.config
                if pair is None:
                    named = "\n".join(part for part in key if part)
                    phase = zlib.crc32(named.encode()) / 2**32  # in [0, 1)
                    first = now + phase * config.interval
                    pair = _Pair(*key, config, target.vm, first, sources=target.sources)
                    self._pairs[key] = pair
                    requeue.append(pair)
                    continue
                pair.vm, pair.sources = target.vm, target.sources
                if pair.config != config:
                    if pair.config.interval != config.interval:
                        pair.gen += 1  # the queued due time is wrong now
                        requeue.append(pair)
                    pair.config = config
            if gone or added:
                told, states = self._states()
        for pair in requeue:
            if not pair.in_flight:  # an in-flight probe requeues its pair when it ends
                self._enqueue(pair)
        self._notify(now, told, states)

    def _admitted(self, pair: _Pair) -> bool:
        """Would GCE's firewall deliver this probe? (Probing loop only.) A pool no forwarding
        rule points at is not gated."""
        if not pair.ip:
            return True
        source = probe_source(pair.key, pair.sent, pair.sources)
        pair.sent += 1
        return self._targets.firewall_of(pair.vm.network).admits(
            source, pair.ip, pair.vm, pair.config.port
        )

    async def _probe(self, pair: _Pair, slots: asyncio.Semaphore) -> None:
        config = pair.config
        try:
            target = self._resolve(pair.instance, config.port)
        except Exception:
            log.exception("health prober: resolve(%s, %d) failed", pair.instance, config.port)
            target = None
        try:
            admitted = self._admitted(pair)
        except Exception:  # a rule the evaluator cannot read: the probe is not delivered
            log.exception("health prober: judging the firewall for %s failed", pair.key)
            admitted = False
        with self._lock:
            self._probes[pair.key] += 1
            if not admitted:
                self._dropped[pair.key] += 1
        try:
            if target is None or not admitted:
                await asyncio.sleep(config.timeout)  # nobody answers, or the packet is dropped
                ok = False
            else:
                async with slots:
                    ok = await probe_http(target, config)
        finally:
            pair.in_flight = False
        self._record(pair, ok)
        if self._current(pair):
            self._enqueue(pair)

    def _record(self, pair: _Pair, ok: bool) -> None:
        now = self._clock()
        with self._lock:
            if not self._current(pair):
                return  # dropped while in flight
            config = pair.config
            new: str | None = None
            if ok:
                pair.failures = 0
                pair.successes += 1
                if pair.state == UNHEALTHY and pair.successes >= config.healthy:
                    new = HEALTHY
            else:
                pair.successes = 0
                pair.failures += 1
                if pair.state == HEALTHY and pair.failures >= config.unhealthy:
                    new = UNHEALTHY
            if new is None:
                return
            pair.state = new
            self._remember(now, pair.instance, pair.check, pair.ip, new)
            told, states = self._states()
        self._notify(now, told, states)
