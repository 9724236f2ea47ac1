"""Fixtures: a KubeFake with kube-system, and fleets that are always closed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.kube_proxy import KubeProxyFleet
from tests.worlds import seed_cluster


@pytest.fixture
def kube() -> KubeFake:
    return seed_cluster(KubeFake(), namespaces=("default",))


@pytest.fixture
def make_fleet(kube: KubeFake) -> Iterator[Callable[..., KubeProxyFleet]]:
    """`make_fleet(**options)`: a fleet over `kube`, synced once. port=0 by default, so
    tests do not depend on 10256 being free on this machine."""
    fleets: list[KubeProxyFleet] = []

    def make(**options: Any) -> KubeProxyFleet:
        fleet = KubeProxyFleet(kube, **{"port": 0, **options})
        fleets.append(fleet)
        fleet.sync()
        return fleet

    yield make
    for fleet in fleets:
        fleet.close()
