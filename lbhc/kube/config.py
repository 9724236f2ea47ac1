"""How KubeApi connects: which cluster, and how long each request may take."""

from __future__ import annotations

from dataclasses import dataclass

# Requests in flight at once on one client: a watch per watched resource, each holding its
# connection for minutes, plus the Lease, Events, the readiness patches and cached reads.
# The kubernetes client's default is 5 per CPU, which a small Pod's 1 would make too few.
MIN_CONNECTIONS = 12


@dataclass(frozen=True)
class KubeConfig:
    kubeconfig: str | None = None
    context: str | None = None
    host: str | None = None  # a plain URL instead of a kubeconfig (tests, the sandbox)
    # One request is one attempt (urllib3's own retries are off: each would be a warning
    # line of its own, and a retry behind the caller's back): at most this long to connect,
    # then this long for each read of the answer. lbhc's loops retry, each with its backoff.
    connect_timeout_sec: float = 5.0
    read_timeout_sec: float = 30.0
    # Longer than the server's bookmark interval (about a minute), or quiet watches would
    # time out; short enough that a half-open connection is noticed.
    watch_read_timeout_sec: float = 90.0

    @property
    def request_bound_sec(self) -> float:
        """The longest one request (not a watch) can take: connect, then a silent answer."""
        return self.connect_timeout_sec + self.read_timeout_sec
