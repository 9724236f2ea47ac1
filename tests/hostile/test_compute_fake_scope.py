"""The Compute fake knows which projects exist (those seeded or named) and which regions GCE
has, and refuses the others as the real API does, over a real socket: 404 notFound naming
the project, 400 invalid "Unknown region." Without this, `lbhc plan --project typo` against
the fake would find an empty project and say "No changes"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.compute_fake.store import GCE_REGIONS

PROJECT, REGION = "proj", "us-central1"


@pytest.fixture
def fake() -> ComputeFake:
    seeded = ComputeFake()
    seeded.add_network(PROJECT, "default")
    return seeded


@pytest.fixture
def url(fake: ComputeFake) -> Iterator[str]:
    with ComputeFakeServer(fake) as server:
        yield server.url + "/compute/v1/projects"


def error_of(response: requests.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()["error"]
    return body


def test_a_project_that_does_not_exist_is_404_naming_it(url: str, fake: ComputeFake) -> None:
    for method, path in [
        ("GET", "/nope/global/httpHealthChecks"),
        ("GET", "/nope/global/httpHealthChecks/x"),
        ("GET", f"/nope/regions/{REGION}/targetPools"),
        ("POST", "/nope/global/httpHealthChecks"),
    ]:
        response = requests.request(method, url + path, json={"name": "x"}, timeout=10)
        assert response.status_code == 404, (method, path)
        error = error_of(response)
        assert error["message"] == "The resource 'projects/nope' was not found"
        assert error["errors"][0]["reason"] == "notFound"
    assert fake.http_health_checks("nope") == {}


def test_a_region_gce_does_not_have_is_400_unknown_region(url: str) -> None:
    response = requests.get(f"{url}/{PROJECT}/regions/mars1/targetPools", timeout=10)
    assert response.status_code == 400
    error = error_of(response)
    assert error["message"] == "Invalid value for field 'region': 'mars1'. Unknown region."
    assert error["errors"][0]["reason"] == "invalid"


def test_the_project_is_judged_before_the_region(url: str) -> None:
    response = requests.get(f"{url}/nope/regions/mars1/forwardingRules", timeout=10)
    assert response.status_code == 404


@pytest.mark.parametrize("region", sorted(GCE_REGIONS))
def test_every_gce_region_is_served(url: str, region: str) -> None:
    response = requests.get(f"{url}/{PROJECT}/regions/{region}/forwardingRules", timeout=10)
    assert response.status_code == 200, response.text


def test_projects_exist_once_seeded_or_named() -> None:
    fake = ComputeFake(projects=["named"])
    fake.add_project("added")
    fake.add_network("seeded", "default")
    fake.add_target_pool("pools-only", REGION, "pool")
    assert fake.projects == {"named", "added", "seeded", "pools-only"}
    with ComputeFakeServer(fake) as server:
        for project in sorted(fake.projects):
            response = requests.get(
                f"{server.url}/compute/v1/projects/{project}/global/httpHealthChecks", timeout=10
            )
            assert response.status_code == 200, project
        response = requests.get(
            f"{server.url}/compute/v1/projects/other/global/httpHealthChecks", timeout=10
        )
        assert response.status_code == 404


def test_a_fake_told_of_no_project_answers_for_any() -> None:
    with ComputeFakeServer(ComputeFake()) as server:
        response = requests.get(
            f"{server.url}/compute/v1/projects/anything/global/httpHealthChecks", timeout=10
        )
    assert response.status_code == 200


def test_seeding_into_a_region_gce_does_not_have_is_refused() -> None:
    fake = ComputeFake()
    with pytest.raises(ValueError, match="'mars1' is not a GCE region"):
        fake.add_target_pool(PROJECT, "mars1", "pool")
    with pytest.raises(ValueError, match="'mars1' is not a GCE region"):
        fake.add_forwarding_rule(PROJECT, "mars1", "rule", backend_service="x")
