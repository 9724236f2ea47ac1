"""Fixtures for tests of lbhc's Kubernetes adapter and of the fake API server: the fake on a
real socket, and the real kubernetes client and KubeReader pointed at it. Imported by the
conftest of each directory that uses them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lbhc.kube.client import KubeConfig, KubeReader, make_api_client
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.kube_objects import KUBE_SYSTEM_UID, namespace, seed


@pytest.fixture
def kube_fake() -> KubeFake:
    fake = KubeFake()
    seed(fake, namespace("default"), namespace("kube-system", KUBE_SYSTEM_UID))
    return fake


@pytest.fixture
def kube_server(kube_fake: KubeFake) -> Iterator[KubeFakeServer]:
    with KubeFakeServer(kube_fake) as server:
        yield server


@pytest.fixture
def api_client(kube_server: KubeFakeServer) -> Iterator[Any]:
    client = make_api_client(KubeConfig(host=kube_server.url))
    yield client
    client.close()


@pytest.fixture
def reader(api_client: Any, kube_server: KubeFakeServer) -> KubeReader:
    return KubeReader(api_client, KubeConfig(host=kube_server.url))
