"""One emulated kube-proxy health server on a real socket.

It asks `state` for the node's condition on every request, so a taint written to the
apiserver fake shows in the very next answer, as a real kube-proxy's node informer would
make it within milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Self
from urllib.parse import urlsplit

from lbhc.sandbox.lifecycle import StartedInWith
from lbhc.sandbox.streaming import Body, StreamingServer

from .behaviour import Version, reachable, respond, respond_cilium


@dataclass(frozen=True)
class NodeState:
    """What the node looks like to its kube-proxy right now."""

    eligible: bool
    proxier_healthy: bool = True
    last_updated: datetime | None = None  # the proxier's last sync; None: now
    # A deletionTimestamp, or gone from the apiserver: all Cilium's replacement looks at.
    deleted: bool = False


def utc_now() -> datetime:
    return datetime.now(UTC)


class KubeProxyServer(StartedInWith):
    """kube-proxy `version`'s health server on http://host:port (port 0 picks a free one);
    `version` None is Cilium's kube-proxy replacement instead. start/stop or `with`; OSError
    from start when the address is taken."""

    def __init__(
        self,
        version: Version | None,
        state: Callable[[], NodeState],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        draining_gate: bool | None = None,
        clock: Callable[[], datetime] = utc_now,
        name: str = "kube-proxy",
    ) -> None:
        if version is not None and not reachable(version):
            raise ValueError("kube-proxy older than 1.7.2 serves no reachable health endpoint")
        self.version = version
        self.host = host
        self._state = state
        self._draining_gate = draining_gate
        self._clock = clock
        self._requests = 0
        self._lock = threading.Lock()
        self._server = StreamingServer(self._dispatch, f"{name}-health", host, port)
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound port; kept after stop, so a lookup racing a restart gets an address that
        refuses (as a node whose kube-proxy restarts does) rather than an error."""
        if self._port is None:
            raise RuntimeError("the kube-proxy server was never started")
        return self._port

    @property
    def endpoint(self) -> tuple[str, int]:
        return self.host, self.port

    @property
    def requests(self) -> int:
        """Requests answered so far, any path: the probe load this node saw."""
        with self._lock:
            return self._requests

    def _dispatch(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], Body]:
        with self._lock:
            self._requests += 1
        state = self._state()
        now = self._clock()
        if self.version is None:
            answer = respond_cilium(
                urlsplit(target).path,
                node_deleted=state.deleted,
                agent_healthy=state.proxier_healthy,
                now=now,
                last_updated=state.last_updated or now,
            )
            return answer.status, answer.headers, answer.body
        answer = respond(
            urlsplit(target).path,
            self.version,
            node_eligible=state.eligible,
            proxier_healthy=state.proxier_healthy,
            now=now,
            last_updated=state.last_updated or now,
            draining_gate=self._draining_gate,
        )
        return answer.status, answer.headers, answer.body

    def start(self) -> Self:
        self._server.start()
        port = urlsplit(self._server.url).port
        assert port is not None  # the URL of a bound server always has one
        self._port = port
        return self

    def stop(self) -> None:
        """Idempotent; open connections are closed, so a prober sees the node go away."""
        self._server.stop()

    close = stop  # what leaving a `with` block does (StartedInWith)
