"""Shared fixtures: the Compute fake served over a real socket, and clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cluster import Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.builders import PROJECT, REGION
from tests.worlds import add_load_balancer, compute_fake


@dataclass
class ComputeEnv:
    fake: ComputeFake
    url: str

    def client(self, **overrides: Any) -> GceClient:
        # Fast backoff: tests exercise retries, not wall-clock patience.
        config = GceClientConfig(
            project=PROJECT,
            region=REGION,
            endpoint=self.url,
            backoff_initial_sec=0.01,
            backoff_max_sec=0.05,
            mutations_per_second=1000,
            reads_per_second=1000,
        )
        return GceClient(replace(config, **overrides))

    def add_service_pool(self, svc: Service, health_checks: tuple[str, ...] = ()) -> str:
        """A target pool and forwarding rule as the cloud provider makes them for `svc`."""
        return add_load_balancer(
            self.fake, target_pool_name(svc.metadata.uid), svc.key, health_checks=health_checks
        )

    def delete_load_balancer(self, name: str) -> None:
        """What the cloud provider does when its Service goes: rule first, then the pool."""
        for collection in ("forwardingRules", "targetPools"):
            status, _, body = self.fake.handle(
                "DELETE", f"/compute/v1/projects/{PROJECT}/regions/{REGION}/{collection}/{name}"
            )
            assert status == 200, body

    def pool_checks(self, name: str) -> list[str]:
        return list(self.fake.target_pools(PROJECT, REGION)[name].get("healthChecks", []))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--chaos",
        action="store_true",
        help="run the long reliability runs (tests marked chaos) at full size: make chaos",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `chaos` are the long runs of `make chaos`; `make test` runs each
    reliability suite's short seeded version instead (see the `chaos_scale` fixture)."""
    if config.getoption("--chaos"):
        return
    skip = pytest.mark.skip(reason="long reliability run: make chaos (pytest --chaos)")
    for item in items:
        if item.get_closest_marker("chaos") is not None:
            item.add_marker(skip)


@pytest.fixture
def chaos_scale(request: pytest.FixtureRequest) -> str:
    """ "full" under --chaos (make chaos), "short" otherwise (make test): a reliability test
    picks its trial counts and durations from this, never from a timer."""
    return "full" if request.config.getoption("--chaos") else "short"


@pytest.fixture
def compute() -> Iterator[ComputeEnv]:
    fake = compute_fake(PROJECT)
    with ComputeFakeServer(fake) as server:
        yield ComputeEnv(fake, server.url)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The e2e tests' measured durations (tests/e2e/conftest.py, record_measurement), taken
    from the reports: here, not in tests/e2e, because under pytest-xdist the process that
    writes the summary never loads that directory's conftest."""
    measurements = [
        m
        for reports in terminalreporter.stats.values()
        for report in reports
        for m in getattr(report, "lbhc_e2e_measurements", None) or ()
    ]
    if not measurements:
        return
    terminalreporter.section("lbhc e2e measurements")
    for m in measurements:
        line = f"{m['world']:4} {m['what']}: {m['seconds']:.2f} s (limit {m['limit']:.2f} s)"
        terminalreporter.write_line(f"{line} {m['note']}".rstrip())
