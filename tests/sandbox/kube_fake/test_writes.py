"""Writes with the API's conventions: create, update with optimistic concurrency, delete with
finalizers, validation, dry runs, and the fake's helpers going through the same code."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import node, service
from tests.kube_fixtures import raw, status_body
from tests.sandbox.kube_fake.support import request

SVC = "/api/v1/namespaces/default/services"
MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


# -- create -------------------------------------------------------------------------------------


def test_create_sets_server_fields_and_the_namespace_from_the_path(
    kube_fake: KubeFake, core: Any
) -> None:
    body = service("web", namespace="")
    body["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}  # not the client's to set
    before = int(kube_fake.resource_version)

    created = raw(core.create_namespaced_service("default", body, _preload_content=False))

    meta = created["metadata"]
    assert (meta["namespace"], meta["resourceVersion"]) == ("default", str(before + 1))
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert created["status"] == {"loadBalancer": {}}
    assert kube_fake.get("Service", "default", "web") == created


def test_create_twice_is_409_already_exists(kube_server: KubeFakeServer) -> None:
    assert request(kube_server, "POST", SVC, service("web"))[0] == 201

    status, body = request(kube_server, "POST", SVC, service("web"))

    assert (status, body["reason"], body["message"]) == (
        409,
        "AlreadyExists",
        'services "web" already exists',
    )
    assert body["details"] == {"name": "web", "kind": "services"}


def test_generate_name(kube_server: KubeFakeServer) -> None:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"generateName": "web-"}}

    names = {request(kube_server, "POST", SVC, body)[1]["metadata"]["name"] for _ in range(3)}

    assert len(names) == 3 and all(n.startswith("web-") and len(n) == 9 for n in names)


@pytest.mark.parametrize(
    ("path", "name", "field_message"),
    [
        (SVC, "", "metadata.name: Required value: name or generateName is required"),
        (SVC, "Web_1", 'metadata.name: Invalid value: "Web_1": a DNS-1035 label must consist'),
        (SVC, "1web", 'metadata.name: Invalid value: "1web": a DNS-1035 label'),
        ("/api/v1/nodes", "node_1", 'Invalid value: "node_1": a lowercase RFC 1123 subdomain'),
        ("/api/v1/nodes", "n" * 254, "must be no more than 253 characters"),
        ("/api/v1/namespaces", "a.b", 'Invalid value: "a.b": a lowercase RFC 1123 label'),
    ],
)
def test_invalid_names_are_422_with_causes(
    kube_server: KubeFakeServer, path: str, name: str, field_message: str
) -> None:
    kind = {"services": "Service", "nodes": "Node", "namespaces": "Namespace"}[path.split("/")[-1]]

    status, body = request(kube_server, "POST", path, {"metadata": {"name": name}})

    assert (status, body["reason"], body["code"]) == (422, "Invalid", 422)
    assert body["message"].startswith(f'{kind} "{name}" is invalid: ')
    assert field_message in body["message"]
    assert body["details"]["kind"] == kind
    assert {c["field"] for c in body["details"]["causes"]} == {"metadata.name"}


@pytest.mark.parametrize(
    ("body", "content_type", "code", "message"),
    [
        ({"apiVersion": "apps/v1", "kind": "Service"}, "application/json", 400, "API version"),
        ({"apiVersion": "v1", "kind": "Pod"}, "application/json", 400, "kind in the data"),
        (
            {"metadata": {"name": "web", "namespace": "other"}},
            "application/json",
            400,
            "does not match the namespace sent on the request",
        ),
        ({"metadata": {"name": "web"}}, "application/yaml", 415, "unknown format"),
        ([1, 2], "application/json", 400, "json parse error"),
    ],
)
def test_undecodable_requests(
    kube_server: KubeFakeServer, body: Any, content_type: str, code: int, message: str
) -> None:
    status, answer = request(kube_server, "POST", SVC, body, content_type)
    assert (status, answer["kind"]) == (code, "Status")
    assert message in answer["message"]


def test_dry_run_validates_without_storing(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    before = kube_fake.resource_version

    ok = request(kube_server, "POST", f"{SVC}?dryRun=All", service("web"))
    bad = request(kube_server, "POST", f"{SVC}?dryRun=Yes", service("web"))

    assert ok[0] == 201 and ok[1]["metadata"]["uid"]
    assert bad[0] == 400
    assert kube_fake.get("Service", "default", "web") is None
    assert kube_fake.resource_version == before


# -- update -------------------------------------------------------------------------------------


def test_stale_update_is_409_conflict_and_a_fresh_one_wins(kube_fake: KubeFake, core: Any) -> None:
    stored = kube_fake.upsert(service("web"))
    first, second = (dict(stored, spec={**stored["spec"], "type": t}) for t in ("A", "B"))

    raw(core.replace_namespaced_service("web", "default", first, _preload_content=False))
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_service("web", "default", second, _preload_content=False)

    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (409, "Conflict")
    assert body["message"] == f'Operation cannot be fulfilled on services "web": {MODIFIED}'
    assert body["details"] == {"name": "web", "kind": "services"}
    assert kube_fake.get("Service", "default", "web")["spec"]["type"] == "A"  # type: ignore[index]


def test_update_without_resource_version_is_unconditional(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    stored = kube_fake.upsert(service("web"))
    kube_fake.patch("Service", "default", "web", {"metadata": {"labels": {"moved": "on"}}})
    del stored["metadata"]["resourceVersion"]
    stored["metadata"]["uid"] = "client-made-up-uid-is-a-precondition"
    assert request(kube_server, "PUT", f"{SVC}/web", stored)[0] == 409

    del stored["metadata"]["uid"]
    status, body = request(kube_server, "PUT", f"{SVC}/web", stored)

    assert status == 200 and body["metadata"]["labels"] == {}
    assert body["metadata"]["uid"] == kube_fake.get("Service", "default", "web")["metadata"]["uid"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("path", "obj", "code"),
    [
        (f"{SVC}/web", service("web"), 404),  # Services are not created by PUT
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/lbhc",
            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lbhc"}},
            201,  # Leases are (AllowCreateOnUpdate)
        ),
        (f"{SVC}/other", service("web"), 400),  # name in the body != name in the URL
    ],
)
def test_put_of_a_missing_object(
    kube_server: KubeFakeServer, path: str, obj: dict[str, Any], code: int
) -> None:
    assert request(kube_server, "PUT", path, obj)[0] == code


def test_status_is_a_subresource(kube_fake: KubeFake, kube_server: KubeFakeServer) -> None:
    stored = kube_fake.upsert(service("web") | {"status": {"loadBalancer": {}}})
    ingress = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}

    main = request(kube_server, "PUT", f"{SVC}/web", stored | {"status": ingress})[1]
    sub = request(kube_server, "PUT", f"{SVC}/web/status", main | {"status": ingress})[1]
    read = request(kube_server, "GET", f"{SVC}/web/status")[1]

    assert main["status"] == {"loadBalancer": {}}  # the main resource ignores status
    assert sub["status"] == read["status"] == ingress
    assert request(kube_server, "GET", "/api/v1/namespaces/default/leases/x/status")[0] == 404


def test_a_no_op_write_keeps_the_version(kube_fake: KubeFake) -> None:
    stored = kube_fake.upsert(node("n1", labels={"a": "1"}))

    same = kube_fake.patch("Node", None, "n1", {"metadata": {"labels": {"a": "1"}}})

    assert same["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert kube_fake.resource_version == stored["metadata"]["resourceVersion"]
