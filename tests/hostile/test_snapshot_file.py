"""`lbhc plan --cluster-snapshot FILE` with files that are not what `kubectl get ... -o json`
prints: each is one line on stderr naming the file and what is wrong, exit code 1, and no
request to GCE. Dumps that are odd but genuine (YAML, a byte-order mark, a single object)
plan like their plain JSON form."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lbhc.cli.parser import EXIT_OK, EXIT_USAGE
from tests.builders import PROJECT, REGION
from tests.builders.kube import KUBE_SYSTEM_UID, namespace, node, service
from tests.hostile.cli import run_cli
from tests.hostile.conftest import Fakes

DUMP: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [namespace("kube-system", KUBE_SYSTEM_UID), node("n-1"), service("web")],
}
DUMP_TEXT = json.dumps(DUMP, indent=2)


def plan_args(fakes: Fakes, path: Path) -> list[str]:
    return [
        "plan",
        "--output=json",
        f"--cluster-snapshot={path}",
        f"--project={PROJECT}",
        f"--region={REGION}",
        "--node-tags=gke-node",
        f"--gce-endpoint={fakes.compute_url}",
    ]


def config_maps() -> str:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}}
    return json.dumps({"kind": "List", "items": [cm, cm]})


def with_label(key: str, value: object) -> str:
    bad = node("n-1")
    bad["metadata"]["labels"] = {key: value}
    return json.dumps({"kind": "List", "items": [bad]})


BAD_FILES: list[tuple[str, str | bytes, str]] = [
    ("truncated", DUMP_TEXT[: len(DUMP_TEXT) // 2], "not valid JSON (line"),
    ("not-json", "hello: [world", "neither JSON nor YAML (line 1, column 14"),
    ("plain-text", "just some words", "top level is not an object"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\x00\xff", "not UTF-8 text (byte 0)"),
    ("empty", "", "file is empty"),
    ("blank", " \n\t\n", "file is empty"),
    ("a-json-array", json.dumps(DUMP["items"]), "top level is not an object"),
    ("wrong-kind", json.dumps({"kind": "ConfigMap", "metadata": {"name": "x"}}), "'ConfigMap'"),
    ("list-of-configmaps", config_maps(), "holds 2 item(s) but no Node, Service"),
    ("items-not-a-list", json.dumps({"kind": "List", "items": {"a": 1}}), "not a list"),
    ("item-not-an-object", json.dumps({"kind": "List", "items": ["node"]}), "not an object"),
    (
        "invalid-item",
        json.dumps({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": 5}}]}),
        "item 0 (Node '5'): metadata.name: Input should be a valid string",
    ),
    ("label-key-with-newline", with_label("a\nb", 7), r"metadata.labels.'a\nb'"),
    ("huge-label-key", with_label("k" * 10_000, 7), "metadata.labels.'kkkk"),
    (
        "yaml-two-documents",
        f"{yaml.safe_dump(DUMP)}---\n{yaml.safe_dump(DUMP)}",
        "another document",
    ),
    ("deeply-nested", '{"kind": "List", "items": ' + "[" * 100_000, "nested too deeply"),
]


@pytest.mark.parametrize(
    ("content", "says"), [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES]
)
def test_a_bad_snapshot_file_is_one_line_and_no_request(
    content: str | bytes,
    says: str,
    clean_fakes: Fakes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "dump.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    result = run_cli(capsys, plan_args(clean_fakes, path))
    assert result.code == EXIT_USAGE, result  # the fix is another file
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    assert result.err.startswith(f"lbhc: error: cluster snapshot {path}: "), result.err
    assert says in result.err
    assert clean_fakes.contacted() == []


@pytest.mark.parametrize(
    ("make", "says"),
    [(lambda d: d / "missing.json", "No such file"), (lambda d: d, "Is a directory")],
    ids=["missing", "a-directory"],
)
def test_an_unreadable_snapshot_path_is_one_line(
    make: Callable[[Path], Path],
    says: str,
    clean_fakes: Fakes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = make(tmp_path)
    result = run_cli(capsys, plan_args(clean_fakes, path))
    assert result.code == EXIT_USAGE and len(result.err_lines) == 1, result
    assert f"cluster snapshot {path}: cannot read: {says}" in result.err
    assert clean_fakes.contacted() == []


GENUINE: list[tuple[str, str]] = [
    ("yaml", yaml.safe_dump(DUMP)),
    ("byte-order-mark", "\ufeff" + DUMP_TEXT),
]


@pytest.mark.parametrize("content", [c[1] for c in GENUINE], ids=[c[0] for c in GENUINE])
def test_an_odd_but_genuine_dump_plans_like_plain_json(
    content: str, clean_fakes: Fakes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, odd = tmp_path / "plain.json", tmp_path / "odd.json"
    plain.write_text(DUMP_TEXT, encoding="utf-8")
    odd.write_text(content, encoding="utf-8")
    expected = run_cli(capsys, plan_args(clean_fakes, plain))
    got = run_cli(capsys, [*plan_args(clean_fakes, odd), "--cluster-id", "3b637a5d"])
    assert expected.code == EXIT_OK and got.code == EXIT_OK, (expected, got)
    assert json.loads(got.out)["changes"] == json.loads(expected.out)["changes"]


PARTIAL: list[tuple[str, str, str]] = [
    ("typed-node-list", json.dumps({"kind": "NodeList", "items": [node("n-1")]}), "no Service"),
    ("one-node", json.dumps(node("n-1")), "no Service"),
    (
        "services-only",
        json.dumps({"kind": "ServiceList", "items": [service("web")]}),
        "no Node in it (found 1 Service)",
    ),
    (
        "namespaces-only",
        json.dumps({"kind": "List", "items": [namespace("kube-system")]}),
        "no Node and no Service",
    ),
]


@pytest.mark.parametrize(("content", "says"), [c[1:] for c in PARTIAL], ids=[c[0] for c in PARTIAL])
def test_a_dump_without_nodes_or_services_is_one_line_naming_the_kind(
    content: str,
    says: str,
    clean_fakes: Fakes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without Nodes lbhc knows nothing of their kube-proxy and would attach everywhere;
    without Services every pool looks like another cluster's. Never a plan from either."""
    path = tmp_path / "partial.json"
    path.write_text(content, encoding="utf-8")
    result = run_cli(capsys, [*plan_args(clean_fakes, path), "--cluster-id", "3b637a5d"])
    assert result.code == EXIT_USAGE and result.out == "", result
    [line] = result.err_lines
    assert says in line and "kubectl get nodes,services" in line, line
    assert clean_fakes.contacted() == []
