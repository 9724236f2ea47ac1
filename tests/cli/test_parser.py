"""The flags as a kubectl or terraform user expects them: every flag explained with its
default, no silent abbreviations, durations that make sense, a version to put in a bug
report."""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from lbhc import __version__
from lbhc.cli import main
from lbhc.cli.completion import bash_script
from lbhc.cli.parser import build_parser
from lbhc.cli.version import COMMIT_FILE, version_info


def subcommands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    parser = build_parser()
    yield "lbhc", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"lbhc {name}", sub


def options() -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    for prog, parser in subcommands():
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                yield prog, parser, action


ALL_OPTIONS = [pytest.param(p, a, id=f"{prog} {a.option_strings[-1]}") for prog, p, a in options()]


@pytest.mark.parametrize(("parser", "action"), ALL_OPTIONS)
def test_every_flag_has_help_that_states_its_default(
    parser: argparse.ArgumentParser, action: argparse.Action
) -> None:
    assert action.help, f"{action.option_strings} has no help text"
    formatter = parser._get_formatter()
    shown = formatter._expand_help(action) if action.help else ""
    # Flags whose value is a setting say the settings model's default themselves; flags
    # that are off unless given (store_true, version) have no default worth saying.
    has_default = action.default not in (None, False, argparse.SUPPRESS)
    settings_flag = action.default is None and action.dest not in ("config", "cluster_snapshot")
    if has_default or (settings_flag and action.dest not in _REQUIRED_OR_EXPLAINED):
        assert "default" in shown, f"{action.option_strings}: {shown!r}"


# Settings with no default (required) or whose help says what happens without them.
_REQUIRED_OR_EXPLAINED = {"project", "region", "node_tags", "watch"}


@pytest.mark.parametrize(("parser", "action"), ALL_OPTIONS)
def test_a_flag_that_is_a_setting_names_it_as_the_file_and_the_environment_spell_it(
    parser: argparse.ArgumentParser, action: argparse.Action
) -> None:
    """So `--help` alone tells a Deployment author the ConfigMap key and the variable. A
    command's own flag that shares a setting's name (teardown's and release-holds' --dry-run,
    which the setting controller.dry_run does not reach) must not claim to be it."""
    from lbhc.settings import FLAG_SETTINGS, lookup

    shown = parser._get_formatter()._expand_help(action)
    is_setting = action.dest in FLAG_SETTINGS and action.default is None
    if is_setting:
        name = lookup(action.dest)
        assert f"[{name.path}, {name.env}]" in shown, shown
    else:
        assert "LBHC_" not in shown, shown
    if parser.prog in ("lbhc teardown", "lbhc release-holds") and action.dest == "dry_run":
        assert not is_setting


def test_there_are_flags_to_check() -> None:
    assert len(ALL_OPTIONS) > 50


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--proj", "p"],
        ["apply", "--auto"],
        ["status", "--lb"],
        ["run", "--leader-elect-lease", "15s"],
        ["teardown", "--dry"],
        ["release-holds", "--kube", "f"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_abbreviations_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "unrecognized arguments" in capsys.readouterr().err


DURATION_FLAGS = [
    ["status", "--watch"],
    ["run", "--resync-period"],
    ["run", "--leader-elect-lease-duration"],
    ["run", "--leader-elect-renew-deadline"],
    ["run", "--leader-elect-retry-period"],
]


@pytest.mark.parametrize("flag", DURATION_FLAGS, ids=lambda f: " ".join(f))
@pytest.mark.parametrize("value", ["0s", "0m", "-5s", "5"])
def test_durations_must_be_positive_with_a_unit(
    flag: list[str], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*flag[:1], f"{flag[1]}={value}"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "invalid duration" in err[0] and flag[1] in err[0]


def test_version_names_what_a_bug_report_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "--output", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["lbhc"] == __version__ == metadata.version("lbhc")
    assert info["python"] == platform.python_version()
    assert info["google-cloud-compute"] == metadata.version("google-cloud-compute")
    assert info["kubernetes"] == metadata.version("kubernetes")
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    if head:  # a source checkout: the commit is known
        assert info["commit"].removesuffix("-dirty") == head


def test_dash_dash_version_prints_the_version_and_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lbhc", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"lbhc {__version__}"


def test_bash_completion_offers_every_subcommand_and_flag(tmp_path: Path) -> None:
    """Generated from the parser, then run by bash: what it completes is what parses."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "lbhc.bash"
    script.write_text(bash_script(build_parser()))

    def complete(*words: str) -> set[str]:
        array = " ".join(shlex.quote(w) for w in ("lbhc", *words))
        probe = f"source {script}; COMP_WORDS=({array}); COMP_CWORD={len(words)}; _lbhc; "
        probe += 'printf "%s\\n" "${COMPREPLY[@]}"'
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    for prog, parser in subcommands():
        if prog == "lbhc":
            continue
        name = prog.split()[1]
        assert name in complete(name[:2]), name
        flags = {o for a in parser._actions for o in a.option_strings}
        assert complete(name, "-") == flags, name
    assert complete("plan", "--output", "") == {"text", "json"}
    assert complete("plan", "--proj") == {"--project"}


def test_an_image_reports_the_commit_written_at_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In the image there is no checkout: the commit comes from the file the Dockerfile
    writes into the environment (sys.prefix)."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    (tmp_path / COMMIT_FILE).write_text("0123456789ab\n")
    assert version_info()["commit"] == "0123456789ab"
    (tmp_path / COMMIT_FILE).write_text("\n")  # built without --build-arg COMMIT
    assert version_info()["commit"] == "unknown"


def test_every_run_setting_is_a_flag_whose_help_shows_the_models_default() -> None:
    """`lbhc run --help` is generated from the settings model: a run setting without its
    flag, or a flag whose stated default is not the model's, fails here."""
    from lbhc.settings import RUN_SETTINGS, default_text

    run = dict(subcommands())["lbhc run"]
    flags = {a.dest: a for a in run._actions if a.option_strings}
    for name in RUN_SETTINGS:
        action = flags[name]
        assert action.default is None, f"--{name}: a flag default would hide LBHC_* and the file"
        shown = run._get_formatter()._expand_help(action)
        if name != "leader_elect_resource_namespace":  # its default depends on $POD_NAMESPACE
            assert f"default: {default_text(name)}" in shown, shown
