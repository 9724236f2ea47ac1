"""`lbhc demo` end to end (its JSON summary, field by field) and `lbhc sandbox` serving
kubectl and lbhc itself through the kubeconfig it writes."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lbhc.cli import main
from lbhc.cli.parser import build_parser
from lbhc.cli.sandbox import sandbox_spec
from lbhc.demo.scenario import DemoOptions, demo_spec, run_demo, sandbox_command
from lbhc.sandbox.sandbox import NODE_TAG

ROOT = Path(__file__).resolve().parents[2]
STEPS = [
    "plan",
    "converge",
    "scale-down",
    "scale-down-aborted",
    "version-skew",
    "clean-up",
    "connections",
]
RUNS = [
    *(
        f"{kind}{suffix}"
        for suffix in ("", "-delay-5s")
        for kind in ("without-check", "upstream", "with-lbhc")
    ),
    # lbhc's deletion hold is on the node: it protects every load balancer holding it.
    "upstream-delay-5s-hold",
    "with-lbhc-delay-5s-hold",
]


@pytest.mark.parametrize(
    ("cloud_provider", "backfilled", "covered"),
    [
        # Today's GCE: 3 Cluster pools carry the cloud provider's node check, 1 legacy one none.
        ("current", 1, 3),
        # The old world: no pool carries any check; lbhc attaches its own to all 3.
        ("legacy", 3, 0),
    ],
)
def test_demo_walks_every_step_and_reports_it(
    cloud_provider: str, backfilled: int, covered: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `lbhc demo` runs (lbhc/cli/sandbox.py), its timeline and its summary."""
    summary = demo_summary(cloud_provider, capsys)

    assert [step["name"] for step in summary["steps"]] == STEPS
    assert all(step["ok"] for step in summary["steps"]), summary["steps"]
    assert all(step["seconds"] >= 0 for step in summary["steps"])
    assert summary["ok"] is True
    assert summary["converged"] is True
    assert (summary["pools_backfilled"], summary["pools_covered_by_cloud_provider"]) == (
        backfilled,
        covered,
    )
    # Both checks have the default timings (interval 8 s, unhealthy 3) at the default time
    # scale 0.25: the bound is (3 + 1) x 8 s x 0.25; three failed probes take about two
    # intervals or more.
    assert summary["drain_bound_seconds"] == pytest.approx(8.0)
    assert 1 * 8 * 0.25 <= summary["drain_seconds"] <= summary["drain_bound_seconds"]
    assert summary["fallback_entered"] is True
    assert summary["fallback_left"] is True
    assert summary["gc_complete"] is True
    # firewall + check created, the backfilled pools attached, detached by fallback,
    # re-attached and detached on clean-up (but for a pool the cloud provider deleted first,
    # once the Services are gone), check and firewall deleted: nothing more, nothing
    # repeated, and never a write to a pool the cloud provider's check covers.
    removed_first = summary["pools_removed_before_detach"]
    assert 0 <= removed_first <= backfilled
    assert summary["gce_mutations"] == 2 + 4 * backfilled - removed_first + 2
    assert_connections_counted(summary["connections"])


def assert_connections_counted(connections: dict[str, dict[str, int]]) -> None:
    """The same scale-down under client load through each kind of pool: over the drain bound
    a /healthz check (the cloud provider's or lbhc's) fails no new connection while a pool
    without one fails some; at the autoscaler's 5 s default nothing drains in time."""
    assert list(connections) == RUNS
    for name, counts in connections.items():
        assert set(counts) == {"attempted", "completed", "failed", "cut"}, name
        assert all(isinstance(v, int) and v >= 0 for v in counts.values()), name
        assert counts["attempted"] == counts["completed"] + counts["failed"] > 0, name
    assert connections["with-lbhc"]["failed"] == 0
    assert connections["upstream"]["failed"] == 0
    assert connections["without-check"]["failed"] > 0
    assert connections["without-check-delay-5s"]["failed"] > 0
    # At the same 5 s delete delay, the hold keeps the VM until GCE calls it UNHEALTHY.
    assert connections["with-lbhc-delay-5s-hold"]["failed"] == 0
    assert connections["upstream-delay-5s-hold"]["failed"] == 0


