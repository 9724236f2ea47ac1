"""Fixtures: a KubeFake with kube-system, and fleets that are always closed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.kube_proxy import KubeProxyFleet
from tests.builders.kube import KUBE_SYSTEM_UID, namespace
from tests.kube_fixtures import seed


@pytest.fixture
def kube() -> KubeFake:
    fake = KubeFake()
    seed(fake, namespace("default"), namespace("kube-system", KUBE_SYSTEM_UID))
    return fake


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
