"""`lbhc demo --timeline FILE`: a FILE the picture cannot be written to is a usage error before
anything runs (exit 2, one line), and a good one reaches the demo's options. The demo itself
is replaced here: these tests are about the flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lbhc.cli import main
from lbhc.demo.timeline import DemoSummary, StepResult


@pytest.fixture
def demo_options(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The DemoOptions each `lbhc demo` was run with, the run itself replaced by a pass."""
    seen: list[Any] = []

    def run_demo(options: Any, out: Any = None) -> DemoSummary:
        seen.append(options)
        return DemoSummary(steps=[StepResult("stand-in", ok=True)])

    monkeypatch.setattr("lbhc.demo.scenario.run_demo", run_demo)
    return seen


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("picture.png", "name it *.html"),
        ("picture", "name it *.html"),
        ("missing/picture.html", "no directory"),
        ("folder.html", "is a directory"),
    ],
)
def test_a_file_the_picture_cannot_be_written_to_is_a_usage_error_before_the_demo(
    tmp_path: Path,
    demo_options: list[Any],
    capsys: pytest.CaptureFixture[str],
    name: str,
    says: str,
) -> None:
    (tmp_path / "folder.html").mkdir()
    assert main(["demo", "--output", "json", "--timeline", str(tmp_path / name)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("lbhc: error: argument --timeline: ") and says in line, line
    assert not demo_options


def test_the_timeline_file_reaches_the_demo(
    tmp_path: Path, demo_options: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.HTML"
    assert main(["demo", "--output", "json", "--timeline", str(path)]) == 0
    assert main(["demo", "--output", "json"]) == 0
    assert [options.timeline for options in demo_options] == [path, None]
    assert not path.exists()  # written by the demo once it records its runs, not by the CLI


def test_without_timeline_plotly_is_not_asked_for(
    demo_options: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def absent() -> None:
        raise AssertionError("require_plotly called without --timeline")

    monkeypatch.setattr("lbhc.demo.picture.require_plotly", absent)
    assert main(["demo", "--output", "json"]) == 0
