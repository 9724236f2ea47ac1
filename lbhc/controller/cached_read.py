"""A small fact the controller reads from the API server outside its watches: the cloud
provider's cluster uid (ConfigMap kube-system/ingress-uid, which changes only if someone
recreates it) and the kube-proxy replacement (a DaemonSet looked for by name). Read once,
then again every refresh period, keeping the last value when a read fails so one API hiccup
does not relabel every pool's check."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lbhc.kube.client import describe_kube_error

log = logging.getLogger(__name__)


class CachedRead:
    def __init__(
        self,
        read: Callable[[], str | None],
        what: str,
        refresh_sec: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`what`: what is read, for the warning when it cannot be."""
        self._read = read
        self._what = what
        self._refresh_sec = refresh_sec
        self._clock = clock
        self._value: str | None = None
        self._read_at: float | None = None

    def get(self) -> str | None:
        now = self._clock()
        if self._read_at is not None and now - self._read_at < self._refresh_sec:
            return self._value
        try:
            self._value = self._read()
        except Exception as exc:  # keep the last value; try again next pass
            log.warning("cannot read %s (%s)", self._what, describe_kube_error(exc))
            return self._value
        self._read_at = now
        return self._value
