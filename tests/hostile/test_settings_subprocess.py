"""`lbhc run` as its own process, as a Deployment runs it: an invalid setting from a flag,
the environment or the config file ends the process at once with exit code 2 and one line
on stderr, before either fake is contacted. The control case shows the same command with
valid settings does start (binds, lists), so "nothing started" is a real observation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lbhc.cli.parser import EXIT_OK, EXIT_USAGE
from tests.hostile.conftest import Fakes, free_port, port_is_free
from tests.hostile.test_settings_errors import argv, base_flags
from tests.waiting import wait_for


def spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lbhc", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("LBHC_")}, **env},
    )


@pytest.mark.parametrize(
    ("flag", "env", "config", "says"),
    [
        ({"cluster_id": "Bad_Id"}, {}, "", "setting 'health_check.cluster_id'"),
        ({}, {"LBHC_GCE_MAX_ATTEMPTS": "many"}, "", "from LBHC_GCE_MAX_ATTEMPTS"),
        ({}, {}, "readiness_policy: [audit\n", "not valid YAML: line 2"),
    ],
    ids=["flag", "env", "config-file"],
)
def test_an_invalid_setting_ends_the_process_with_one_line(
    flag: dict[str, str],
    env: dict[str, str],
    config: str,
    says: str,
    clean_fakes: Fakes,
    tmp_path: Path,
) -> None:
    port = free_port()
    extra: list[str] = []
    if config:
        path = tmp_path / "lbhc.yaml"
        path.write_text(config)
        extra = ["--config", str(path)]
    args = argv(base_flags(clean_fakes, port) | flag, *extra)
    process = spawn(args, env)
    out, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_USAGE, err
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("lbhc: error: "), err
    assert says in err
    assert clean_fakes.contacted() == []
    assert port_is_free(port)


def test_the_same_command_with_valid_settings_does_start(clean_fakes: Fakes) -> None:
    port = free_port()
    process = spawn(argv(base_flags(clean_fakes, port)), {})
    try:
        wait_for(
            lambda: any("/api/v1/nodes" in c for c in clean_fakes.contacted()),
            timeout=60,
            what="the controller listing Nodes",
        )
        assert not port_is_free(port)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == EXIT_OK, err
