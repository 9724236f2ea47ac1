"""`lbhc status --lb-health --watch` against the sandbox: after a taint, the node's row shows
when it was marked and how long after that GCE's (emulated) health checking first reported
it UNHEALTHY: the "tainted at T, unhealthy in the LB since T+N s" an operator needs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from lbhc.cli import main
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node_name
from tests.test_readme import ROOT

SCALE = 0.1  # the default check (8 s x 3) drains in about 2.4 s
TAINT = "ToBeDeletedByClusterAutoscaler"


def rows(lines: Iterator[str], node: str, deadline: float) -> Iterator[list[str]]:
    for line in lines:
        assert time.monotonic() < deadline, "lbhc status --watch took too long"
        if line.startswith(node + " "):
            yield line.split()


def test_watch_times_unhealthy_relative_to_the_taint(tmp_path: Path) -> None:
    # Cluster Services only: a Local pool would make the node partially-draining (it drains a
    # node as its endpoints go, which the sandbox has none of).
    spec = SandboxSpec(local_services=0)
    with Sandbox(SandboxOptions(spec=spec, time_scale=SCALE, operation_latency=0.0)) as sandbox:
        assert main(["apply", *sandbox.lbhc_flags()]) == 0
        victim = node_name(1)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "lbhc", "status", "--lb-health", "--watch", "0.2s"]
        watch = subprocess.Popen(
            [*argv, *sandbox.lbhc_flags()],
            cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            assert watch.stdout is not None
            seen = rows(watch.stdout, victim, time.monotonic() + 90)
            for fields in seen:  # a new check starts UNHEALTHY until its probes pass
                if "HEALTHY" in fields:
                    break
            marked = int(time.time())
            sandbox.kube.taint(victim, TAINT, str(marked), "NoSchedule")
            for fields in seen:
                if "UNHEALTHY" in fields:
                    break
        finally:
            watch.terminate()
            watch.wait(timeout=30)
    assert "draining" in fields
    assert fields[fields.index("UNHEALTHY") + 1] == time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(marked)
    )
    since = re.fullmatch(r"\+(\d+)s", fields[-1])  # exact: it was seen HEALTHY just before
    assert since is not None, fields
    # Three failed probes at 0.8 s intervals, seen by a 0.2 s poll; the mark is whole seconds.
    assert 1 <= int(since.group(1)) <= 6
