"""The docs stay true and self-contained: no pointers into a private tracker or to files
outside the repository, relative links that resolve, a changelog that agrees with the
version, and the license pyproject declares. Each checker is also run on text that must
fail it, so a checker that can no longer fail is caught too."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest

import lbhc

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "terraform" / "README.md",
    ROOT / "tests" / "e2e" / "README.md",
]
SOURCES = sorted(p for d in ("lbhc", "tests") for p in (ROOT / d).rglob("*.py"))

# Written in pieces so that this file does not match its own patterns.
_ISSUE = "iss" + "ue"
_HASH = "#"


@dataclass(frozen=True)
class Reference:
    """A kind of pointer a reader outside the project cannot follow."""

    id: str
    pattern: re.Pattern[str]
    bad: tuple[str, ...]  # text it must flag
    good: tuple[str, ...]  # legitimate text it must leave alone


INTERNAL_REFERENCES = [
    Reference(
        "tracker-number",
        re.compile(rf"\b{_ISSUE}s?\s*#?\d+", re.IGNORECASE),
        (f"as {_ISSUE} 8 asks", f"see {_ISSUE} {_HASH}15", f"{_ISSUE.title()}s 7"),
        (
            "kubernetes#117806",
            f"https://github.com/kubernetes/kubernetes/{_ISSUE}s/117806",
            f"{_ISSUE}_client_certificate = false",
        ),
    ),
    Reference(
        "bare-hash-number",
        re.compile(r"(?<![\w/.&-])#\d+\b"),
        (f"fixed in {_HASH}12", f"({_HASH}3)"),
        (
            "cloud-provider-gcp#533",
            "kubernetes/kubernetes#70099",
            "https://example.com/page#1",
            "&#39;",
            "# 1.7.0 bound it",
        ),
    ),
    Reference(
        "the-tracker-item",
        re.compile(rf"\bthe\s+{_ISSUE}\b", re.IGNORECASE),
        (f"as the {_ISSUE} asks", f"The {_ISSUE}'s rule", f"as the\n{_ISSUE} counts it"),
        (f"the {_ISSUE}r name", f"an {_ISSUE} upstream", f"{_ISSUE}_client_certificate"),
    ),
    Reference(
        "reference-notes",
        re.compile(r"\breference" + r"\.md\b", re.IGNORECASE),
        ("see reference" + ".md", "REFERENCE" + ".md, section 3"),
        ("the reference docs", "api-reference.html"),
    ),
    Reference(
        "outside-the-repository",
        re.compile(r"\.\./" + "shared|(?<![\\w.])/" + r"work/", re.IGNORECASE),
        ("../" + "shared/notes", "in /" + "work/main/README", "(/" + "work/x)"),
        ("../README.md", "docs/architecture.md", "lbhc/work/x", "homework/"),
    ),
]


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@pytest.mark.parametrize("ref", INTERNAL_REFERENCES, ids=lambda r: r.id)
def test_reference_patterns_flag_what_they_should(ref: Reference) -> None:
    for text in ref.bad:
        assert ref.pattern.search(text), f"{ref.id} misses {text!r}"
    for text in ref.good:
        assert not ref.pattern.search(text), f"{ref.id} flags legitimate {text!r}"


@pytest.mark.parametrize("ref", INTERNAL_REFERENCES, ids=lambda r: r.id)
def test_no_internal_references(ref: Reference) -> None:
    hits = []
    for path in [*DOCS, *SOURCES]:
        text = path.read_text()
        for match in ref.pattern.finditer(text):
            where = f"{path.relative_to(ROOT)}:{line_of(text, match.start())}"
            hits.append(f"{where}: {match.group(0)!r}")
    assert not hits, "cite a public source instead:\n" + "\n".join(hits)


# --- relative links ---------------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def without_code_blocks(markdown: str) -> str:
    """Fenced code blanked, line numbers kept: a `# comment` there is no heading."""
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), markdown)


def prose(markdown: str) -> str:
    """The text links can live in: code blocks and code spans blanked."""
    return _INLINE_CODE.sub("", without_code_blocks(markdown))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: rendered text, lower case, punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(without_code_blocks(markdown)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(doc: Path, root: Path) -> list[str]:
    """Every relative link of `doc` whose file, or whose anchor in a Markdown file, is
    missing; links must stay inside `root`."""
    text = doc.read_text()
    body = prose(text)
    broken = []
    for match in _LINK.finditer(body):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # http:, https:, mailto:
        path_part, _, anchor = target.partition("#")
        resolved = (doc.parent / path_part).resolve() if path_part else doc
        where = f"{doc.relative_to(root)}:{line_of(body, match.start())}: {target}"
        if not resolved.is_relative_to(root) or not resolved.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
            broken.append(f"{where} (no such heading)")
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    assert not broken_links(doc, ROOT)


@dataclass(frozen=True)
class LinkCase:
    id: str
    markdown: str
    broken: int


LINK_CASES = [
    LinkCase("file exists", "[a](other.md) ![i](other.md)", 0),
    LinkCase("heading exists", "[a](other.md#the-drain-bound-6-s) [b](#top)", 0),
    LinkCase("external and code are not checked", "[x](https://e.x/y) `[c](nope.md)`", 0),
    LinkCase("fenced code is not checked", "```text\n[c](nope.md)\n```\n", 0),
    LinkCase("missing file", "[a](nope.md)", 1),
    LinkCase("missing heading", "[a](other.md#nope) [b](#nope)", 2),
    LinkCase("outside the repository", "[a](../../etc/hosts)", 1),
]


@pytest.mark.parametrize("case", LINK_CASES, ids=lambda c: c.id)
def test_link_checker(case: LinkCase, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## The drain bound (`6 s`)\n")
    doc = tmp_path / "docs" / "doc.md"
    doc.write_text(f"# Top\n\n{case.markdown}\n")
    assert len(broken_links(doc, tmp_path)) == case.broken


# --- changelog --------------------------------------------------------------------------

_SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
_RELEASE = re.compile(r"^\[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})$")


def changelog_problems(text: str, version: str) -> list[str]:
    """What keeps `text` from being a Keep a Changelog 1.1.0 file whose newest release is
    `version`."""
    problems = []
    if not text.startswith("# Changelog\n"):
        problems.append("the first line is not '# Changelog'")
    releases = re.findall(r"^## (.*)$", text, re.MULTILINE)
    if not releases or releases[0] != "[Unreleased]":
        problems.append("the first version heading is not '## [Unreleased]'")
    seen: list[tuple[tuple[int, int, int], date]] = []
    for heading in releases[1:] if releases[:1] == ["[Unreleased]"] else releases:
        match = _RELEASE.match(heading)
        if not match:
            problems.append(f"'## {heading}' is not '## [X.Y.Z] - YYYY-MM-DD'")
            continue
        number = (int(match[1]), int(match[2]), int(match[3]))
        try:
            day = date.fromisoformat(match[4])
        except ValueError:
            problems.append(f"'## {heading}': not a date")
            continue
        if seen and not (number < seen[-1][0] and day <= seen[-1][1]):
            problems.append(f"'## {heading}' is not older than the release above it")
        seen.append((number, day))
    if not seen:
        problems.append("no released version")
    elif ".".join(map(str, seen[0][0])) != version:
        problems.append(f"newest release {seen[0][0]} is not lbhc.__version__ {version}")
    for section in re.findall(r"^### (.*)$", text, re.MULTILINE):
        if section not in _SECTIONS:
            problems.append(f"'### {section}' is not one of {sorted(_SECTIONS)}")
    return problems


def test_changelog_follows_keep_a_changelog_and_the_version() -> None:
    assert changelog_problems((ROOT / "CHANGELOG.md").read_text(), lbhc.__version__) == []


GOOD_CHANGELOG = """# Changelog

