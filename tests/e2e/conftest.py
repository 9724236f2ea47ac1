"""The `world` fixture: every e2e test runs once per environment, `fake` (always) and `gcp`
(skipped with a one-line reason unless LBHC_E2E_OUTPUTS and credentials are present).

Each test gets a fresh world (a new sandbox; in gcp a new cluster id and a new local
kube-apiserver fake over the same VMs and load balancers) and, whatever happens, a clean-up
that leaves nothing of its run behind (World.clean_up)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gcp import (
    Outputs,
    controller_credentials,
    default_credentials,
    locate_outputs,
)
from tests.e2e.world import FakeWorld, GcpProject, GcpWorld, World

# Where an item keeps its measurements until its report is made.
MEASURED = pytest.StashKey[list[dict[str, Any]]]()


@pytest.fixture(scope="session")
def gcp_project() -> GcpProject:
    """The real project, or a skip naming what is missing. A readable outputs file that
    breaks the contract with terraform/ is an error, not a skip."""
    found = locate_outputs()
    if isinstance(found, str):
        pytest.skip(found)
    document, path = found
    credentials = default_credentials()
    if isinstance(credentials, str):
        pytest.skip(credentials)
    outputs = Outputs.from_json(document, path)
    lbhc_credentials = controller_credentials(credentials, outputs.controller_service_account)
    return GcpProject.connect(outputs, credentials, lbhc_credentials)


@pytest.fixture(params=["fake", "gcp"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    if request.param == "fake":
        made: World = FakeWorld(tmp_path)
    else:
        made = GcpWorld(request.getfixturevalue("gcp_project"), tmp_path)
    problems: list[str] = []
    try:
        yield made
    finally:
        try:
            problems = made.clean_up()
        finally:
            made.close()
    if problems:
        pytest.fail("clean-up: " + "\n".join(problems), pytrace=False)


@pytest.fixture
def record_measurement(
    request: pytest.FixtureRequest, record_property: Callable[[str, Any], None]
) -> Callable[..., None]:
    """Record a measured duration: in the junit XML properties and the terminal summary."""

    def record(world: World, what: str, seconds: float, limit: float, note: str = "") -> None:
        record_property(f"{world.name}:{what}", round(seconds, 3))
        measured = request.node.stash.setdefault(MEASURED, [])
        measured.append(
            {"world": world.name, "what": what, "seconds": seconds, "limit": limit, "note": note}
        )

    return record


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """The measurements ride on the test's report: under pytest-xdist (make suite) the test
    runs in a worker, and only reports reach the process that writes the summary
    (tests/conftest.py, pytest_terminal_summary)."""
    report = yield
    if report.when == "call" and MEASURED in item.stash:
        report.lbhc_e2e_measurements = item.stash[MEASURED]
    return report
