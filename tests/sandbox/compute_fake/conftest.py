"""Fixtures for the Compute fake's tests: a fake clock, the fake, both transports, clients."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import responses
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.auth.transport.requests import AuthorizedSession

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.compute_fake.responses_mount import mount_responses

PROJECT = "proj"
REGION = "us-central1"
CANONICAL = "https://www.googleapis.com/compute/v1/"
RESPONSES_BASE = "https://compute.googleapis.com"


class FakeClock:
    """A manually advanced monotonic clock (thread-safe)."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


class Api:
    """httpHealthChecks calls as lbhc makes them: AuthorizedSession + from_http_response."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.session = AuthorizedSession(AnonymousCredentials())

    def raw(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> requests.Response:
        url = f"{self.base_url}/compute/v1/{path}"
        return self.session.request(method, url, json=body, params=params, headers=headers)

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        resp = self.raw(method, path, body, params, headers)
        if resp.status_code >= 400:
            raise gexc.from_http_response(resp)
        result: dict[str, Any] = resp.json()
        return result

    def close(self) -> None:
        self.session.close()


class Clients:
    """google-cloud-compute clients pointed at one endpoint."""

    def __init__(self, base_url: str) -> None:
        from google.cloud import compute_v1

        kwargs: dict[str, Any] = {
            "credentials": AnonymousCredentials(),
            "client_options": {"api_endpoint": base_url},
        }
        self.firewalls = compute_v1.FirewallsClient(**kwargs)
        self.networks = compute_v1.NetworksClient(**kwargs)
        self.target_pools = compute_v1.TargetPoolsClient(**kwargs)
        self.forwarding_rules = compute_v1.ForwardingRulesClient(**kwargs)
        self.global_ops = compute_v1.GlobalOperationsClient(**kwargs)
        self.region_ops = compute_v1.RegionOperationsClient(**kwargs)
        self.instances = compute_v1.InstancesClient(**kwargs)
        self.zone_ops = compute_v1.ZoneOperationsClient(**kwargs)
        self.health_checks = compute_v1.HealthChecksClient(**kwargs)
        self.region_health_checks = compute_v1.RegionHealthChecksClient(**kwargs)
        self.region_backend_services = compute_v1.RegionBackendServicesClient(**kwargs)
        self.backend_services = compute_v1.BackendServicesClient(**kwargs)
        self.instance_groups = compute_v1.InstanceGroupsClient(**kwargs)
        self.network_endpoint_groups = compute_v1.NetworkEndpointGroupsClient(**kwargs)


def check_url(name: str, project: str = PROJECT) -> str:
    return f"{CANONICAL}projects/{project}/global/httpHealthChecks/{name}"


def instance_url(name: str, zone: str = "us-central1-a", project: str = PROJECT) -> str:
    return f"{CANONICAL}projects/{project}/zones/{zone}/instances/{name}"


def pool_url(name: str, region: str = REGION, project: str = PROJECT) -> str:
    return f"{CANONICAL}projects/{project}/regions/{region}/targetPools/{name}"


def aggregated_names(client: Any, field: str, project: str = PROJECT) -> dict[str, list[str]]:
    """The names a generated client's aggregated_list lists, by scope (warning-only scopes
    too); `field` is the scoped list's attribute (target_pools, health_checks, ...)."""
    return {
        scope: [item.name for item in getattr(scoped, field)]
        for scope, scoped in client.aggregated_list(project=project, retry=None)
    }


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake() -> ComputeFake:
    fake = ComputeFake()
    fake.add_network(PROJECT, "default")
    return fake


@pytest.fixture
def server(fake: ComputeFake) -> Iterator[ComputeFakeServer]:
    with ComputeFakeServer(fake) as srv:
        yield srv


@pytest.fixture(params=["server", "responses"])
def base_url(request: pytest.FixtureRequest, fake: ComputeFake) -> Iterator[str]:
    """The endpoint of the fake over a real socket, or in-process through `responses`."""
    if request.param == "server":
        with ComputeFakeServer(fake) as srv:
            yield srv.url
    else:
        with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
            mount_responses(fake, rsps, base_url=RESPONSES_BASE)
            yield RESPONSES_BASE


@pytest.fixture
def api(base_url: str) -> Iterator[Api]:
    client = Api(base_url)
    yield client
    client.close()


@pytest.fixture
def server_api(server: ComputeFakeServer) -> Iterator[Api]:
    client = Api(server.url)
    yield client
    client.close()


@pytest.fixture
def clients(base_url: str) -> Clients:
    return Clients(base_url)


@pytest.fixture
def make_clients() -> type[Clients]:
    return Clients


@pytest.fixture
def make_api() -> type[Api]:
    return Api


@pytest.fixture
def server_clients(server: ComputeFakeServer) -> Clients:
    return Clients(server.url)
