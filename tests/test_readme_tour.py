"""The README's "Try it" and tour run for real: the sandbox is started with the README's
command (ports and directory swapped for free ones), every command of the tour runs in order,
and every line of each output block shown after it must appear in what it really printed."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lbhc.cli.parser import build_parser
from tests.test_readme import README, ROOT, free_port

TOUR = README.split("## A tour, against the sandbox", 1)[1].split("\n## ", 1)[0]
TRY_IT = README.split("## Try it", 1)[1].split("\n## ", 1)[0]


def blocks(section: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block, in order."""
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def localise(command: str, directory: Path, kube_port: int, compute_port: int) -> list[str]:
    command = command.replace("/tmp/lbhc-sandbox", str(directory))
    # What the shell makes of the taint's timestamp: now, as the autoscaler writes it.
    command = command.replace("$(date +%s)", str(int(time.time())))
    command = command.replace("6443", str(kube_port)).replace("8080", str(compute_port))
    argv = shlex.split(command)
    if argv[0] == "lbhc":
        return [sys.executable, "-m", "lbhc", *argv[1:]]
    if argv[0] == "kubectl":
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            pytest.skip("kubectl is not installed: the tour's kubectl commands cannot run")
        return [kubectl, *argv[1:]]
    raise AssertionError(f"the tour runs only lbhc and kubectl, not {argv[0]!r}")


def test_the_tour_runs_and_prints_what_the_readme_shows(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    kube_port, compute_port = free_port(), free_port()
    (_, serve), *rest = blocks(TOUR)
    sandbox = subprocess.Popen(
        localise(serve.strip(), tmp_path, kube_port, compute_port),
        cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert sandbox.stdout is not None
        for line in sandbox.stdout:  # the banner ends once everything serves
            if line.startswith("Ctrl-C"):
                break
        else:
            raise AssertionError("lbhc sandbox exited before serving")
        ran = 0
        for index, (language, body) in enumerate(rest):
            if language != "sh":
                continue
            output = ""
            for command in body.strip().splitlines():
                done = subprocess.run(
                    localise(command, tmp_path, kube_port, compute_port),
                    cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                    stdin=subprocess.DEVNULL,  # never a terminal, so never a question
                )  # fmt: skip
                assert done.returncode == 0, f"{command}\n{done.stderr}"
                output, ran = done.stdout, ran + 1
            following = rest[index + 1] if index + 1 < len(rest) else ("", "")
            if following[0] == "text":  # the block shows the last command's output
                printed = [line.rstrip() for line in output.splitlines()]
                for line in following[1].splitlines():
                    if line.strip() != "...":
                        assert line.rstrip() in printed, f"README shows {line!r}; got:\n{output}"
        assert ran >= 5
    finally:
        sandbox.terminate()
        sandbox.wait(timeout=30)


def test_try_it_is_exactly_make_demo_and_make_test() -> None:
    (language, body), *_ = blocks(TRY_IT)
    commands = [line.split("#")[0].strip() for line in body.strip().splitlines()]
    assert (language, commands) == ("sh", ["make demo", "make test"])
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    dry = subprocess.run(
        [make, "--no-print-directory", "-n", "demo"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    # The same entry point the demo test runs in-process (tests/sandbox/test_demo_and_sandbox.py).
    assert any(line.endswith("/lbhc demo") for line in dry.stdout.splitlines()), dry.stdout


def test_the_demo_sample_shows_the_demos_steps() -> None:
    from tests.sandbox.test_demo_and_sandbox import STEPS

    sample = blocks(TRY_IT)[1][1]
    shown = re.findall(r"^  (?:ok  |FAIL) (\S+)", sample, flags=re.M)
    assert shown == STEPS


def test_every_settings_flag_of_plan_is_in_the_readmes_settings_table() -> None:
    section = README.split("## Settings", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `[a-z_.]+` \| `(--[a-z-]+)` \|", section, flags=re.M))
    plan = build_parser()._subparsers._group_actions[0].choices["plan"]  # type: ignore[union-attr]
    flags = {o for a in plan._actions for o in a.option_strings if o.startswith("--")} - {
        "--help", "--config", "--cluster-snapshot", "--output", "--log-level",
        "--detailed-exitcode",
    }  # fmt: skip
    assert flags and flags <= listed, flags - listed


def test_every_make_target_the_readme_names_exists() -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    targets = set(re.findall(r"^make (\w+)", README, flags=re.M))
    assert {"demo", "test", "try", "bench"} <= targets
    for target in targets:
        dry = subprocess.run([make, "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert dry.returncode == 0, f"make {target}: {dry.stderr}"
