"""How one Compute API call is bounded in time, on a scripted clock (no sockets, no waiting):
the bounds the defaults give, per attempt and in total; a silent endpoint's attempts cut to
the deadline and the one line that says so; retries logged below WARNING; and the sessions'
connection pools sized to the calls that run at once."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import requests
from google.auth.credentials import AnonymousCredentials
from requests.adapters import HTTPAdapter

from lbhc.gce.calls import AttemptTimeout, Caller, call_bound_sec
from lbhc.gce.client import GceClient
from lbhc.gce.config import OTHER_CALLERS, GceClientConfig
from lbhc.gce.errors import GceTimeout
from lbhc.kube.config import KubeConfig
from lbhc.settings import Settings
from tests.builders import PROJECT, REGION

ENDPOINT = "http://127.0.0.1:9"
REQUIRED = {"gce": {"project": PROJECT, "region": REGION, "node_tags": ["gke-node"]}}


def settings(**gce: object) -> Settings:
    return Settings.model_validate({"gce": {**REQUIRED["gce"], **gce}})


@pytest.mark.parametrize(
    ("command", "overrides", "attempt", "call", "poll", "kube"),
    [
        # A one-shot command: a silent endpoint is one line within 45 s.
        ("plan", {}, (10, 30), 45, 195, 35),
        # The controller rides out two minutes of trouble before a pass fails.
        ("run", {}, (10, 30), 120, 270, 35),
        # Fewer attempts than the deadline has room for: the attempts bound it.
        ("run", {"max_attempts": 2, "request_timeout_sec": 5}, (10, 5), 31, 270, 35),
        # Set, the deadline is the same for both; here six attempts end sooner.
        ("plan", {"call_timeout_sec": 300}, (10, 30), 271, 450, 35),
    ],
)
def test_the_bounds_the_settings_give(
    command: str,
    overrides: dict[str, object],
    attempt: tuple[float, float],
    call: float,
    poll: float,
    kube: float,
) -> None:
    """What README (Timeouts) states, computed from the settings: one attempt (connect,
    read), one call from its first request to its failure, one operation poll, and one
    Kubernetes request (connect, then a silent answer)."""
    config = settings(**overrides).gce_client_config(read_only=True, controller=command == "run")
    assert (config.connect_timeout_sec, config.request_timeout_sec) == attempt
    assert call_bound_sec(config) == call
    assert call_bound_sec(config, poll=True) == poll
    assert settings().kube_config().request_bound_sec == kube == KubeConfig().request_bound_sec


@dataclass
class Silent:
    """An endpoint that accepts and never answers, on a scripted clock: each attempt takes
    its whole read timeout (the connection is made at once), then raises as requests does."""

    now: float = 0.0
    timeouts: list[AttemptTimeout] = field(default_factory=list)
    started: list[float] = field(default_factory=list)
    slept: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def __call__(self, timeout: AttemptTimeout) -> Any:
        self.timeouts.append(timeout)
        self.started.append(self.now)
        self.now += min(timeout.read, timeout.total)
        raise requests.ReadTimeout("HTTPConnectionPool(host='127.0.0.1', port=9): Read timed out.")


def silent_call(config: GceClientConfig, monkeypatch: pytest.MonkeyPatch) -> tuple[Silent, str]:
    # The longest backoff each time: the fewest attempts fit, and the bound still holds.
    monkeypatch.setattr("lbhc.gce.calls.random.uniform", lambda low, high: high)
    endpoint = Silent()
    caller = Caller(config, AnonymousCredentials(), clock=endpoint.clock, sleep=endpoint.sleep)
    with pytest.raises(GceTimeout) as caught:
        caller.call("get_http_health_check", endpoint, mutating=False)
    assert isinstance(caught.value, OSError)  # where a failed list is a gap, it still is
    return endpoint, str(caught.value)


@pytest.mark.parametrize(
    ("controller", "attempts", "reads"),
    [(False, 2, [30, 14]), (True, 4, [30, 30, 30, 23])],
    ids=["one-shot", "controller"],
)
def test_a_silent_endpoint_is_one_line_within_the_calls_deadline(
    monkeypatch: pytest.MonkeyPatch, controller: bool, attempts: int, reads: list[float]
) -> None:
    config = replace(
        settings(endpoint=ENDPOINT).gce_client_config(read_only=True, controller=controller),
        reads_per_second=1000,
    )
    endpoint, message = silent_call(config, monkeypatch)
    deadline = config.call_timeout_sec
    assert endpoint.now == deadline == call_bound_sec(config)
    assert [t.read for t in endpoint.timeouts] == reads  # the last one cut to what was left
    # Each attempt may take, connecting and reading, only what is left of the call's time.
    assert [t.total for t in endpoint.timeouts] == [deadline - t for t in endpoint.started]
    assert message == (
        f"the Compute API at {ENDPOINT} did not answer within 30 s (read timeout, "
        f"{attempts} attempts, {deadline:.0f} s in total): check --gce-endpoint / "
        "LBHC_GCE_ENDPOINT and the network path to it (a proxy, an egress firewall or "
        "NetworkPolicy); gce.request_timeout_sec and gce.call_timeout_sec set how long lbhc "
        "waits"
    )


def test_no_retry_starts_without_a_second_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2.5 s deadline, 1 s attempts and 1 s backoffs: the second attempt gets what is
    left (0.5 s after its backoff would be too little for a third)."""
    config = GceClientConfig(
        PROJECT,
        REGION,
        endpoint=ENDPOINT,
        request_timeout_sec=1.0,
        call_timeout_sec=2.5,
        backoff_max_sec=0.5,
        reads_per_second=1000,
    )
    endpoint, message = silent_call(config, monkeypatch)
    assert [t.read for t in endpoint.timeouts] == [1.0, 1.0]
    assert endpoint.now == 2.5 == call_bound_sec(config)
    assert "did not answer within 1 s (read timeout, 2 attempts, 2.5 s in total)" in message