def demo_summary(cloud_provider: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Today's world through run_demo, whose timeline the README shows; the old one through
    the CLI, its exit code and JSON output included."""
    if cloud_provider == "current":
        timeline = io.StringIO()
        summary = run_demo(DemoOptions(cloud_provider=cloud_provider), out=timeline).to_json()
        assert_readme_sample_matches(timeline.getvalue())  # timings aside
        assert_no_dead_path(timeline.getvalue())
        return summary
    code = main(["demo", "--output", "json", "--cloud-provider", cloud_provider])
    out = capsys.readouterr().out
    assert code == 0, out
    parsed: dict[str, Any] = json.loads(out)
    return parsed


# A row of the connections table: run, delete delay, then the four counts, which vary.
_COUNTS_ROW = re.compile(r"^(\S+ +\d+s)( +\d+){4}$")


def _timeless(line: str) -> str:
    """A demo line without what varies from run to run: timestamps and durations (with the
    padding that aligns them: 9.5 s and 11.2 s are as wide), the connection counts, and
    those a pool without a check loses (how many the hash sends to the node varies; lbhc's
    and the cloud provider's zero does not)."""
    line = re.sub(r" *\d+\.\d+s", " N s", re.sub(r"^\[\s*[\d.]+s\] ", "", line.rstrip()))
    line = _COUNTS_ROW.sub(lambda m: m.group(1) + " N N N N", line)
    line = re.sub(r"without-check \d+,", "without-check N,", line)
    # How long the hold lasted varies with when the check's probes fell.
    return re.sub(r"after \d+ s", "after N s", line)


def assert_readme_sample_matches(text: str) -> None:
    readme = (ROOT / "README.md").read_text()
    sample = readme.split("## Try it", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    printed = {_timeless(line) for line in text.splitlines()}
    shown = [line for line in sample.splitlines() if line.strip() and line.strip() != "..."]
    assert len(shown) >= 10, f"README's demo sample is missing or cut short: {sample!r}"
    for line in shown:
        assert _timeless(line) in printed, f"README's demo shows {line!r}; got:\n{text}"


def assert_no_dead_path(text: str) -> None:
    """The demo's sandbox lived in a temporary directory, removed when it ends: its output
    names nothing there (a kubeconfig the reader could not use), and says how to get a sandbox
    that stays up instead."""
    assert tempfile.gettempdir() not in text, text
    assert "--kubeconfig" not in text, text
    assert text.rstrip().endswith(sandbox_command(demo_spec(DemoOptions()))), text


@pytest.mark.parametrize("cloud_provider", ["current", "legacy"])
def test_the_sandbox_command_the_demo_prints_serves_the_demos_world(cloud_provider: str) -> None:
    spec = demo_spec(DemoOptions(cloud_provider=cloud_provider))
    argv = shlex.split(sandbox_command(spec))
    assert argv[:2] == ["lbhc", "sandbox"]
    assert sandbox_spec(build_parser().parse_args(argv[1:])) == spec


def test_demo_rejects_a_bad_time_scale(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--time-scale", "5"]) == 1
    assert "time scale: got 5.0; expected more than 0, at most 1" in capsys.readouterr().err


def read_banner(process: subprocess.Popen[str]) -> str:
    """The usage text `lbhc sandbox` prints once it serves (it ends with the Ctrl-C line)."""
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Ctrl-C"):
            return "".join(lines)
    raise AssertionError(f"lbhc sandbox exited early: {''.join(lines)}")


def test_sandbox_serves_kubectl_and_lbhc(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: cannot check the sandbox against a real kubectl")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    sandbox = subprocess.Popen(
        [sys.executable, "-m", "lbhc", "sandbox", "--dir", str(tmp_path), "--nodes", "4",
         "--kube-proxy-versions", "v1.31.4,v1.29.6"],
        cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        banner = read_banner(sandbox)
        kubeconfig = tmp_path / "kubeconfig"
        assert f"kubectl --kubeconfig {kubeconfig} get nodes" in banner
        nodes = subprocess.run(
            [kubectl, "--kubeconfig", str(kubeconfig), "get", "nodes", "-o", "name"],
            capture_output=True, text=True, env=env, timeout=60, check=True,
        )  # fmt: skip
        assert len(nodes.stdout.split()) == 4

        plan_line = next(line for line in banner.splitlines() if "lbhc plan" in line)
        flags = plan_line.split("lbhc plan", 1)[1].split()
        assert flags[flags.index("--node-tags") + 1] == NODE_TAG
        planned = subprocess.run(
            [sys.executable, "-m", "lbhc", "plan", *flags, "--detailed-exitcode"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert planned.returncode == 2, planned.stderr
        # Today's cloud provider covers 3 Cluster pools itself; only the legacy one needs lbhc.
        assert "Plan: 2 to create, 0 to update, 1 to attach, 0 to detach, 0 to delete." in (
            planned.stdout
        )
        status = subprocess.run(
            [sys.executable, "-m", "lbhc", "status", *flags, "--output", "json"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        versions = {n["kubeProxy"]["version"] for n in json.loads(status.stdout)["nodes"]}
        assert versions == {"v1.31.4", "v1.29.6"}
    finally:
        sandbox.terminate()
        sandbox.wait(timeout=30)
    assert sandbox.returncode == 0
