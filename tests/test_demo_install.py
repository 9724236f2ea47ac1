"""`make demo` installs what the demo needs and no more: lbhc with the sandbox extra, never the
test extra, and nothing at all after a full install (make test, make venv). The demo's code
runs on lbhc's runtime dependencies alone (requirements.lock), with every test-only package
made unimportable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest
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


def test_the_demo_runs_without_any_test_only_package() -> None:
    locked = {
        canonicalize_name(line.split("==", 1)[0])
        for line in (ROOT / "requirements.lock").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    allowed = locked | {"lbhc"}
    blocked = sorted(
        module
        for module, distributions in metadata.packages_distributions().items()
        if not any(canonicalize_name(d) in allowed for d in distributions)
    )
    # The block is not empty: the test extra is installed here, and these are in it.
    assert {"responses", "pytest", "hypothesis"} <= set(blocked), blocked
    script = f"""
import importlib.abc, sys
BLOCKED = frozenset({blocked!r})
class TestOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (test-only)", name=name)
        return None
sys.meta_path.insert(0, TestOnly())
from lbhc.cli import main
from lbhc.demo.scenario import DemoOptions, demo_spec
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
with Sandbox(SandboxOptions(spec=demo_spec(DemoOptions()), kube_proxy_port=0)) as sandbox:
    print(sandbox.usage().splitlines()[0])
sys.exit(main(["sandbox", "--help"]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kube-apiserver fake: http://127.0.0.1:"), done.stdout
