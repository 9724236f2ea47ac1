"""PATCH: JSON merge patch, strategic merge patch and JSON patch, over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import node, service
from tests.kube_fixtures import raw
from tests.sandbox.kube_fake.support import request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
NODE = "/api/v1/nodes/n1"
SVC = "/api/v1/namespaces/default/services/web"


def seeded_node(fake: KubeFake) -> dict[str, Any]:
    obj = node("n1", labels={"a": "1", "b": "2"}, taints=(("old", "x", "NoSchedule"),))
    obj["metadata"]["annotations"] = {"note": "keep"}
    obj["metadata"]["finalizers"] = ["f1"]
    return fake.upsert(obj)


def patched(server: KubeFakeServer, path: str, content_type: str, patch: Any) -> Any:
    status, body = request(server, "PATCH", path, patch, content_type)
    assert status == 200, body
    return body


@pytest.mark.parametrize(
    ("patch", "field", "expected"),
    [
        ({"metadata": {"labels": {"c": "3"}}}, "labels", {"a": "1", "b": "2", "c": "3"}),
        ({"metadata": {"labels": {"a": None}}}, "labels", {"b": "2"}),  # null deletes
        ({"metadata": {"labels": None}}, "labels", None),
        ({"metadata": {"finalizers": ["f2"]}}, "finalizers", ["f2"]),  # lists are replaced
        (
            {"spec": {"taints": [{"key": "t", "effect": "NoExecute"}]}},
            "taints",
            [{"key": "t", "effect": "NoExecute"}],
        ),
        ({"spec": {"taints": None}}, "taints", None),
    ],
)
def test_merge_patch(
    kube_fake: KubeFake, kube_server: KubeFakeServer, patch: Any, field: str, expected: Any
) -> None:
    seeded_node(kube_fake)
    body = patched(kube_server, NODE, MERGE, patch)
    where = body["spec"] if field == "taints" else body["metadata"]
    assert where.get(field) == expected
    assert body["metadata"]["annotations"] == {"note": "keep"}  # untouched


TAINT = {"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("patch", "path", "expected"),
    [
        # What kubectl taint sends: the whole list. Node taints are atomic (no merge key).
        (
            {"spec": {"taints": [{"key": "old", "value": "x", "effect": "NoSchedule"}, TAINT]}},
            ("spec", "taints"),
            [{"key": "old", "value": "x", "effect": "NoSchedule"}, TAINT],
        ),
        ({"spec": {"taints": [TAINT]}}, ("spec", "taints"), [TAINT]),
        ({"spec": {"taints": None}}, ("spec", "taints"), None),
        (
            {"metadata": {"labels": {"a": None, "c": "3"}}},
            ("metadata", "labels"),
            {"b": "2", "c": "3"},
        ),
        (
            {"metadata": {"annotations": {"lbhc.dev/ignore": "true"}}},
            ("metadata", "annotations"),
            {"note": "keep", "lbhc.dev/ignore": "true"},
        ),
        # metadata.finalizers has patchStrategy merge: a set of strings.
        ({"metadata": {"finalizers": ["f2"]}}, ("metadata", "finalizers"), ["f1", "f2"]),
        (
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}},
            ("metadata", "finalizers"),
            [],
        ),
        (
            {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            ("status", "conditions"),
            [{"type": "Ready", "status": "False"}],
        ),
        (
            {"status": {"conditions": [{"type": "Disk", "status": "False"}]}},
            ("status", "conditions"),
            [{"type": "Ready", "status": "True"}, {"type": "Disk", "status": "False"}],
        ),
        (
            {"metadata": {"labels": {"$patch": "replace", "z": "9"}}},
            ("metadata", "labels"),
            {"z": "9"},
        ),
        ({"metadata": {"annotations": {"$patch": "delete"}}}, ("metadata", "annotations"), None),
        ({"spec": {"$retainKeys": ["taints"], "providerID": "x"}}, ("spec", "providerID"), None),
    ],
)
def test_strategic_merge_patch_on_a_node(
    kube_fake: KubeFake,
    kube_server: KubeFakeServer,
    patch: Any,
    path: tuple[str, str],
    expected: Any,
) -> None:
    seeded_node(kube_fake)
    # The Node's status is a subresource; patch it there to see status merges.
    url = f"{NODE}/status" if path[0] == "status" else NODE
    body = patched(kube_server, url, STRATEGIC, patch)
    assert body[path[0]].get(path[1]) == expected


def test_strategic_merge_patch_merges_service_ports_by_port(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    kube_fake.upsert(service("web"))  # one port: 80
    https = {"port": 443, "targetPort": 8443, "protocol": "TCP"}

    added = patched(kube_server, SVC, STRATEGIC, {"spec": {"ports": [https]}})
    reordered = patched(
        kube_server,
        SVC,
        STRATEGIC,
        {
            "spec": {
                "$setElementOrder/ports": [{"port": 443}, {"port": 80}],
                "ports": [{"port": 80, "name": "http"}],
            }
        },
    )
    removed = patched(
        kube_server, SVC, STRATEGIC, {"spec": {"ports": [{"port": 80, "$patch": "delete"}]}}
    )

    assert [p["port"] for p in added["spec"]["ports"]] == [80, 443]
    assert [(p["port"], p.get("name")) for p in reordered["spec"]["ports"]] == [
        (443, None),
        (80, "http"),
    ]
    assert reordered["spec"]["ports"][1]["nodePort"] == 30080  # merged, not replaced
    assert removed["spec"]["ports"] == [https]


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        ({"metadata": {"$unknown": 1}}, 400, "unsupported strategic merge patch directive"),
        ({"metadata": {"$patch": "sideways"}}, 400, "Unknown patch type"),
        ({"spec": {"ports": [{"name": "no-port"}]}}, 400, "does not contain declared merge key"),
        ({"metadata": {"name": "renamed"}}, 400, "cannot change"),
    ],
)
def test_strategic_merge_patch_errors(
    kube_fake: KubeFake, kube_server: KubeFakeServer, patch: Any, code: int, message: str
) -> None:
    kube_fake.upsert(service("web"))
    status, body = request(kube_server, "PATCH", SVC, patch, STRATEGIC)
    assert (status, body["kind"]) == (code, "Status")
    assert message in body["message"]


@pytest.mark.parametrize(
    ("ops", "code", "check"),
    [
        (
            [{"op": "add", "path": "/metadata/labels/c", "value": "3"}],
            200,
            ("labels", {"a": "1", "b": "2", "c": "3"}),
        ),
        ([{"op": "remove", "path": "/metadata/labels/a"}], 200, ("labels", {"b": "2"})),
        (
            [{"op": "replace", "path": "/metadata/labels", "value": {"x": "y"}}],
            200,
            ("labels", {"x": "y"}),
        ),
        (
            [{"op": "add", "path": "/metadata/finalizers/-", "value": "f2"}],
            200,
            ("finalizers", ["f1", "f2"]),
        ),
        (
            [{"op": "add", "path": "/metadata/finalizers/0", "value": "f0"}],
            200,
            ("finalizers", ["f0", "f1"]),
        ),
        (
            [
                {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
                {"op": "move", "from": "/metadata/labels/b", "path": "/metadata/labels/d"},
            ],
            200,
            ("labels", {"a": "1", "c": "1", "d": "2"}),
        ),
        (
            [{"op": "add", "path": "/metadata/annotations/lbhc.dev~1ignore", "value": "true"}],
            200,
            ("annotations", {"note": "keep", "lbhc.dev/ignore": "true"}),
        ),
        (
            [
                {"op": "test", "path": "/metadata/labels/a", "value": "1"},
                {"op": "remove", "path": "/metadata/labels/a"},
            ],
            200,
            ("labels", {"b": "2"}),
        ),
        (
            [
                {"op": "test", "path": "/metadata/labels/a", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
            ],
            422,
            "test failed",
        ),
        ([{"op": "remove", "path": "/metadata/labels/zzz"}], 422, "missing path"),
        ([{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}], 422, "test failed"),
        ([{"op": "jump", "path": "/x"}], 400, "Unexpected kind"),
        ([{"op": "add", "path": "/metadata/labels/x"}], 400, "missing value"),
        ({"metadata": {"labels": {}}}, 400, "list of operations"),
    ],
)
def test_json_patch(
    kube_fake: KubeFake, kube_server: KubeFakeServer, ops: Any, code: int, check: Any
) -> None:
    seeded_node(kube_fake)
    status, body = request(kube_server, "PATCH", NODE, ops, JSON_PATCH)
    assert status == code
    if code == 200:
        field, expected = check
        assert body["metadata"].get(field) == expected
    else:
        assert check in body["message"]


def test_stale_resource_version_in_a_patch_is_409(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    stored = seeded_node(kube_fake)
    rv = stored["metadata"]["resourceVersion"]
    fresh = {"metadata": {"resourceVersion": rv, "labels": {"c": "3"}}}

    first = request(kube_server, "PATCH", NODE, fresh, MERGE)
    second = request(kube_server, "PATCH", NODE, fresh, STRATEGIC)

    assert first[0] == 200
    assert (second[0], second[1]["reason"]) == (409, "Conflict")


@pytest.mark.parametrize("content_type", ["application/apply-patch+yaml", "application/json"])
def test_unsupported_patch_types_are_415(
    kube_fake: KubeFake, kube_server: KubeFakeServer, content_type: str
) -> None:
    seeded_node(kube_fake)
    status, body = request(kube_server, "PATCH", NODE, {"metadata": {}}, content_type)
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
    assert MERGE in body["message"] and STRATEGIC in body["message"]


def test_the_clients_default_patch_types(kube_fake: KubeFake, core: Any) -> None:
    # kubernetes 37.x sends a dict as a strategic merge patch and a list as a JSON patch;
    # finalizers tell the two merges apart (strategic: a set; JSON merge patch: replaced).
    seeded_node(kube_fake)
    finalizers = {"metadata": {"finalizers": ["f2"]}}

    strategic = raw(core.patch_node("n1", finalizers, _preload_content=False))
    merge = raw(core.patch_node("n1", finalizers, _content_type=MERGE, _preload_content=False))
    ops = [{"op": "add", "path": "/metadata/labels/c", "value": "3"}]
    json_patched = raw(core.patch_node("n1", ops, _preload_content=False))

    assert strategic["metadata"]["finalizers"] == ["f1", "f2"]
    assert merge["metadata"]["finalizers"] == ["f2"]
    assert json_patched["metadata"]["labels"]["c"] == "3"
