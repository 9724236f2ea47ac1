"""The README's real-cluster commands (plan, apply, a dump, run) run as written, with only the
environment pointing them at a sandbox whose project is the README's `my-proj`: KUBECONFIG
for kubectl and the kubernetes client, LBHC_GCE_ENDPOINT for lbhc."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec
from tests.test_readme import README, ROOT
from tests.waiting import wait_for

SECTION = README.split("## Using it on a real cluster", 1)[1].split("\n## ", 1)[0]


def commands() -> list[str]:
    found = []
    for body in re.findall(r"```sh\n(.*?)```", SECTION, flags=re.S):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            # .venv/... lines are the offline try-it block, run by test_readme.py.
            if line and not line.startswith(("#", ".venv/")):
                found.append(line)
    return found


def lbhc_argv(command: str) -> list[str]:
    return [sys.executable, "-m", "lbhc", *command.split()[1:]]


def test_real_cluster_commands_run_as_written(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: the README's dump command cannot run")
    spec = SandboxSpec(project="my-proj")
    with Sandbox(SandboxOptions(spec=spec, directory=tmp_path, operation_latency=0.0)) as sandbox:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "HOME": str(tmp_path),
            "KUBECONFIG": str(sandbox.kubeconfig),
            "LBHC_GCE_ENDPOINT": sandbox.compute_url,
        }
        listed = commands()
        assert listed[0] == "pip install ."  # what `make test` does too (pip install -e)
        for command in listed[1:]:
            if command.startswith("lbhc run"):
                assert_controller_starts(lbhc_argv(command), env, tmp_path)
                continue
            argv = ["bash", "-c", command] if ">" in command else lbhc_argv(command)
            if argv[0] == "bash":
                argv[2] = argv[2].replace("kubectl", shutil.which("kubectl") or "kubectl", 1)
            done = subprocess.run(
                argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, f"{command}\n{done.stderr}"
        pools = sandbox.compute.target_pools(spec.project, spec.region)
        # `lbhc apply` did its job: the pool the cloud provider made without a check carries
        # lbhc's; the others kept the cloud provider's own (or their Local one).
        assert all(p.get("healthChecks") for p in pools.values())
        legacy = sandbox.load_balancer_name(spec.namespace, "legacy-4")
        assert pools[legacy]["healthChecks"][0].rsplit("/", 1)[-1].startswith("k8s-l4-healthcheck-")


def assert_controller_starts(argv: list[str], env: dict[str, str], tmp_path: Path) -> None:
    """Until its first pass is logged; then SIGTERM stops it cleanly."""
    log = tmp_path / "run.log"
    with log.open("w") as sink:
        process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=sink, stderr=sink)
    try:
        wait_for(
            lambda: "reconciled" in log.read_text() or process.poll() is not None,
            60,
            lambda: f"a logged pass; the log:\n{log.read_text()}",
            every=0.1,
        )
        assert "reconciled" in log.read_text(), log.read_text()  # not exited before it
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0, log.read_text()
