"""GceClient's failures whose fix is not lbhc's, through the real clients over real sockets:
an endpoint that cannot be reached (given up on at once, until it has answered once), one
that is not the Compute API, a project or region that does not exist. Each is one error
naming the flag; the Compute API's own errors stay as they are for everything else."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import requests
from google.api_core import exceptions as core

from lbhc.errors import SetupError
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.gce.errors import GceNotCompute, GceScopeError, GceUnreachable
from lbhc.sandbox.compute_fake import ComputeFakeServer
from lbhc.sandbox.streaming import StreamingServer
from tests.builders import PROJECT, REGION
from tests.conftest import ComputeEnv
from tests.hostile.conftest import free_port
from tests.worlds import compute_fake


def config(endpoint: str, **overrides: object) -> GceClientConfig:
    base = GceClientConfig(
        PROJECT, REGION, endpoint=endpoint, backoff_initial_sec=0.01, backoff_max_sec=0.02
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


class Attempts:
    """Every attempt GceClient reports (its metrics observer)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, call: str, result: str) -> None:
        self.seen.append((call, result))


@pytest.fixture
def html_404() -> Iterator[str]:
    page = b"<html><body>Not Found</body></html>"
    with StreamingServer(lambda *_: (404, {"Content-Type": "text/html"}, page), "html") as s:
        yield s.url


def test_an_endpoint_that_never_answered_is_given_up_on_at_the_first_refusal() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    attempts = Attempts()
    client = GceClient(config(endpoint, max_attempts=6), observer=attempts)
    with pytest.raises(GceUnreachable) as caught:
        client.get_http_health_check("x")
    assert attempts.seen == [("get_http_health_check", "ConnectionError")]
    message = str(caught.value)
    assert f"cannot reach the Compute API at {endpoint}: connection refused" in message
    assert "--gce-endpoint" in message


def test_an_endpoint_that_answered_before_is_retried_when_it_refuses() -> None:
    """A refusal after the endpoint has answered is a blip (a proxy restarting): the retry
    budget applies, and the error stays the transport's own."""
    fake = compute_fake(PROJECT)
    attempts = Attempts()
    server = ComputeFakeServer(fake).start()
    client = GceClient(config(server.url, max_attempts=3), observer=attempts)
    assert client.list_target_pools() == []
    server.stop()
    with pytest.raises(requests.ConnectionError):
        client.list_target_pools()
    assert [result for _, result in attempts.seen] == ["ok"] + ["ConnectionError"] * 3


@pytest.mark.parametrize(
    "call",
    ["get_http_health_check", "list_target_pools", "get_firewall"],
    ids=["legacy-session", "generated-client-list", "generated-client-get"],
)
def test_an_endpoint_that_is_not_the_compute_api_is_said_so_for_every_kind_of_call(
    html_404: str, call: str
) -> None:
    """A 404 from a web server must not read as "the check does not exist"."""
    client = GceClient(config(html_404))
    method = getattr(client, call)
    with pytest.raises(GceNotCompute) as caught:
        method("x") if call.startswith("get") else method()
    assert isinstance(caught.value, SetupError)
    assert f"{html_404} is not the Compute API" in str(caught.value)
    assert "404 with text/html" in str(caught.value)


def test_a_project_that_does_not_exist_names_the_setting(compute: ComputeEnv) -> None:
    with pytest.raises(GceScopeError, match=r"^project nope not found \(check --project"):
        compute.client(project="nope").read_snapshot("k8s-l4-healthcheck-x")


def test_a_region_that_does_not_exist_names_the_setting(compute: ComputeEnv) -> None:
    with pytest.raises(GceScopeError, match=rf"^region mars1 not found in project {PROJECT} "):
        compute.client(region="mars1").read_snapshot("k8s-l4-healthcheck-x")


def test_a_host_project_that_does_not_exist_names_its_own_setting(compute: ComputeEnv) -> None:
    with pytest.raises(GceScopeError, match=r"^network project host-x not found \(check --net"):
        compute.client(network_project="host-x").read_snapshot("k8s-l4-healthcheck-x")


def test_a_missing_resource_is_still_just_absent(compute: ComputeEnv) -> None:
    """The Compute API's own 404 about a resource is not a scope error."""
    client = compute.client()
    assert client.get_http_health_check("absent") is None
    assert client.get_firewall("absent") is None
    with pytest.raises(core.NotFound):
        client.remove_health_check("no-such-pool", "https://example.test/check")


def test_a_host_project_firewall_lbhc_may_not_read_is_reported_even_on_a_first_read(
    compute: ComputeEnv,
) -> None:
    """Only a refusal before the API has accepted lbhc's credentials at all is about them: a
    Shared VPC host project's 403 after the check's 404 stays what the planner reports."""
    compute.fake.add_network("host", "shared")
    compute.fake.faults.fail_requests(
        times=10, status=403, reason="forbidden", path_contains="/projects/host/global/firewalls"
    )
    cloud = compute.client(network_project="host").read_snapshot("k8s-l4-healthcheck-x")
    assert cloud.health_check is None and "403 forbidden" in cloud.firewall_unreadable
