"""The health prober's records: probes sent and dropped, state transitions, and observers
of every state the prober passes through (prober.HealthProber holds them; its loop writes
them under its lock, tests and the demo read them)."""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from .probe_targets import Key

log = logging.getLogger(__name__)

# observer(clock time, {key: state}) after every change the prober makes
Observer = Callable[[float, dict[Key, str]], None]

HEALTHY = "HEALTHY"
UNHEALTHY = "UNHEALTHY"
_HISTORY = 1000  # transitions kept per instance


class ProberRecords:
    _lock: threading.Lock
    _pairs: dict[Key, Any]

    def __init__(self) -> None:
        self._probes: Counter[Key] = Counter()
        self._dropped: Counter[Key] = Counter()
        self._history: dict[str, deque[tuple[float, str, str, str]]] = {}
        self._observers: list[Observer] = []

    def _remember(self, at: float, instance: str, check: str, ip: str, state: str) -> None:
        """Under the lock: one transition of (check, instance, ip)."""
        history = self._history.setdefault(instance, deque(maxlen=_HISTORY))
        history.append((at, check, ip, state))

    def probes(
        self,
        instance_url: str | None = None,
        check_url: str | None = None,
        ip_address: str | None = None,
    ) -> int:
        """Probes sent so far (dropped keys and firewall-dropped probes included), filtered by
        instance, check and/or forwarding rule IP ("" for pools no rule points at)."""
        return self._count(self._probes, instance_url, check_url, ip_address)

    def dropped(
        self,
        instance_url: str | None = None,
        check_url: str | None = None,
        ip_address: str | None = None,
    ) -> int:
        """Probes the firewall dropped so far, filtered as `probes`."""
        return self._count(self._dropped, instance_url, check_url, ip_address)

    def _count(
        self, counter: Counter[Key], instance: str | None, check: str | None, ip: str | None
    ) -> int:
        with self._lock:
            return sum(
                n
                for (c, i, a), n in counter.items()
                if instance in (None, i) and check in (None, c) and ip in (None, a)
            )

    def transitions(
        self, instance_url: str, check_url: str | None = None, ip_address: str | None = None
    ) -> list[tuple[float, str]]:
        """(clock time, new state) of the instance's state changes, oldest first: for one check
        and/or one forwarding rule IP, or merged across every check and IP probing it when they
        are None. The initial UNHEALTHY of a new key is not a transition; the last 1000 per
        instance are kept."""
        with self._lock:
            history = list(self._history.get(instance_url, ()))
        return [
            (t, state)
            for t, check, ip, state in history
            if check_url in (None, check) and ip_address in (None, ip)
        ]

    def add_observer(self, observer: Observer) -> None:
        """Call `observer(clock time, states)` after each transition and each change of the
        key set (a check attached or detached, an instance, pool or forwarding rule added or
        removed), where `states` maps every (check URL, instance URL, forwarding rule IP) key
        probed then to its state (IP "" for a pool no rule points at). Called on
        the probing thread, outside the prober's lock, in the order the changes happened: keep
        it quick (hand the snapshot to another thread). An exception is logged and ignored."""
        with self._lock:
            self._observers.append(observer)

    def _states(self) -> tuple[list[Observer], dict[Key, str]]:
        """Under the lock: who to tell and what (nothing copied when nobody listens)."""
        if not self._observers:
            return [], {}
        return list(self._observers), {key: pair.state for key, pair in self._pairs.items()}

    def _notify(self, at: float, told: list[Observer], states: dict[Key, str]) -> None:
        for observer in told:
            try:
                observer(at, dict(states))
            except Exception:
                log.exception("health prober: an observer failed")

    def pairs(self) -> set[tuple[str, str]]:
        """The (check URL, instance URL) pairs being probed now, at whatever IPs."""
        with self._lock:
            return {(check, instance) for check, instance, _ in self._pairs}

    def probe_keys(self) -> set[Key]:
        """The (check URL, instance URL, forwarding rule IP) keys being probed now."""
        with self._lock:
            return set(self._pairs)
