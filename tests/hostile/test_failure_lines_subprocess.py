"""Failures that need a process of their own (signal handlers, the environment google-auth
reads at import): a port that is taken, for every server lbhc and its sandbox bind, and no
Google credentials anywhere. Each ends the process with one line naming the port and the
flag (or how to give credentials) and its exit code, before anything is contacted."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbhc.cli.parser import EXIT_ERROR, EXIT_USAGE
from tests.builders import PROJECT, REGION
from tests.hostile.conftest import Fakes

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "cluster.json"


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else listens on for the whole test."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LBHC_")}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        cwd=ROOT,
        timeout=120,
    )


def assert_one_line(done: subprocess.CompletedProcess[str], code: int, *says: str) -> None:
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("lbhc: error: "), done.stderr
    for fragment in says:
        assert fragment in done.stderr, f"{fragment!r} not in {done.stderr!r}"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["-m", "lbhc", "sandbox", "--kube-port={port}"], "--kube-port"),
        (["-m", "lbhc", "sandbox", "--compute-port={port}"], "--compute-port"),
        (["-m", "lbhc.sandbox.serve", f"--cluster-snapshot={SNAPSHOT}", "--port={port}"], "--port"),
    ],
    ids=["sandbox-kube-port", "sandbox-compute-port", "serve-port"],
)
def test_a_taken_sandbox_port_is_one_line_naming_it_and_the_flag(
    args: list[str], flag: str, taken_port: int
) -> None:
    done = run([arg.format(port=taken_port) for arg in args])
    assert_one_line(
        done,
        EXIT_ERROR,
        f"cannot listen on 127.0.0.1:{taken_port} ({flag}): address already in use",
        f"or pass another {flag}",
    )


def test_a_taken_controller_port_ends_lbhc_run_before_it_starts(
    clean_fakes: Fakes, taken_port: int
) -> None:
    done = run(
        [
            "-m",
            "lbhc",
            "run",
            f"--project={PROJECT}",
            f"--region={REGION}",
            "--node-tags=gke-node",
            "--cluster-id=hostile",
            f"--gce-endpoint={clean_fakes.compute_url}",
            f"--kubeconfig={clean_fakes.kubeconfig}",
            f"--http-address=127.0.0.1:{taken_port}",
            "--leader-elect=false",
        ]
    )
    assert_one_line(
        done,
        EXIT_ERROR,
        f"cannot listen on 127.0.0.1:{taken_port} (--http-address): address already in use",
    )
    assert clean_fakes.contacted() == []


def test_an_unknown_region_for_the_compute_fake_is_one_line() -> None:
    done = run(["-m", "lbhc.sandbox.serve", f"--cluster-snapshot={SNAPSHOT}", "--region=mars1"])
    assert_one_line(done, EXIT_USAGE, "--region mars1: not a GCE region")


def test_no_google_credentials_anywhere_is_one_line_saying_how_to_give_some(
    tmp_path: Path,
) -> None:
    """No key file, no gcloud login, no metadata server (NO_GCE_CHECK, read at import, says
    so without a network probe): google-auth warns about the metadata server on the way,
    and that warning must not come before the one line."""
    env = {
        "HOME": str(tmp_path),
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "NO_GCE_CHECK": "true",
        "GOOGLE_APPLICATION_CREDENTIALS": "",
    }
    done = run(
        [
            "-m",
            "lbhc",
            "plan",
            f"--cluster-snapshot={SNAPSHOT}",
            f"--project={PROJECT}",
            f"--region={REGION}",
            "--node-tags=gke-node",
            "--cluster-id=hostile",
            "--gce-endpoint=https://compute.example.test",
        ],
        env,
    )
    assert_one_line(
        done,
        EXIT_USAGE,
        "no usable Google credentials",
        "gcloud auth application-default login",
        "GOOGLE_APPLICATION_CREDENTIALS",
    )


def test_a_watch_outlives_a_failed_read_saying_so_in_one_line(clean_fakes: Fakes) -> None:
    """`status --watch` is not ended by an API server that fails one round: that round is
    one line on stderr and no status; the next round shows the status."""
    clean_fakes.kube.faults.fail_requests(times=1, status=503, path_contains="/api/v1/nodes")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LBHC_")}
    watch = subprocess.Popen(
        [
            sys.executable, "-m", "lbhc", "status", "--watch=0.2s", f"--project={PROJECT}",
            f"--region={REGION}", "--node-tags=gke-node", "--cluster-id=hostile",
            f"--gce-endpoint={clean_fakes.compute_url}", f"--kubeconfig={clean_fakes.kubeconfig}",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean, cwd=ROOT,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in watch.stdout or ()], daemon=True).start()
    try:
        while not lines.get(timeout=60).startswith("SERVICES"):  # a status was shown
            pass
        assert watch.poll() is None  # still watching
    finally:
        watch.terminate()
        _, err = watch.communicate(timeout=30)
        clean_fakes.kube.faults.clear()
    [failed] = [line for line in err.splitlines() if line.startswith("lbhc: ")]
    assert failed.startswith("lbhc: error: cannot list nodes from the Kubernetes API server")
    assert failed.endswith("HTTP 503 Service Unavailable; the API server failed; try again "
                           "(watching: next try in 0.2 s)")  # fmt: skip
