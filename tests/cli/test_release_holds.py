"""`lbhc release-holds` end to end: the real CLI against the Kubernetes fake over a real socket,
through a kubeconfig. It takes lbhc's delay-deletion annotation off every Node and touches
nothing else; a failure is one line naming the fix."""

from __future__ import annotations

import copy
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lbhc.cli import release_holds as command
from lbhc.cli.parser import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from lbhc.kube.client import KubeApi
from lbhc.model.cluster import DELAY_DELETION_PREFIX
from lbhc.planner.hold import HOLD_ANNOTATION, HOLD_VALUE
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import node, with_annotations, with_taint
from tests.cli.test_oneshot import run
from tests.hostile.conftest import free_port
from tests.kube_fixtures import write_kubeconfig

OTHER = DELAY_DELETION_PREFIX + "other-controller"  # another controller's hold: it stays
UNRELATED = "example.com/owner"


@pytest.fixture(autouse=True)
def no_lbhc_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.upper().startswith("LBHC_"):
            monkeypatch.delenv(var)


@dataclass
class Cluster:
    fake: KubeFake
    kubeconfig: Path
    url: str

    def annotations(self, name: str) -> dict[str, str]:
        obj = self.fake.get("Node", None, name)
        assert obj is not None, name
        return dict(obj["metadata"].get("annotations") or {})

    def nodes(self) -> dict[str, dict[str, Any]]:
        return {n["metadata"]["name"]: n for n in self.fake.objects("Node")}

    def patched(self) -> list[str]:
        return [e.path.rsplit("/", 1)[1] for e in self.fake.journal if e.method == "PATCH"]

    def argv(self, *extra: str) -> list[str]:
        return ["release-holds", "--kubeconfig", str(self.kubeconfig), *extra]


def serve(tmp_path: Path, *nodes: dict[str, Any]) -> Iterator[Cluster]:
    fake = KubeFake()
    for obj in nodes:
        fake.upsert(obj)
    with KubeFakeServer(fake) as server:
        yield Cluster(fake, write_kubeconfig(tmp_path, server.url), server.url)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Two nodes lbhc holds (one also held by another controller, one with another
    annotation and a taint), one only another controller holds, one held by nobody."""
    yield from serve(
        tmp_path,
        node(
            "held-1",
            with_annotations({HOLD_ANNOTATION: HOLD_VALUE, UNRELATED: "team-a"}),
            with_taint("example.com/dedicated", "NoSchedule", "gpu"),
        ),
        node("held-2", with_annotations({HOLD_ANNOTATION: HOLD_VALUE, OTHER: "waiting"})),
        node("other-1", with_annotations({OTHER: "waiting"})),
        node("plain-1"),
    )


def without_hold(obj: dict[str, Any]) -> dict[str, Any]:
    """The Node as it must be after release-holds: lbhc's annotation gone, the rest equal
    (the resourceVersion moves with any write)."""
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("resourceVersion", None)
    annotations = obj["metadata"].get("annotations") or {}
    annotations.pop(HOLD_ANNOTATION, None)
    if not annotations:
        obj["metadata"].pop("annotations", None)
    return obj


OTHERS_LINE = (
    f"2 still carry other delay-deletion annotations (not lbhc's): held-2 ({OTHER}), "
    f"other-1 ({OTHER})."
)


def test_it_removes_lbhcs_annotation_from_every_node_and_nothing_else(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    before = cluster.nodes()
    code, out, err = run(capsys, *cluster.argv())
    assert code == EXIT_OK, err
    assert err == ""
    assert out.splitlines() == [f"Removed lbhc's hold from 2 node(s); {OTHERS_LINE}"]
    assert cluster.patched() == ["held-1", "held-2"]  # only the nodes that carried it
    after = cluster.nodes()
    assert {name: without_hold(obj) for name, obj in after.items()} == {
        name: without_hold(obj) for name, obj in before.items()
    }
    assert cluster.annotations("held-1") == {UNRELATED: "team-a"}
    assert cluster.annotations("held-2") == {OTHER: "waiting"}
    assert cluster.annotations("other-1") == {OTHER: "waiting"}
    assert after["held-1"]["spec"]["taints"] == before["held-1"]["spec"]["taints"]


def test_dry_run_lists_the_nodes_and_removes_nothing(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    before = cluster.nodes()
    code, out, err = run(capsys, *cluster.argv("--dry-run"))
    assert code == EXIT_OK, err
    assert out.splitlines() == [
        f"Would remove {HOLD_ANNOTATION} from:",
        "  held-1",
        "  held-2",
        f"Would remove lbhc's hold from 2 node(s); {OTHERS_LINE} Nothing was changed (--dry-run).",
    ]
    assert cluster.patched() == []
    assert cluster.nodes() == before


def test_json_output(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *cluster.argv("--output", "json"))
    assert code == EXIT_OK, err
    assert json.loads(out) == {
        "annotation": HOLD_ANNOTATION,
        "dryRun": False,
        "held": ["held-1", "held-2"],
        "released": ["held-1", "held-2"],
        "gone": [],
        "otherHolds": [
            {"node": "held-2", "annotations": [OTHER]},
            {"node": "other-1", "annotations": [OTHER]},
        ],
        "unread": [],
        "message": f"Removed lbhc's hold from 2 node(s); {OTHERS_LINE}",
    }
    code, out, _ = run(capsys, *cluster.argv("--output", "json", "--dry-run"))
    body = json.loads(out)
    assert code == EXIT_OK and body["dryRun"] is True
    assert body["held"] == [] and body["released"] == []


def test_a_second_run_has_nothing_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for cluster in serve(tmp_path, node("held-1", with_annotations({HOLD_ANNOTATION: "x"}))):
        assert run(capsys, *cluster.argv())[0] == EXIT_OK
        patches = cluster.patched()
        code, out, err = run(capsys, *cluster.argv())
        assert (code, out, err) == (EXIT_OK, "No node carries lbhc's hold.\n", "")
        assert cluster.patched() == patches  # not one more write


def test_a_node_deleted_meanwhile_is_no_failure(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.fake.faults.fail_requests(status=404, path_contains="/api/v1/nodes/held-1")
    code, out, err = run(capsys, *cluster.argv())
    assert code == EXIT_OK, err
    assert out.startswith("Removed lbhc's hold from 1 node(s) (1 more deleted meanwhile); ")
    assert HOLD_ANNOTATION not in cluster.annotations("held-2")


def test_uninstall_leaves_no_annotation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many nodes over several list pages: every one that carried lbhc's hold carries it no
    more, and the long run said how far along it was on stderr."""
    monkeypatch.setattr(command, "PROGRESS_EVERY_NODES", 100)
    nodes = [
        node(f"node-{i:03}", with_annotations({HOLD_ANNOTATION: HOLD_VALUE} if i % 5 else {}))
        for i in range(300)
    ]
    for cluster in serve(tmp_path, *nodes):
        cluster.fake.faults.limit_page_size(70)
        code, out, err = run(capsys, *cluster.argv())
        assert code == EXIT_OK, err
        assert out == "Removed lbhc's hold from 240 node(s).\n"
        progress = err.splitlines()
        assert [line.split(",")[0] for line in progress] == [
            "lbhc: released 100 of 240 node(s)",
            "lbhc: released 200 of 240 node(s)",
        ]
        assert not [n for n in cluster.fake.objects("Node") if HOLD_ANNOTATION in str(n)]


