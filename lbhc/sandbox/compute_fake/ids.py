"""Resource ids, operation names and RFC 3339 timestamps shaped like the real API's."""

from __future__ import annotations

import base64
import random
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

# The real API stamps times in US Pacific; a fixed -08:00 offset keeps output stable.
_PACIFIC = timezone(timedelta(hours=-8))


class IdSource:
    """Unique uint64-looking decimal ids and `operation-<ms>-<hex>` names."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._used: set[int] = set()
        self._lock = threading.Lock()

    def new_id(self) -> str:
        with self._lock:
            while True:
                # 19-digit ids, as real Compute ids look.
                value = self._rng.randrange(10**18, 2**63)
                if value not in self._used:
                    self._used.add(value)
                    return str(value)

    def fingerprint(self) -> str:
        """A new optimistic-locking fingerprint: 8 bytes, base64, like "h4b7fNVGrbk="."""
        with self._lock:
            raw = self._rng.getrandbits(64).to_bytes(8, "big")
        return base64.b64encode(raw).decode("ascii")

    def operation_name(self, wall_seconds: float) -> str:
        with self._lock:
            hexes = [f"{self._rng.getrandbits(bits):0{bits // 4}x}" for bits in (52, 32, 32)]
        return f"operation-{int(wall_seconds * 1000)}-" + "-".join(hexes)


class Timestamps:
    """Map the fake's clock (maybe injected) onto wall-clock RFC 3339 strings.

    Times follow the injected clock so an operation's insert/start/end times agree with the
    latency the test drives, while still looking like real dates.
    """

    def __init__(self, clock: Callable[[], float], wall_now: float) -> None:
        self._clock = clock
        self._origin_clock = clock()
        self._origin_wall = wall_now

    def wall(self, clock_value: float | None = None) -> float:
        value = self._clock() if clock_value is None else clock_value
        return self._origin_wall + (value - self._origin_clock)

    def rfc3339(self, clock_value: float | None = None) -> str:
        moment = datetime.fromtimestamp(self.wall(clock_value), _PACIFIC)
        return moment.isoformat(timespec="milliseconds")
