"""`lbhc version`: what is running, for a bug report: lbhc's version and commit, and the
versions of the interpreter and the two client libraries whose behaviour lbhc depends on."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from lbhc import __version__
from lbhc.cli.parser import EXIT_OK

# Written at image build time (the Dockerfile's COMMIT build argument) into the environment
# lbhc is installed in; a source checkout is asked with git instead.
COMMIT_FILE = "lbhc-commit"
_LIBRARIES = ("google-cloud-compute", "kubernetes")


def version_info() -> dict[str, str]:
    info = {"lbhc": __version__, "commit": commit() or "unknown"}
    info["python"] = platform.python_version()
    for library in _LIBRARIES:
        try:
            info[library] = metadata.version(library)
        except metadata.PackageNotFoundError:
            info[library] = "not installed"
    return info


def commit() -> str | None:
    built = Path(sys.prefix) / COMMIT_FILE
    if built.is_file():
        return built.read_text().strip() or None
    return _git_commit(Path(__file__).resolve().parents[2])


def _git_commit(checkout: Path) -> str | None:
    """The commit of a source checkout (an editable install), `-dirty` with local changes;
    None when this is not a checkout or git is absent."""
    if not (checkout / ".git").exists():
        return None
    try:
        head = _git(checkout, "rev-parse", "--short=12", "HEAD")
        dirty = _git(checkout, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), *args],
        capture_output=True,
        text=True,
        timeout=5,
        check=True,
    )
    return done.stdout.strip()


def version(args: argparse.Namespace) -> int:
    info = version_info()
    if args.output == "json":
        print(json.dumps(info, indent=2))
    else:
        print(f"lbhc {info.pop('lbhc')}")
        for name, value in info.items():
            print(f"{name}: {value}")
    return EXIT_OK
