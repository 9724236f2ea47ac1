"""`lbhc status --lb-health --watch` against the sandbox: after a taint, the node's row shows
when it was marked and how long after that GCE's (emulated) health checking first reported
it UNHEALTHY: the "tainted at T, unhealthy in the LB since T+N s" an operator needs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from lbhc.cli import main
from lbhc.model.cloud import COMPUTE_URL_PREFIX
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import node_name
from tests.controller.harness import wait_for
from tests.test_readme import ROOT

SCALE = 0.05  # the default check (8 s x 3) drains in about 1.2 s


def test_watch_times_unhealthy_relative_to_the_taint(tmp_path: Path) -> None:
    with Sandbox(SandboxOptions(time_scale=SCALE, operation_latency=0.0)) as sandbox:
        assert main(["apply", *sandbox.lbhc_flags()]) == 0
        prober, spec = sandbox.prober, sandbox.spec
        assert prober is not None
        for index in range(spec.nodes):  # a new check starts UNHEALTHY until probes pass
            url = f"{COMPUTE_URL_PREFIX}projects/{spec.project}/zones/{spec.zone}/instances/{node_name(index)}"
            wait_for(lambda u=url: "HEALTHY" in [s for _, s in prober.transitions(u)], what=url)  # type: ignore[misc]
        victim = node_name(1)
        marked = int(time.time())
        sandbox.kube.taint(victim, "ToBeDeletedByClusterAutoscaler", str(marked), "NoSchedule")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "lbhc", "status", "--lb-health", "--watch", "0.2s"]
        watch = subprocess.Popen(
            [*argv, *sandbox.lbhc_flags()],
            cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            assert watch.stdout is not None
            deadline = time.monotonic() + 60
            for line in watch.stdout:
                assert time.monotonic() < deadline, "no UNHEALTHY row within 60 s"
                fields = line.split()
                if fields[:1] == [victim] and "UNHEALTHY" in fields:
                    break
            else:
                raise AssertionError("lbhc status --watch exited")
        finally:
            watch.terminate()
            watch.wait(timeout=30)
    assert fields[fields.index("UNHEALTHY") + 1] == time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(marked)
    )
    since = re.fullmatch(r"\+(\d+)s", fields[-1])
    assert since is not None, fields
    # Three failed probes at 0.4 s intervals, seen by a 0.2 s poll; the mark has 1 s resolution.
    assert 0 <= int(since.group(1)) <= 5
    assert "draining" in fields