def test_a_retry_is_an_info_line_so_a_one_shot_terminal_never_shows_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`lbhc run` logs at INFO and shows each retry; a one-shot command logs WARNING and
    above, so its terminal gets only the one error line."""
    caplog.set_level(logging.DEBUG, logger="lbhc")
    config = GceClientConfig(PROJECT, REGION, endpoint=ENDPOINT, reads_per_second=1000)
    silent_call(config, monkeypatch)
    retries = [r for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) == 3
    assert {r.levelno for r in retries} == {logging.INFO}
    first = retries[0].getMessage()
    assert first.startswith("GCE get_http_health_check failed (ReadTimeout: "), first
    assert first.endswith("; retry 1 of up to 5 in 1.0 s (90 s of the call's 120 s left)"), first


def pool_sizes(client: GceClient) -> set[int]:
    """Every session's pool size, per adapter: the AuthorizedSession's and each
    google-cloud-compute client's REST transport's."""
    sessions: list[requests.Session] = [client._session]
    sessions += [c.transport._session for c in client._generated_clients()]
    sizes: set[int] = set()
    for session in sessions:
        for adapter in session.adapters.values():
            assert isinstance(adapter, HTTPAdapter)
            sizes.add(adapter.poolmanager.connection_pool_kw["maxsize"])
    return sizes


@pytest.mark.parametrize("concurrency", [1, 32, 64])
def test_every_session_keeps_as_many_connections_as_calls_run_at_once(
    concurrency: int,
) -> None:
    """gce.max_concurrent_pool_calls workers (the executor's), and the controller's other
    callers: requests' default of 10 made urllib3 discard the rest ("Connection pool is
    full")."""
    config = settings(endpoint=ENDPOINT, max_concurrent_pool_calls=concurrency)
    client = GceClient(config.gce_client_config(read_only=True), AnonymousCredentials())
    assert client.config.max_concurrent_calls == concurrency
    assert pool_sizes(client) == {concurrency + OTHER_CALLERS}
