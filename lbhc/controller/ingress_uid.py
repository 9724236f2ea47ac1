"""The cloud provider's cluster uid for the controller: read once, then again every refresh
period (it changes only if someone recreates the ConfigMap), keeping the last value when a
read fails so one API hiccup does not relabel every pool's check. The kube-proxy replacement
(a DaemonSet looked for by name) is read the same way."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lbhc.kube.client import describe_kube_error

log = logging.getLogger(__name__)


class CachedIngressUid:
    def __init__(
        self,
        read: Callable[[], str | None],
        refresh_sec: float,
        clock: Callable[[], float] = time.monotonic,
        what: str = "ConfigMap kube-system/ingress-uid",
    ) -> None:
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
