"""The Dockerfile, linted as far as a machine without a Docker engine allows: a multi-stage
build from one slim base pinned by exact tag and digest, dependencies only from
requirements.lock (which pins every runtime dependency at a version pyproject accepts), a
numeric non-root user, `lbhc run` as the entrypoint, and a .dockerignore that keeps everything
else out."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"requirements.lock: {line!r} is not pinned with =="
            pins[canonicalize_name(name)] = version
    return pins


def test_multi_stage_from_one_base_pinned_by_tag_and_digest() -> None:
    """Every stage FROM the same reference (the venv built in one runs in the other), an exact
    slim tag for people and a digest for the build: a tag can be re-pushed, a digest cannot."""
    bases = [rest.split()[0] for keyword, rest in instructions() if keyword == "FROM"]
    assert len(bases) >= 2, "a build stage and a runtime stage"
    assert len(set(bases)) == 1, f"the stages differ: {sorted(set(bases))}"
    pinned = re.fullmatch(r"python:\d+\.\d+\.\d+-slim-[a-z]+@sha256:[0-9a-f]{64}", bases[0])
    assert pinned, f"{bases[0]}: want python:X.Y.Z-slim-DISTRO@sha256:<64 hex>"


def test_final_stage_runs_lbhc_as_a_numeric_non_root_user() -> None:
    steps = instructions()
    final = steps[max(i for i, (k, _) in enumerate(steps) if k == "FROM") :]
    users = [rest for keyword, rest in final if keyword == "USER"]
    assert users, "the final stage sets no USER (it would run as root)"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) > 0 and (not gid or int(gid) > 0)
    (entrypoint,) = [rest for keyword, rest in final if keyword == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["lbhc", "run"]
    assert all(keyword != "ADD" for keyword, _ in steps)  # COPY only: no remote fetches


def test_dependencies_come_only_from_the_lock() -> None:
    runs = [rest for keyword, rest in instructions() if keyword == "RUN"]
    installs = [m.strip() for run in runs for m in re.findall(r"pip install ([^&]+)", run)]
    assert installs == ["-r requirements.lock", "--no-deps ."]


def test_the_lock_pins_every_runtime_dependency_within_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = lock()
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"requirements.lock lacks {name}"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} vs {spec}"


def test_dockerignore_lets_in_only_what_the_build_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*")] == "*"
    copied = {
        part.rstrip("/")
        for keyword, rest in instructions()
        if keyword == "COPY" and "--from" not in rest
        for part in rest.split()[:-1]
    }
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert copied == allowed


def test_the_image_records_the_commit_where_lbhc_version_reads_it() -> None:
    """The image has no git checkout: the build writes the COMMIT build argument into the
    environment lbhc is installed in, under the name lbhc/cli/version.py reads."""
    from lbhc.cli.version import COMMIT_FILE

    dockerfile = (ROOT / "Dockerfile").read_text()
    venv = re.search(r"python -m venv (\S+)", dockerfile)
    assert venv is not None
    assert re.search(r"^ARG COMMIT\b", dockerfile, flags=re.M)
    assert f'"$COMMIT" > {venv.group(1)}/{COMMIT_FILE}' in dockerfile
