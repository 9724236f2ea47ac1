"""`make demo` installs what the demo needs and no more: lbhc with the sandbox extra, never the
test extra, and nothing at all after a full install (make test, make venv). The demo's code
runs on lbhc's runtime dependencies (requirements.lock) and the sandbox extra alone, with every
test-only package made unimportable; without the extra, the demo's picture says how to get it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def make_dir(tmp_path: Path) -> Path:
    """The Makefile and the files its install stamps depend on, in a directory of their own."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml", "lbhc/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def dry_run(directory: Path, *args: str) -> list[str]:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", *args],
        cwd=directory, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout.splitlines()


def test_make_demo_installs_the_sandbox_extra_only(make_dir: Path) -> None:
    installs = [line for line in dry_run(make_dir, "demo") if "pip install" in line]
    assert any("-e '.[sandbox]'" in line for line in installs), installs
    assert not any("test" in line for line in installs), installs


def full_install_done(make_dir: Path) -> None:
    """Leave what the full install's recipe leaves: its stamps, newer than their sources."""
    full = dry_run(make_dir, "venv")
    assert any("-e '.[test,sandbox]'" in line for line in full), full
    later = time.time() + 10
    for line in full:
        if line.startswith("touch "):
            for stamp in line.split()[1:]:
                (make_dir / stamp).parent.mkdir(parents=True, exist_ok=True)
                (make_dir / stamp).touch()
                os.utime(make_dir / stamp, (later, later))


def test_after_the_full_install_make_demo_installs_nothing(make_dir: Path) -> None:
    full_install_done(make_dir)
    assert dry_run(make_dir, "demo") == [".venv/bin/lbhc demo"]


def test_a_version_bump_reinstalls(make_dir: Path) -> None:
    """pip records the version when it installs lbhc: a bump in lbhc/__init__.py reinstalls,
    or the installed metadata keeps the old version."""
    full_install_done(make_dir)
    later = time.time() + 20
    os.utime(make_dir / "lbhc" / "__init__.py", (later, later))
    for target in ("demo", "venv"):
        assert any("pip install" in line for line in dry_run(make_dir, target)), target


def sandbox_extra() -> set[str]:
    """The sandbox extra's packages and everything they need, as installed here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(spec) for spec in project["optional-dependencies"]["sandbox"]]
    found: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found or (requirement.marker and not requirement.marker.evaluate()):
            continue
        found.add(name)
        for spec in metadata.requires(name) or []:
            child = Requirement(spec)
            if child.marker is None or child.marker.evaluate({"extra": ""}):
                todo.append(child)
    return found


def blocking(blocked: list[str]) -> str:
    """Python that makes the top-level modules `blocked` unimportable, as if not installed."""
    return f"""
import importlib.abc, sys
BLOCKED = frozenset({blocked!r})
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden)", name=name)
        return None
sys.meta_path.insert(0, Absent())
"""


def test_the_demo_runs_without_any_test_only_package(tmp_path: Path) -> None:
    """On the lock and the sandbox extra alone: the sandbox serves, and a timeline is drawn."""
    locked = {
        canonicalize_name(line.split("==", 1)[0])
        for line in (ROOT / "requirements.lock").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    extra = sandbox_extra()
    assert "plotly" in extra
    allowed = locked | extra | {"lbhc"}
    blocked = sorted(
        module
        for module, distributions in metadata.packages_distributions().items()
        if not any(canonicalize_name(d) in allowed for d in distributions)
    )
    # The block is not empty: the test extra is installed here, and these are in it.
    assert {"responses", "pytest", "hypothesis"} <= set(blocked), blocked
    picture = tmp_path / "timeline.html"
    script = (
        blocking(blocked)
        + f"""
from pathlib import Path
from lbhc.cli import main
from lbhc.demo.picture import write_timeline
from lbhc.demo.scenario import DemoOptions, demo_spec
from lbhc.demo.trace import ConnectionPoint, HealthPoint, Mark, RunTrace
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
with Sandbox(SandboxOptions(spec=demo_spec(DemoOptions()), kube_proxy_port=0)) as sandbox:
    print(sandbox.usage().splitlines()[0])
run = RunTrace(
    "with-lbhc",
    (HealthPoint(0, "node-1", "web-0", "HEALTHY"),),
    (ConnectionPoint(0, 1, "completed", "node-1", "short"),),
    (Mark(0.5, "tainted"),),
)
write_timeline([run], Path({str(picture)!r}))
sys.exit(main(["sandbox", "--help"]))
"""
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kube-apiserver fake: http://127.0.0.1:"), done.stdout
    assert "with-lbhc" in picture.read_text(encoding="utf-8")


def test_without_the_sandbox_extra_the_timeline_says_how_to_install_it(tmp_path: Path) -> None:
    """plotly hidden, as in an install without the extra: lbhc and the picture module still
    import, `lbhc demo --timeline` stops before the demo runs with one line naming the
    install command (exit 2), and so does write_timeline."""
    picture = tmp_path / "timeline.html"
    script = (
        blocking(["plotly"])
        + f"""
from pathlib import Path
from lbhc.cli import main
from lbhc.demo.picture import write_timeline
from lbhc.demo.trace import RunTrace
from lbhc.errors import SetupError
code = main(["demo", "--timeline", {str(picture)!r}])
try:
    write_timeline([RunTrace("run", (), (), ())], Path({str(picture)!r}))
except SetupError as exc:
    print("write_timeline:", exc)
sys.exit(code)
"""
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("lbhc: error: drawing the demo's timeline needs plotly"), line
    assert "pip install 'lbhc[sandbox]'" in line
    (said,) = [out for out in done.stdout.splitlines() if out.startswith("write_timeline:")]
    assert "pip install 'lbhc[sandbox]'" in said
    assert not picture.exists()
