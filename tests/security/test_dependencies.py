"""Dependencies: requirements.lock pins every runtime dependency, transitively and nothing
more, exactly; and .ci/vuln-check (make audit) lists vulnerable pins from an index's
advisories, here a local stand-in for PyPI's JSON API."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lbhc.sandbox.streaming import StreamingServer

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
SCRIPT = ROOT / ".ci" / "vuln-check"


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.+!-]*)", line)
            assert match, f"requirements.lock: {line!r} is not NAME==VERSION"
            name = canonicalize_name(match.group(1))
            assert name not in found, f"{name} pinned twice"
            found[name] = match.group(2)
    return found


def test_the_lock_pins_exactly_the_runtime_closure() -> None:
    """From pyproject's dependencies through each package's own requirements (extras and
    markers for this interpreter): every package reached is pinned, and nothing else is. A
    pin's requirements are read from the installed package; where the test environment has
    another version than the pin, only the names are compared."""
    locked = pins()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(spec) for spec in project["dependencies"]]
    seen: set[tuple[str, frozenset[str]]] = set()
    outside: list[str] = []
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if (name, frozenset(requirement.extras)) in seen:
            continue
        seen.add((name, frozenset(requirement.extras)))
        assert name in locked, f"{name} is needed ({requirement}) but not pinned"
        if not requirement.specifier.contains(locked[name], prereleases=True):
            outside.append(f"{name}=={locked[name]} vs {requirement}")
        environments = [{"extra": extra} for extra in requirement.extras] or [{"extra": ""}]
        for spec in metadata.requires(name) or []:
            child = Requirement(spec)
            if child.marker is None or any(child.marker.evaluate(e) for e in environments):
                installed = metadata.version(name) == locked[name]
                todo.append(child if installed else Requirement(child.name))
    assert not outside, outside
    assert set(locked) == {name for name, _ in seen}, "pinned but never needed"


# ---- .ci/vuln-check against a stand-in index --------------------------------------------

VULN = {
    "id": "PYSEC-2099-1",
    "aliases": ["CVE-2099-0001"],
    "fixed_in": ["1.1"],
    "link": "https://osv.example/PYSEC-2099-1",
    "summary": "bad",
    "withdrawn": None,
}
# (name, version) -> per-version document; (name, None) -> the project's (latest) document
INDEX: dict[tuple[str, str | None], dict[str, object]] = {
    ("alpha", "1.0"): {"info": {"version": "1.0"}, "vulnerabilities": [VULN]},
    ("beta", "2.0"): {
        "info": {"version": "2.0"},
        "vulnerabilities": [{**VULN, "id": "OLD-1", "withdrawn": "2099-01-01T00:00:00Z"}],
    },
    ("gamma", None): {"info": {"version": "3.0"}, "vulnerabilities": [{**VULN, "id": "G-1"}]},
    ("delta", None): {"info": {"version": "4.1"}, "vulnerabilities": []},
    ("clean", "9.0"): {"info": {"version": "9.0"}, "vulnerabilities": []},
}


@pytest.fixture(scope="module")
def index() -> Iterator[str]:
    def dispatch(
        method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        parts = path.strip("/").split("/")  # pypi/NAME[/VERSION]/json
        if parts[:1] == ["broken"]:
            return 500, {}, b"oops"
        key = (parts[1], parts[2] if len(parts) == 4 else None)
        if key not in INDEX:
            return 404, {}, b""
        return 200, {"Content-Type": "application/json"}, json.dumps(INDEX[key]).encode()

    with StreamingServer(dispatch, "fake-index") as server:
        yield server.url


def audit(tmp_path: Path, lock: str, index: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "requirements.lock"
    path.write_text(lock)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--lock", str(path), "--index", index],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("lock", "code", "lines"),
    [
        (
            "# a comment\nalpha==1.0\nbeta==2.0\nclean==9.0\n",
            1,
            [
                "VULNERABLE alpha==1.0: PYSEC-2099-1 (CVE-2099-0001); fixed in 1.1; "
                "https://osv.example/PYSEC-2099-1",
                "3 pins from LOCK: 1 vulnerable, 2 with no known vulnerability, 0 unchecked",
            ],
        ),
        (  # an index with only latest-release documents: the latest pin is checked
            "gamma==3.0\ndelta==4.0\nepsilon==5.0\n",
            1,
            [
                "VULNERABLE gamma==3.0: G-1 (CVE-2099-0001); fixed in 1.1;",
                "unchecked  delta==4.0: the index reports only on its latest release (4.1)",
                "unchecked  epsilon==5.0: not on the index",
                "3 pins from LOCK: 1 vulnerable, 0 with no known vulnerability, 2 unchecked",
            ],
        ),
        ("beta==2.0\nclean==9.0\n", 0, ["2 pins from LOCK: 0 vulnerable, 2 with no known"]),
        ("delta==4.0\n", 3, ["1 pins from LOCK: 0 vulnerable, 0 with no known vulnerability"]),
        ("alpha>=1.0\n", 2, []),
    ],
)
def test_vuln_check_lists_vulnerable_pins(
    tmp_path: Path, index: str, lock: str, code: int, lines: list[str]
) -> None:
    done = audit(tmp_path, lock, index)
    assert done.returncode == code, done.stdout + done.stderr
    out = done.stdout.replace(str(tmp_path / "requirements.lock"), "LOCK")
    for line in lines:
        assert line in out, out


def test_vuln_check_reports_an_unreachable_index_as_unchecked(tmp_path: Path, index: str) -> None:
    done = audit(tmp_path, "alpha==1.0\n", index + "/broken")
    assert done.returncode == 3
    assert "unchecked  alpha==1.0: HTTPError" in done.stdout


def test_audit_is_its_own_make_target_outside_make_test() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^audit:\n\t\$\(PYTHON\) \.ci/vuln-check --lock requirements\.lock$",
                     makefile, re.MULTILINE)  # fmt: skip
    (test_line,) = re.findall(r"^test:(.*)$", makefile, re.MULTILINE)
    assert "audit" not in test_line
    assert "vuln-check" not in (ROOT / ".ci" / "run").read_text()
    assert SCRIPT.stat().st_mode & 0o111, ".ci/vuln-check is not executable"
