"""HealthProber: GCE-style legacy HTTP health checking of target-pool instances for the fake.

Installed as `ComputeFake.health_source`, it makes `targetPools.getHealth` answer what real
probes saw. Every target pool with a check attached (any project, any region) has each of its
instances probed with `GET http://HOST:PORT{requestPath}` once per `checkIntervalSec`; an HTTP 200
within `timeoutSec` is a success, anything else (another status, a refused or reset connection, a
timeout, an instance `resolve` cannot place) a failure.

Choices:
- State is kept per (check URL, instance URL): pools sharing a check share one state and one
  probe per interval, as one prober per check would. Pairs that leave the fake's state (check
  detached or deleted, instance removed, pool deleted) are dropped; if they come back they start
  over.
- A new pair is UNHEALTHY until `healthyThreshold` consecutive successes, because GCE reports
  instances unhealthy until they have passed their first checks. Its first probe goes out within
  one interval, at a fixed phase derived from the pair, so that many pairs appearing together
  (a check attached to a big pool) spread their probes over the interval instead of arriving at
  every instance server in one burst.
- `Host` is the check's `host` when set; otherwise "host:port" of the probed address (GCE would
  send the forwarding rule's IP, which the sandbox's servers do not care about).
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
transition and each change of the pair set comes with a copy of every pair's state taken in
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
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from .fake import ComputeFake
from .prober_http import CheckConfig, probe_http
from .store import HealthSource

log = logging.getLogger(__name__)

Resolve = Callable[[str, int], tuple[str, int] | None]
# observer(clock time, {(check URL, instance URL): state}) after every change the prober makes
Observer = Callable[[float, dict[tuple[str, str], str]], None]

HEALTHY = "HEALTHY"
UNHEALTHY = "UNHEALTHY"
_HISTORY = 1000  # transitions kept per instance


@dataclass(eq=False)
class _Pair:
    check: str
    instance: str
    config: CheckConfig
    first_due: float
    state: str = UNHEALTHY
    successes: int = 0  # consecutive
    failures: int = 0  # consecutive
    slot: float | None = None  # nominal time of the last probe; None before the first
    in_flight: bool = False
    gen: int = 0  # bumped to invalidate the pair's queued entry (its interval changed)

    def due(self, now: float) -> float:
        return self.first_due if self.slot is None else self.slot + self.config.interval


class HealthProber:
    """Probe every (check, instance) pair of the fake's target pools; serve getHealth from it.

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
        self._pairs: dict[tuple[str, str], _Pair] = {}
        self._probes: Counter[tuple[str, str]] = Counter()
        self._history: dict[str, deque[tuple[float, str, str]]] = {}
        self._observers: list[Observer] = []
        self._source: HealthSource = self.health  # the exact object installed in the fake
        self._previous: HealthSource | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # The probing loop's own state (touched by its thread only): due probes, earliest first.
        self._queue: list[tuple[float, int, int, _Pair]] = []  # (due, seq, gen, pair)
        self._seq = itertools.count()
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the health source and observability ---------------------------------------------------

    def health(self, pool: dict[str, Any], instance_url: str) -> str | None:
        """The fake's health_source: the state of (pool's check, instance); UNHEALTHY if unseen."""
        checks = pool.get("healthChecks") or []
        if not checks:
            return None  # no check: the fake's own rule applies
        with self._lock:
            pair = self._pairs.get((checks[0], instance_url))
            return UNHEALTHY if pair is None else pair.state

    def probes(self, instance_url: str | None = None, check_url: str | None = None) -> int:
        """HTTP probes sent so far (dropped pairs included), filtered by instance and/or check."""
        with self._lock:
            return sum(
                n
                for (check, instance), n in self._probes.items()
                if instance_url in (None, instance) and check_url in (None, check)
            )

    def transitions(
        self, instance_url: str, check_url: str | None = None
    ) -> list[tuple[float, str]]:
        """(clock time, new state) of the instance's state changes, oldest first: for one check,
        or merged across every check probing it when `check_url` is None. The initial UNHEALTHY
        of a new pair is not a transition; the last 1000 per instance are kept."""
        with self._lock:
            history = list(self._history.get(instance_url, ()))
        return [(t, state) for t, check, state in history if check_url in (None, check)]

    def add_observer(self, observer: Observer) -> None:
        """Call `observer(clock time, states)` after each transition and each change of the
        pair set (a check attached or detached, an instance or pool added or removed), where
        `states` maps every (check URL, instance URL) pair probed then to its state. Called on
        the probing thread, outside the prober's lock, in the order the changes happened: keep
        it quick (hand the snapshot to another thread). An exception is logged and ignored."""
        with self._lock:
            self._observers.append(observer)

    def _states(self) -> tuple[list[Observer], dict[tuple[str, str], str]]:
        """Under the lock: who to tell and what (nothing copied when nobody listens)."""
        if not self._observers:
            return [], {}
        return list(self._observers), {key: pair.state for key, pair in self._pairs.items()}

    def _notify(self, at: float, told: list[Observer], states: dict[tuple[str, str], str]) -> None:
        for observer in told:
            try:
                observer(at, dict(states))
            except Exception:
                log.exception("health prober: an observer failed")

    def pairs(self) -> set[tuple[str, str]]:
        """The (check URL, instance URL) pairs being probed now."""
        with self._lock:
            return set(self._pairs)

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
        return self._pairs.get((pair.check, pair.instance)) is pair

    def _rescan_fake(self) -> None:
        try:
            wanted = self._targets()
        except Exception:  # keep probing what is known; a later scan may succeed
            log.exception("health prober: reading the Compute fake failed")
            return
        now = self._clock()
        requeue: list[_Pair] = []
        told: list[Observer] = []
        states: dict[tuple[str, str], str] = {}
        with self._lock:
            gone = self._pairs.keys() - wanted.keys()
            added = wanted.keys() - self._pairs.keys()
            for key in gone:
                del self._pairs[key]  # its queued entry goes stale
            for key, config in wanted.items():
                pair = self._pairs.get(key)
                if pair is None:
                    phase = zlib.crc32("\n".join(key).encode()) / 2**32  # in [0, 1)
                    pair = self._pairs[key] = _Pair(*key, config, now + phase * config.interval)
                    requeue.append(pair)
                elif pair.config != config:
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

    def _targets(self) -> dict[tuple[str, str], CheckConfig]:
        checks = {c["selfLink"]: c for c in self._fake.all_resources("httpHealthChecks")}
        wanted: dict[tuple[str, str], CheckConfig] = {}
        for pool in self._fake.all_resources("targetPools"):
            for check_url in pool.get("healthChecks", [])[:1]:  # a pool has at most one
                check = checks.get(check_url)
                if check is None:
                    continue
                config = CheckConfig.of(check, self._scale)
                for instance in pool.get("instances", []):
                    wanted[(check_url, instance)] = config
        return wanted

    async def _probe(self, pair: _Pair, slots: asyncio.Semaphore) -> None:
        config = pair.config
        try:
            target = self._resolve(pair.instance, config.port)
        except Exception:
            log.exception("health prober: resolve(%s, %d) failed", pair.instance, config.port)
            target = None
        with self._lock:
            self._probes[(pair.check, pair.instance)] += 1
        try:
            if target is None:
                await asyncio.sleep(config.timeout)  # nobody answers
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
            history = self._history.setdefault(pair.instance, deque(maxlen=_HISTORY))
            history.append((now, pair.check, new))
            told, states = self._states()
        self._notify(now, told, states)
