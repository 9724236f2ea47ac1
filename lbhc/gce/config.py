"""How GceClient connects: endpoint, credentials, pacing, retries and timeouts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_ENDPOINT = "https://compute.googleapis.com"
# How long one call may take in all, its retries and the backoff between them included, when
# gce.call_timeout_sec is not set. A one-shot command has a person waiting: a Compute API
# that does not answer is one line within 45 s (a 30 s read timeout and one shortened retry).
# The controller rides out longer trouble (a rate-limit storm's full backoff) rather than
# fail a pass, which would re-read the region to retry it.
ONE_SHOT_CALL_TIMEOUT_SEC = 45.0
CONTROLLER_CALL_TIMEOUT_SEC = 120.0
# Sessions keep this many connections beyond max_concurrent_calls: the controller's pass
# thread and its load-balancer verifier call while the executor's workers do.
OTHER_CALLERS = 2


@dataclass(frozen=True)
class GceClientConfig:
    project: str
    region: str
    endpoint: str = DEFAULT_ENDPOINT
    read_only: bool = False
    mutations_per_second: float = 10.0
    reads_per_second: float = 50.0
    max_attempts: int = 6
    backoff_initial_sec: float = 1.0
    backoff_max_sec: float = 30.0
    # One attempt: this long to connect, then this long for each read of the answer (an
    # operation poll waits operation_poll_timeout_sec instead).
    connect_timeout_sec: float = 10.0
    request_timeout_sec: float = 30.0
    # One call, every attempt and backoff: no attempt starts, and none runs, past it.
    call_timeout_sec: float = CONTROLLER_CALL_TIMEOUT_SEC
    operation_timeout_sec: float = 600.0
    # Per `wait` request: the API answers within ~2 min, done or not.
    operation_poll_timeout_sec: float = 150.0
    # Threads that may call at once (the executor's workers): each session keeps as many
    # connections, so none is opened and thrown away (urllib3's "Connection pool is full").
    max_concurrent_calls: int = 32
    client_id: str = ""
    # Where the VPC network and its firewall rules live: a Shared VPC's host project; "" is
    # `project` itself.
    network_project: str = ""
    # The nodes' VPC network, a name or a path: its effective firewall says whether the
    # health checkers reach them.
    network: str = "default"

    @property
    def firewall_project(self) -> str:
        return self.network_project or self.project


def make_credentials(endpoint: str) -> Any:
    """Anonymous for a plain-http endpoint (a local fake); otherwise ADC. None found is a
    SetupError (exit 2) saying how to provide some. google-auth's own warnings on the way
    (no metadata server, no project id) are dropped: they precede that one line, or are
    noise when credentials were found."""
    if endpoint.startswith("http://"):
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials()
    import logging

    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    from lbhc.errors import SetupError, credentials_missing

    quiet = logging.Filter("lbhc")  # passes only records of lbhc's loggers: none here
    google_default = logging.getLogger("google.auth._default")
    google_default.addFilter(quiet)
    try:
        credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/compute"])
    except DefaultCredentialsError as exc:
        raise SetupError(credentials_missing(exc)) from exc
    finally:
        google_default.removeFilter(quiet)
    return credentials
