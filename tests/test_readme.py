"""The README is the front door: its commands run, and its settings table is complete."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def code_block_after(marker: str) -> list[str]:
    """Shell commands of the first ```sh block after `marker`, continuations joined."""
    start = README.index(marker)
    block = README[start:].split("```sh\n", 1)[1].split("```", 1)[0]
    return [cmd.strip() for cmd in block.replace("\\\n", " ").splitlines() if cmd.strip()]


def as_local(command: str, port: int) -> list[str]:
    """Run with this interpreter's environment instead of .venv, on a free port."""
    bin_dir = Path(sys.executable).parent
    command = command.replace(".venv/bin/python", sys.executable)
    command = command.replace(".venv/bin/lbhc", str(bin_dir / "lbhc"))
    return shlex.split(command.replace("8080", str(port)))


def lbhc_command(command: str, port: int) -> list[str]:
    argv = as_local(command, port)
    if not Path(argv[0]).exists():  # not installed as a script here: same entry point
        argv = [sys.executable, "-m", "lbhc", *argv[1:]]
    return argv


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_try_it_locally_commands_work() -> None:
    serve, plan, status = code_block_after("To try the commands locally")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        as_local(serve, port),
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()  # blocks until the fake is serving (or exits)
        assert f"serving http://127.0.0.1:{port}" in banner, banner
        lbhc_cmd = lbhc_command(plan, port)
        deadline = time.monotonic() + 120
        result = subprocess.run(
            [*lbhc_cmd, "--detailed-exitcode"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=max(1, deadline - time.monotonic()),
        )
        assert result.returncode == 2, result.stderr
        assert (
            "Plan: 2 to create, 0 to update, 2 to attach, 0 to detach, 0 to delete."
            in result.stdout
        )
        shown = subprocess.run(
            lbhc_command(status, port),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=max(1, deadline - time.monotonic()),
        )
        assert shown.returncode == 0, shown.stderr
        # The example's pool-3 is being scaled down and its kube-proxy is expectedly unready;
        # with nothing attached yet (plan only), the LB does not drain it, and status says so.
        row = next(
            line for line in shown.stdout.splitlines() if line.startswith("gke-demo-default-pool-3")
        )
        assert "not-draining" in row.split() and "expected-unready" in row.split()
        assert "Warning: node gke-demo-default-pool-3 is not-draining" in shown.stdout
        assert "kube-proxy: healthy" in shown.stdout
    finally:
        server.terminate()
        server.wait(timeout=10)


def settings_rows() -> dict[str, list[str]]:
    table = README.split("## Settings", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        if line.startswith("| `") and len(cells) == 4:
            path = cells[0].strip("`")
            assert path not in rows, f"README lists {path} twice"
            rows[path] = cells
    return rows


def test_settings_table_lists_every_setting_with_its_flag_and_default() -> None:
    """The table is checked against the settings model: a setting missing, a flag that is
    not one, or a default that is not the model's fails here."""
    from lbhc.settings import SETTING_NAMES, default_text

    rows = settings_rows()
    assert sorted(rows) == sorted(name.path for name in SETTING_NAMES)
    for name in SETTING_NAMES:
        _, flag, default, _ = rows[name.path]
        assert flag == (f"`{name.flag}`" if name.is_flag else ""), rows[name.path]
        model_default = default_text(name.path)
        if model_default == "required" or default == "required":
            assert default == model_default, rows[name.path]
        elif re.fullmatch(r"`[^`]*`", default):  # one literal value: the model's
            assert default.strip("`").replace("\\|", "|") == model_default, rows[name.path]


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_make_target_and_doc_the_readme_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.MULTILINE))
    named = set(re.findall(r"^make ([a-z-]+)", README, flags=re.MULTILINE))
    assert {"test", "bench", "chaos", "audit"} <= named
    assert named <= targets, f"README names make targets the Makefile lacks: {named - targets}"
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), f"README links {link}, which does not exist"


def test_permissions_section_matches_the_code() -> None:
    from lbhc.gce.permissions import required_permissions

    section = README.split("## GCE permissions", 1)[1].split("\n## ", 1)[0]
    listed: set[str] = set()
    for prefix, group in re.findall(r"(compute\.[A-Za-z]+)\.\{([^}]+)\}", section):
        listed |= {f"{prefix}.{verb.strip()}" for verb in group.split(",")}
    listed |= set(re.findall(r"(compute\.[A-Za-z]+\.[A-Za-z]+)(?=[,\s.]|$)", section))
    assert listed == set(required_permissions())


def test_the_image_tag_shown_and_deployed_is_the_version() -> None:
    """The version is written once (lbhc/__init__.py); the README's build commands and the
    manifests' image tag must follow it, or a release deploys the previous image."""
    from lbhc import __version__

    shown = set(re.findall(r"REGISTRY/lbhc:(\S+)", README))
    kustomization = (ROOT / "deploy" / "base" / "kustomization.yaml").read_text()
    deployed = set(re.findall(r"newTag:\s*(\S+)", kustomization))
    assert shown == deployed == {__version__}


def test_the_run_flag_defaults_shown_are_the_models() -> None:
    """The controller's flag table shows each default as the settings model has it."""
    from lbhc.settings import default_text

    section = README.split("### The controller", 1)[1].split("\n## ", 1)[0]
    for flag, setting in (
        ("--resync-period", "resync_period"),
        ("--http-address", "http_address"),
        ("--log-format", "log_format"),
    ):
        row = next(line for line in section.splitlines() if line.startswith(f"| `{flag}`"))
        assert f"`{default_text(setting)}`" in row, row
    row = next(line for line in section.splitlines() if "`--leader-elect-lease-duration`" in line)
    shown = [
        default_text(f"leader_elect_{t}")
        for t in ("lease_duration", "renew_deadline", "retry_period")
    ]
    assert ", ".join(f"`{d}`" for d in shown) in row, row
