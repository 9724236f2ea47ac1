"""The Dockerfile, linted as far as a machine without a Docker engine allows: a multi-stage
build from one slim base pinned by exact tag and digest, dependencies only from
requirements.lock (which pins every runtime dependency at a version pyproject accepts), a
numeric non-root user, `lbhc run` as the entrypoint, and a .dockerignore that keeps everything
else out."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
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


def test_the_sandbox_extra_stays_out_of_the_image() -> None:
    """The image installs only the lock: a package of the sandbox extra (the demo's plotly)
    pinned there would ship in every controller image."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["sandbox"]
    assert extra, "the sandbox extra is empty: nothing to keep out"
    pins = lock()
    for spec in extra:
        name = canonicalize_name(Requirement(spec).name)
        assert name not in pins, f"requirements.lock pins {name}, of the sandbox extra"


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


def image_contents(tmp_path: Path) -> Path:
    """lbhc/ as the build context has it: .dockerignore's exclusions under lbhc/ applied."""
    ignore = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    excluded = {line.rstrip("/") for line in ignore if line.startswith("lbhc/")}
    assert excluded == {"lbhc/sandbox", "lbhc/demo"}
    target = tmp_path / "image"
    shutil.copytree(
        ROOT / "lbhc",
        target / "lbhc",
        ignore=lambda directory, names: [
            name
            for name in names
            if name == "__pycache__" or str((Path(directory) / name).relative_to(ROOT)) in excluded
        ],
    )
    return target


# Runs lbhc from `sys.argv[1]` only: the checkout's editable install would otherwise supply
# the packages the image leaves out.
_ONLY_FROM = (
    "import runpy, sys; "
    "sys.meta_path[:] = [f for f in sys.meta_path "
    "if not getattr(f, '__module__', '').startswith('__editable__')]; "
    "sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'lbhc'; "
    "import lbhc; assert lbhc.__file__.startswith(sys.path[0]), lbhc.__file__; "
    "runpy.run_module('lbhc', run_name='__main__')"
)


def test_the_controller_runs_without_the_sandbox_and_the_sandbox_says_it_is_absent(
    tmp_path: Path,
) -> None:
    from tests.controller.harness import PROJECT, REGION, world
    from tests.waiting import wait_for

    image = image_contents(tmp_path)
    assert not (image / "lbhc" / "sandbox").exists()
    demo = subprocess.run(
        [sys.executable, "-c", _ONLY_FROM, str(image), "demo"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert demo.returncode == 2, demo.stderr
    [line] = demo.stderr.splitlines()
    assert line.startswith("lbhc: error: this installation of lbhc has no sandbox")

    with world() as w:  # the fakes, served from this process (which has the sandbox)
        pool = w.add_service("web")
        kubeconfig = w.kube_server.write_kubeconfig(tmp_path / "kubeconfig")
        run = [
            "run", "--kubeconfig", str(kubeconfig), "--project", PROJECT, "--region", REGION,
            "--node-tags", "gke-node", "--gce-endpoint", w.compute_url,
            "--http-address", "127.0.0.1:0", "--leader-elect=false",
        ]  # fmt: skip
        process = subprocess.Popen(
            [sys.executable, "-c", _ONLY_FROM, str(image), *run],
            cwd=tmp_path, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: w.attached(pool), timeout=30, what="lbhc run converging")
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
        assert "lbhc.sandbox" not in stderr and "Traceback" not in stderr
