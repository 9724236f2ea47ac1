"""`lbhc run` as a user starts it: a separate process, JSON logs, SIGTERM to stop (exit 0, how
Kubernetes stops a Pod) or Ctrl-C (exit 130, as every command)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lbhc.cli.parser import EXIT_INTERRUPTED, EXIT_OK
from tests.controller.harness import PROJECT, REGION, world
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [
        (signal.SIGTERM, EXIT_OK, "lbhc stopped"),
        (signal.SIGINT, EXIT_INTERRUPTED, "lbhc stopped (interrupted)"),
    ],
    ids=["sigterm", "sigint"],
)
def test_lbhc_run_converges_logs_json_and_stops_on_a_signal(
    stop: signal.Signals, code: int, said: str, tmp_path: Path
) -> None:
    with world() as w:
        pool = w.add_service("web")
        kubeconfig = w.kube_server.write_kubeconfig(tmp_path / "kubeconfig")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "POD_NAME": "lbhc-test-0"}
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lbhc",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--project",
                PROJECT,
                "--region",
                REGION,
                "--node-tags",
                "gke-node",
                "--gce-endpoint",
                w.compute_url,
                "--http-address",
                "127.0.0.1:0",
                "--leader-elect-resource-namespace",
                "lbhc-system",
                "--leader-elect-retry-period",
                "250ms",
                "--leader-elect-renew-deadline",
                "2s",
                "--leader-elect-lease-duration",
                "3s",
            ],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: w.attached(pool), timeout=30, what="lbhc run converging")
            assert {m.client_id for m in w.mutations()} == {"lbhc-test-0"}
            lease = wait_for(lambda: w.kube.get("Lease", "lbhc-system", "lbhc"), what="the Lease")
            assert lease["spec"]["holderIdentity"] == "lbhc-test-0"
        finally:
            process.send_signal(stop)
            _, stderr = process.communicate(timeout=30)
        assert process.returncode == code, stderr
        records = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
        assert records and all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
        assert any("became leader" in r["msg"] for r in records)
        assert any(r["msg"] == said for r in records)
        # A clean shutdown releases the Lease, so a successor need not wait it out.
        assert w.kube.get("Lease", "lbhc-system", "lbhc")["spec"]["holderIdentity"] == ""
