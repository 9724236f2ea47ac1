"""`lbhc status --watch` ends with Ctrl-C, as `kubectl get --watch` does: exit 0, no
traceback; Ctrl-C anywhere else is an interruption (130)."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.builders import node, service
from tests.cli.terminal import Pty
from tests.cli.test_oneshot import gce_args, kubectl_list
from tests.conftest import ComputeEnv


@pytest.mark.parametrize(
    ("watch", "code"), [(["--watch", "1h"], 0), ([], 130)], ids=["watch", "after-a-pass"]
)
def test_ctrl_c_ends_a_watch_cleanly(
    compute: ComputeEnv, tmp_path: Path, watch: list[str], code: int
) -> None:
    compute.add_service_pool(service("web"))
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(json.dumps(kubectl_list(node(), service("web"))))
    argv = ["status", "--cluster-snapshot", str(snapshot), *gce_args(compute), *watch]
    arrived = threading.Event()
    if not watch:
        # Held in its GCE read, so the interrupt lands mid-pass rather than after the exit.
        compute.fake.faults.on_request(arrived.set, path_contains="targetPools")
        compute.fake.faults.slow_requests(5, path_contains="targetPools")
    session = Pty(argv, dict(os.environ))
    try:
        if watch:
            session.wait_for(lambda shown: "default/web" in shown)
        else:
            session.wait_for(lambda _: arrived.is_set())
        session.process.send_signal(signal.SIGINT)
        assert session.exit_code() == code, session.text
        assert "Traceback" not in session.text
        if not watch:
            assert "lbhc: error: interrupted" in session.text
    finally:
        session.close()