## [Unreleased]

## [1.2.0] - 2026-12-01

### Added

## [1.1.0] - 2026-11-25

### Fixed
"""

CHANGELOG_CASES = [
    ("good", GOOD_CHANGELOG, "1.2.0", 0),
    ("version differs", GOOD_CHANGELOG, "1.3.0", 1),
    ("no Unreleased", GOOD_CHANGELOG.replace("## [Unreleased]\n", ""), "1.2.0", 1),
    ("no date", GOOD_CHANGELOG.replace("[1.2.0] - 2026-12-01", "[1.2.0]"), "1.1.0", 1),
    ("not a date", GOOD_CHANGELOG.replace("2026-12-01", "2026-13-01"), "1.1.0", 1),
    ("out of order", GOOD_CHANGELOG.replace("[1.1.0]", "[1.3.0]"), "1.2.0", 1),
    ("unknown section", GOOD_CHANGELOG.replace("### Fixed", "### Bugs"), "1.2.0", 1),
    ("title", GOOD_CHANGELOG.replace("# Changelog", "# History"), "1.2.0", 1),
]


@pytest.mark.parametrize(
    ("text", "version", "count"),
    [case[1:] for case in CHANGELOG_CASES],
    ids=[case[0] for case in CHANGELOG_CASES],
)
def test_changelog_checker(text: str, version: str, count: int) -> None:
    assert len(changelog_problems(text, version)) == count


# --- license ----------------------------------------------------------------------------


def test_license_is_apache_2_as_pyproject_declares() -> None:
    text = (ROOT / "LICENSE").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines[:3] == [
        "Apache License",
        "Version 2.0, January 2004",
        "http://www.apache.org/licenses/",
    ]
    assert "END OF TERMS AND CONDITIONS" in lines
    assert lines[-1] == "limitations under the License."
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"


# --- one uninstall order -----------------------------------------------------------------

# The steps, in the order every doc must give them: stop writing, take lbhc's hold off the
# Nodes while its RBAC exists, undo GCE, remove manifests.
UNINSTALL_STEPS = (
    ("scale to 0", re.compile(r"^kubectl .*\bscale\b.*--replicas=0\b")),
    ("release holds", re.compile(r"^lbhc release-holds\b")),
    ("teardown", re.compile(r"^lbhc teardown\b")),
    ("delete the manifests", re.compile(r"^kubectl delete -k\b")),
)


def uninstall_order(markdown: str, heading: str) -> list[str]:
    """The steps the command blocks of the section `heading` run, in order (a step given
    twice, as teardown's look-then-do, counts once)."""
    section = markdown.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```[a-z]*\n(.*?)```", section, re.DOTALL)
    order: list[str] = []
    for line in "\n".join(blocks).splitlines():
        step = next((name for name, pattern in UNINSTALL_STEPS if pattern.match(line)), None)
        if step and (not order or order[-1] != step):
            order.append(step)
    return order


def test_every_doc_gives_the_same_uninstall_order() -> None:
    want = [name for name, _ in UNINSTALL_STEPS]
    readme = (ROOT / "README.md").read_text()
    deploying = (ROOT / "docs" / "deploying.md").read_text()
    assert uninstall_order(readme, "## Uninstalling") == want
    assert uninstall_order(deploying, "## Uninstall") == want


def test_the_uninstall_order_check_sees_a_wrong_order() -> None:
    wrong = (
        "x\n## Uninstall\n\n```sh\nkubectl delete -k deploy/overlays/default\nlbhc teardown\n```\n"
    )
    assert uninstall_order(wrong, "## Uninstall") == ["delete the manifests", "teardown"]
