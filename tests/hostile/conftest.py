"""Both fakes on real sockets for the hostile-input tests that run the CLI, shared by a
module (their journals are cleared per test), and a clean LBHC_* environment."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders import KUBE_SYSTEM_UID, PROJECT
from tests.kube_fixtures import write_kubeconfig
from tests.worlds import compute_fake, seed_cluster


@dataclass
class Fakes:
    compute: ComputeFake
    compute_url: str
    kube: KubeFake
    kubeconfig: Path
    kube_url: str

    def clear(self) -> None:
        self.compute.clear_journal()
        self.kube.clear_journal()

    def contacted(self) -> list[str]:
        """Every request either fake has answered since the last clear()."""
        return [f"GCE {e.method} {e.path}" for e in self.compute.journal] + [
            f"kube {e.method} {e.path}" for e in self.kube.journal
        ]


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fakes]:
    compute = compute_fake(PROJECT)
    kube = seed_cluster(KubeFake(), kube_system_uid=KUBE_SYSTEM_UID)
    with ComputeFakeServer(compute) as gce, KubeFakeServer(kube) as api:
        kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kube"), api.url)
        yield Fakes(compute, gce.url, kube, kubeconfig, api.url)


@pytest.fixture
def clean_fakes(fakes: Fakes) -> Fakes:
    fakes.clear()
    return fakes


@pytest.fixture(autouse=True)
def no_lbhc_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from the machine's environment must not leak into a case, nor an unknown
    LBHC_* variable add its warning line (other test switches, CHAOS_REPORT_FILE, stay)."""
    for var in list(os.environ):
        if var.upper().startswith("LBHC_"):
            monkeypatch.delenv(var)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    """Nothing listens there (a controller that started would hold it)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
