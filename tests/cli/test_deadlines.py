"""A silent endpoint, one that accepts connections and never answers (a wrong --gce-endpoint,
egress black-holed on the way, a hung API server), against `lbhc plan` run as a real
process: it exits 1 within the bound its settings give, measured from the first connection
the endpoint accepted to the process's end, with exactly one line on stderr naming the
endpoint and the fix, and no retry line before it. The timeouts are lowered (through LBHC_*,
as a user would) so the test takes seconds; the defaults' bounds are a table in
tests/gce/test_calls.py."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbhc.cli.parser import EXIT_ERROR
from lbhc.gce.calls import call_bound_sec
from lbhc.settings import Settings, environment_names
from tests.builders import PROJECT, REGION
from tests.hostile.conftest import free_port
from tests.kube_fixtures import write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "cluster.json"
# From the error to the process's end: the interpreter's exit, on a busy machine.
EXIT_SLACK_SEC = 3.0


class SilentEndpoint:
    """Accepts every connection and never sends a byte; records when the first came."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.first_connection = 0.0
        self._thread = threading.Thread(target=self._accept, name="silent", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:  # closed: the test is over
                return
            if not self.connections:
                self.first_connection = time.monotonic()
            self.connections.append(connection)  # held open, never answered

    def close(self) -> None:
        self._socket.close()
        for connection in self.connections:
            connection.close()


@pytest.fixture
def silent() -> Iterator[SilentEndpoint]:
    endpoint = SilentEndpoint()
    yield endpoint
    endpoint.close()


def plan(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """`lbhc plan` as its own process, and the moment it ended (time.monotonic())."""
    clean = {k: v for k, v in os.environ.items() if k.upper() not in environment_names()}
    command = [
        sys.executable,
        "-m",
        "lbhc",
        "plan",
        f"--project={PROJECT}",
        f"--region={REGION}",
        "--node-tags=gke-node",
        *args,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, env={**clean, **env}, cwd=ROOT, timeout=120
    )
    return done, time.monotonic()


def assert_one_line(done: subprocess.CompletedProcess[str], *says: str) -> str:
    assert done.returncode == EXIT_ERROR, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr  # no retry lines first
    assert "retry" not in done.stderr.lower() and "WARNING" not in done.stderr
    line = done.stderr.strip()
    assert line.startswith("lbhc: error: "), line
    for fragment in says:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


def test_a_silent_compute_endpoint_is_one_line_within_the_calls_deadline(
    silent: SilentEndpoint,
) -> None:
    env = {
        "LBHC_GCE_REQUEST_TIMEOUT_SEC": "1",
        "LBHC_GCE_CALL_TIMEOUT_SEC": "2.5",
        # A backoff of at most 0.5 s leaves the second attempt a second: always two.
        "LBHC_GCE_BACKOFF_MAX_SEC": "0.5",
    }
    settings = Settings.model_validate(
        {
            "gce": {
                "project": PROJECT,
                "region": REGION,
                "node_tags": ["gke-node"],
                "request_timeout_sec": 1,
                "call_timeout_sec": 2.5,
                "backoff_max_sec": 0.5,
            }
        }
    )
    bound = call_bound_sec(settings.gce_client_config(read_only=True))
    assert bound == 2.5
    done, ended = plan(
        f"--cluster-snapshot={SNAPSHOT}",
        "--cluster-id=silent",
        f"--gce-endpoint={silent.url}",
        env=env,
    )
    line = assert_one_line(
        done,
        f"the Compute API at {silent.url} did not answer within 1 s (read timeout, 2 attempts, ",
        "check --gce-endpoint / LBHC_GCE_ENDPOINT and the network path to it",
    )
    said = re.search(r"2 attempts, ([\d.]+) s in total", line)
    assert said is not None and 1.0 <= float(said.group(1)) <= bound, line
    took = ended - silent.first_connection
    assert 1.0 <= took <= bound + EXIT_SLACK_SEC, took
    assert len(silent.connections) == 2  # one per attempt: nothing below lbhc retried


def test_a_hung_api_server_is_one_line_within_one_request(
    silent: SilentEndpoint, tmp_path: Path
) -> None:
    kubeconfig = write_kubeconfig(tmp_path, silent.url)
    env = {"LBHC_KUBE_CONNECT_TIMEOUT_SEC": "1", "LBHC_KUBE_REQUEST_TIMEOUT_SEC": "1"}
    bound = Settings.model_validate(
        {
            "gce": {"project": PROJECT, "region": REGION, "node_tags": ["gke-node"]},
            "kube": {"connect_timeout_sec": 1, "request_timeout_sec": 1},
        }
    ).kube_config()
    done, ended = plan(
        f"--kubeconfig={kubeconfig}",
        f"--gce-endpoint=http://127.0.0.1:{free_port()}",  # never reached
        env=env,
    )
    assert_one_line(
        done,
        f"from the Kubernetes API server at {silent.url} (context 'fake' of kubeconfig "
        f"{kubeconfig})",
        "no answer within 1 s (read timeout)",
        "kube.request_timeout_sec",
    )
    took = ended - silent.first_connection
    assert 1.0 <= took <= bound.request_bound_sec + EXIT_SLACK_SEC, took
    assert len(silent.connections) == 1  # urllib3 retried nothing on its own
