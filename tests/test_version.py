"""One version: the releases the settings' deprecation warnings name are no newer than the
package's version, the image tag deploy/ pins is that version, and the CHANGELOG release that
deprecated the old names is the one the warnings name."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pytest
from packaging.version import Version

from lbhc import __version__
from lbhc.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
NOTE = re.compile(r"\(lbhc (\d+\.\d+)'s name, deprecated since (\d+\.\d+)\)$")


def deprecation_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> list[str]:
    """The warnings for an old spelling in each place one can be: a flat key in the file and
    a flat variable."""
    for variable in list(os.environ):
        if variable.startswith("LBHC_"):
            monkeypatch.delenv(variable)
    monkeypatch.setenv("LBHC_PORT", "1234")
    config = tmp_path / "lbhc.yaml"
    config.write_text("region: us-central1\n")
    with caplog.at_level(logging.WARNING, logger="lbhc.settings"):
        load_settings(config, project="p", node_tags="a")
    return [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]


def test_deprecations_name_releases_no_newer_than_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    warnings = deprecation_warnings(tmp_path, monkeypatch, caplog)
    assert len(warnings) == 2, warnings
    for warning in warnings:
        note = NOTE.search(warning)
        assert note, f"a deprecation names no release: {warning!r}"
        old, since = Version(note[1]), Version(note[2])
        assert old < since <= Version(__version__), warning


def test_the_changelog_release_that_deprecated_the_flat_names_is_the_one_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (warning, *_) = deprecation_warnings(tmp_path, monkeypatch, caplog)
    note = NOTE.search(warning)
    assert note
    changelog = (ROOT / "CHANGELOG.md").read_text()
    heading = re.search(rf"^## \[{re.escape(note[2])}\.0\] - .*$", changelog, re.MULTILINE)
    assert heading, f"CHANGELOG.md has no {note[2]}.0 release"
    release = changelog[heading.end() :].split("\n## ", 1)[0]
    deprecated = release.split("### Deprecated", 1)[1].split("\n### ", 1)[0]
    assert f"flat names of {note[1]}" in deprecated, deprecated


def test_every_image_tag_in_deploy_is_the_package_version() -> None:
    tags = {
        (path.relative_to(ROOT).as_posix(), tag)
        for path in (ROOT / "deploy").rglob("*.yaml")
        for tag in re.findall(r"^\s*newTag:\s*[\"']?([^\s\"']+)", path.read_text(), re.MULTILINE)
    }
    assert tags, "deploy/ pins no image tag"
    assert {tag for _, tag in tags} == {__version__}, sorted(tags)
