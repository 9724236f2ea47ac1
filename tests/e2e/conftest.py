"""The `world` fixture: every e2e test runs once per environment, `fake` (always) and `gcp`
(skipped with a one-line reason unless LBHC_E2E_OUTPUTS and credentials are present).

Each test gets a fresh world (a new sandbox; in gcp a new cluster id and a new local
kube-apiserver fake over the same VMs and load balancers) and, whatever happens, a clean-up
that leaves nothing of its run behind (World.clean_up)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Measurement:
    world: str
    test: str
    what: str
    seconds: float
    limit: float
    note: str


MEASUREMENTS: list[Measurement] = []


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
        MEASUREMENTS.append(Measurement(world.name, request.node.name, what, seconds, limit, note))

    return record


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not MEASUREMENTS:
        return
    terminalreporter.section("lbhc e2e measurements")
    for m in MEASUREMENTS:
        terminalreporter.write_line(
            f"{m.world:4} {m.what}: {m.seconds:.2f} s (limit {m.limit:.2f} s) {m.note}".rstrip()
        )
