"""Fixtures for tests of lbhc's Kubernetes adapter and of the fake API server: the fake on a
real socket, the real kubernetes client and KubeReader pointed at it, and helpers to seed the
fake, read its answers and point kubectl at it. The fixtures are imported by the conftest of
each directory that uses them; the objects come from tests.builders.kube."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.kube.client import KubeConfig, KubeReader, make_api_client
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.worlds import seed_cluster


@pytest.fixture
def kube_fake() -> KubeFake:
    return seed_cluster(KubeFake(), namespaces=("default",))


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


def seed(fake: KubeFake, *objects: dict[str, Any]) -> None:
    for obj in objects:
        fake.upsert(obj)


def raw(response: Any) -> Any:
    """The JSON body of a `_preload_content=False` response."""
    return json.loads(response.data)


def status_body(exc: ApiException) -> dict[str, Any]:
    """The Status object an error response carried."""
    assert exc.body is not None
    body: dict[str, Any] = json.loads(exc.body)
    return body


# -- kubectl --------------------------------------------------------------------------------


def write_kubeconfig(directory: Path, server_url: str) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server_url}}],
                "users": [{"name": "anonymous", "user": {}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "anonymous"}}],
                "current-context": "fake",
            }
        ),
        encoding="utf-8",
    )
    return path


def run_kubectl(directory: Path, server_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: cannot check the fake against a real kubectl")
    kubeconfig = write_kubeconfig(directory, server_url)
    # Own HOME and cache dir: no discovery cache or config from the machine leaks in or out.
    env = {**os.environ, "HOME": str(directory), "KUBECONFIG": str(kubeconfig)}
    return subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "--cache-dir", str(directory / "cache"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