def test_an_unreachable_api_server_is_one_line_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    kubeconfig = write_kubeconfig(tmp_path, url)
    code, out, err = run(capsys, "release-holds", "--kubeconfig", str(kubeconfig))
    assert (code, out) == (EXIT_ERROR, "")
    [line] = err.splitlines()
    assert line.startswith(
        f"lbhc: error: cannot list nodes from the Kubernetes API server at {url}"
    )
    assert "connection refused" in line and "check that the cluster is up" in line


def test_a_403_on_the_patch_names_lbhcs_rbac(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.fake.faults.fail_requests(times=5, status=403, path_contains="/api/v1/nodes/held-")
    code, out, err = run(capsys, *cluster.argv())
    assert (code, out) == (EXIT_ERROR, "")
    [line] = err.splitlines()
    for fragment in (
        f"lbhc: error: cannot remove {HOLD_ANNOTATION} from Node held-1 at the Kubernetes API "
        f"server at {cluster.url}",
        "HTTP 403 Forbidden",
        "lbhc's RBAC for patching nodes (ClusterRole lbhc-hold-deletion, from "
        "deploy/components/hold-deletion) is gone or missing",
        "run `lbhc release-holds` before `kubectl delete -k`, or with an admin kubeconfig",
        "(0 of the 2 node(s) that carried lbhc's hold are done; running it again is safe)",
    ):
        assert fragment in line, line
    assert HOLD_ANNOTATION in cluster.annotations("held-1")


def test_a_403_on_the_list_names_lbhcs_rbac_too(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.fake.faults.fail_requests(times=5, status=403, path_contains="/api/v1/nodes")
    code, out, err = run(capsys, *cluster.argv())
    assert (code, out) == (EXIT_ERROR, "")
    [line] = err.splitlines()
    assert "cannot list nodes" in line and "HTTP 403 Forbidden" in line
    assert "lbhc's RBAC for listing nodes" in line and "admin kubeconfig" in line


def test_a_failure_midway_says_how_far_it_got(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.fake.faults.fail_requests(status=503, path_contains="/api/v1/nodes/held-2")
    code, out, err = run(capsys, *cluster.argv())
    assert (code, out) == (EXIT_ERROR, "")
    [line] = err.splitlines()
    assert "from Node held-2" in line and "HTTP 503" in line
    assert line.endswith(
        "(1 of the 2 node(s) that carried lbhc's hold are done; running it again is safe)"
    )
    assert HOLD_ANNOTATION not in cluster.annotations("held-1")
    # Run again, it finishes.
    assert run(capsys, *cluster.argv())[:2] == (
        EXIT_OK,
        f"Removed lbhc's hold from 1 node(s); {OTHERS_LINE}\n",
    )


def test_ctrl_c_says_how_far_it_got_and_exits_130(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = KubeApi.patch_node_annotation
    calls: list[str] = []

    def interrupted_on_the_second(self: KubeApi, name: str, key: str, value: str | None) -> Any:
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return patch(self, name, key, value)

    monkeypatch.setattr(KubeApi, "patch_node_annotation", interrupted_on_the_second)
    code, out, err = run(capsys, *cluster.argv())
    assert (code, out) == (EXIT_INTERRUPTED, "")
    assert err.splitlines() == [
        "lbhc: error: interrupted: 1 of the 2 node(s) that carried lbhc's hold are done; "
        "run it again to finish (safe to repeat)"
    ]


def test_a_node_that_does_not_decode_is_named_with_the_fix(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = node("broken", with_annotations({HOLD_ANNOTATION: HOLD_VALUE}))
    broken["spec"]["taints"] = [{"effect": "NoSchedule"}]  # no key: no API server sends this
    cluster.fake.upsert(broken)
    code, out, err = run(capsys, *cluster.argv())
    assert code == EXIT_ERROR
    assert out.startswith("Removed lbhc's hold from 2 node(s); ")  # the others are done
    [line] = err.splitlines()
    assert "1 Node(s) could not be decoded, so lbhc cannot tell whether they carry" in line
    assert "left them as they are (broken: spec.taints" in line
    assert line.endswith(f"`kubectl annotate node broken {HOLD_ANNOTATION}-`")


def test_settings_come_from_the_file_and_gce_settings_are_not_needed(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The --config `lbhc run` reads (GCE settings in it) serves here too; none is needed."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "gce: {project: my-proj, region: us-central1, node_tags: [gke-node]}\n"
        f"kube: {{kubeconfig: {cluster.kubeconfig}, request_timeout_sec: 5}}\n"
    )
    code, out, err = run(capsys, "release-holds", "--config", str(config))
    assert code == EXIT_OK, err
    assert out.startswith("Removed lbhc's hold from 2 node(s)")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--context", "prod"], "has no context 'prod' (it has: fake): pass --context"),
        (["--project", "p"], "unrecognized arguments: --project p"),
        (["--output", "yaml"], "invalid choice: 'yaml'"),
    ],
    ids=["no-such-context", "a-gce-flag", "bad-output"],
)
def test_usage_and_kubeconfig_errors_exit_2_in_one_line(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = run(capsys, *cluster.argv(*argv))
    assert (code, out) == (EXIT_USAGE, "")
    [line] = err.splitlines()
    assert line.startswith("lbhc: error: ") and says in line, line
    assert cluster.patched() == []


def test_a_credential_in_the_kubeconfig_is_never_printed(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "s3cr3t-kube-token-0123456789"
    text = cluster.kubeconfig.read_text().replace('"user": {}', f'"user": {{"token": "{token}"}}')
    cluster.kubeconfig.write_text(text)
    cluster.fake.faults.fail_requests(times=5, status=403, path_contains="/api/v1/nodes/")
    code, out, err = run(capsys, *cluster.argv())
    assert code == EXIT_ERROR and "HTTP 403" in err
    assert token not in out + err


def test_progress_is_a_line_every_few_seconds_too() -> None:
    """Slow patches (a throttled API server) still say how far along they are."""
    now = [0.0]
    err = io.StringIO()
    progress = command._Progress(10, err, clock=lambda: now[0])
    for _ in range(10):
        now[0] += 2.0
        progress.advance()
    assert [line.split(",")[0] for line in err.getvalue().splitlines()] == [
        "lbhc: released 3 of 10 node(s)",
        "lbhc: released 6 of 10 node(s)",
        "lbhc: released 9 of 10 node(s)",
    ]
    assert err.getvalue().splitlines()[0] == "lbhc: released 3 of 10 node(s), 0.5/s, ~14 s left"
