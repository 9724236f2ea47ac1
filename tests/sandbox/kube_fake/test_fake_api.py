"""The fake's objects, errors, faults, discovery and server lifecycle."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.sandbox.kube_fake import JournalEntry, KubeFake, KubeFakeServer
from tests.builders.kube import KUBE_SYSTEM_UID, kube_proxy_pod, node, service
from tests.kube_fixtures import raw, seed, status_body

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def http(
    server: KubeFakeServer, path: str, method: str = "GET", accept: str | None = None
) -> tuple[int, dict[str, str], dict[str, Any]]:
    request = urllib.request.Request(server.url + path, method=method)
    if accept is not None:
        request.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


# -- single objects ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "args", "kind"),
    [
        ("read_node", ("n1",), "Node"),
        ("read_namespace", ("kube-system",), "Namespace"),
        ("read_namespaced_service", ("web", "default"), "Service"),
        ("read_namespaced_pod", ("kube-proxy-n1", "kube-system"), "Pod"),
    ],
)
def test_get_returns_the_object_with_kind(
    kube_fake: KubeFake, core: Any, method: str, args: tuple[str, ...], kind: str
) -> None:
    seed(kube_fake, node("n1"), service("web"), kube_proxy_pod("n1"))

    body = raw(getattr(core, method)(*args, _preload_content=False))

    assert (body["apiVersion"], body["kind"], body["metadata"]["name"]) == ("v1", kind, args[0])
    assert body == kube_fake.get(kind, body["metadata"].get("namespace"), args[0])


@pytest.mark.parametrize(
    ("method", "args", "plural"),
    [
        ("read_node", ("x",), "nodes"),
        ("read_namespace", ("x",), "namespaces"),
        ("read_namespaced_service", ("x", "default"), "services"),
        # The object exists, but in another namespace.
        ("read_namespaced_pod", ("kube-proxy-n1", "default"), "pods"),
    ],
)
def test_missing_object_is_a_404_status(
    kube_fake: KubeFake, core: Any, method: str, args: tuple[str, ...], plural: str
) -> None:
    seed(kube_fake, kube_proxy_pod("n1"))
    with pytest.raises(ApiException) as err:
        getattr(core, method)(*args, _preload_content=False)
    name = args[0]
    assert err.value.status == 404
    assert status_body(err.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{plural} "{name}" not found',
        "reason": "NotFound",
        "details": {"name": name, "kind": plural},
        "code": 404,
    }


# -- faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason", "message"),
    [
        (500, "InternalError", "Internal error occurred: injected fault"),
        (503, "ServiceUnavailable", "the server is currently unable to handle the request"),
        (410, "Expired", "The resourceVersion for the provided list is too old."),
        (
            403,
            "Forbidden",
            'nodes is forbidden: User "system:serviceaccount:kube-system:lbhc" cannot list '
            'resource "nodes" in API group "" at the cluster scope',
        ),
    ],
)
def test_failed_requests_get_a_status_body_then_recover(
    kube_fake: KubeFake, core: Any, code: int, reason: str, message: str
) -> None:
    kube_fake.faults.fail_requests(times=2, status=code)

    for _ in range(2):
        with pytest.raises(ApiException) as err:
            core.list_node(_preload_content=False)
        body = status_body(err.value)
        assert (err.value.status, body["kind"], body["apiVersion"]) == (code, "Status", "v1")
        assert (body["status"], body["reason"], body["code"]) == ("Failure", reason, code)
        assert body["message"] == message
    assert raw(core.list_node(_preload_content=False))["kind"] == "NodeList"
    assert [e.status for e in kube_fake.journal] == [code, code, 200]


def test_fault_path_filter_and_message(kube_fake: KubeFake, core: Any) -> None:
    kube_fake.faults.fail_requests(status=500, path_contains="/services", message="etcd down")

    raw(core.list_node(_preload_content=False))  # not matched: not consumed either
    with pytest.raises(ApiException) as err:
        core.list_service_for_all_namespaces(_preload_content=False)

    assert err.value.status == 500
    assert status_body(err.value)["message"] == "etcd down"


def test_too_many_requests_carries_retry_after(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    # Plain urllib: the kubernetes client's urllib3 honours Retry-After on 429 by sleeping and
    # retrying, which would hide the response (and slow the test).
    kube_fake.faults.fail_requests(status=429)

    status, headers, body = http(kube_server, "/api/v1/nodes")

    assert (status, headers["Retry-After"], body["reason"]) == (429, "1", "TooManyRequests")
    assert body["details"] == {"retryAfterSeconds": 1}


def test_expired_continue_tokens_only_hit_requests_with_a_token(
    kube_fake: KubeFake, core: Any
) -> None:
    seed(kube_fake, node("n1"), node("n2"))
    kube_fake.faults.expire_continue_tokens(1)

    first = raw(core.list_node(limit=1, _preload_content=False))  # no token: unaffected
    with pytest.raises(ApiException) as err:
        core.list_node(limit=1, _continue=first["metadata"]["continue"], _preload_content=False)
    again = raw(
        core.list_node(limit=1, _continue=first["metadata"]["continue"], _preload_content=False)
    )

    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (410, "Expired")
    assert body["message"].startswith("The provided continue parameter is too old")
    assert [i["metadata"]["name"] for i in again["items"]] == ["n2"]


@pytest.mark.parametrize(("times", "status"), [(0, 500), (1, 200), (1, 302), (1, 418)])
def test_fault_arguments_are_checked(kube_fake: KubeFake, times: int, status: int) -> None:
    with pytest.raises(ValueError):
        kube_fake.faults.fail_requests(times=times, status=status)


# -- discovery and HTTP ---------------------------------------------------------------------


def test_version_and_discovery(kube_server: KubeFakeServer) -> None:
    status, headers, version = http(kube_server, "/version")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert (version["major"], version["minor"], version["gitVersion"]) == ("1", "32", "v1.32.4")

    assert http(kube_server, "/api")[2]["versions"] == ["v1"]
    resources = {r["name"]: r for r in http(kube_server, "/api/v1")[2]["resources"]}
    served = {"configmaps", "events", "namespaces", "nodes", "pods", "services"}
    assert set(resources) == served | {
        f"{r}/status" for r in ("namespaces", "nodes", "pods", "services")
    }
    assert (resources["pods"]["namespaced"], resources["nodes"]["namespaced"]) == (True, False)
    assert resources["services"]["shortNames"] == ["svc"]
    assert resources["events"]["verbs"] == ["get", "list", "watch"]  # a read-only view
    groups = http(kube_server, "/apis")[2]
    assert (groups["kind"], groups["apiVersion"]) == ("APIGroupList", "v1")
    assert [g["preferredVersion"]["groupVersion"] for g in groups["groups"]] == [
        "apps/v1",
        "coordination.k8s.io/v1",
        "events.k8s.io/v1",
    ]


@pytest.mark.parametrize(
    ("path", "method", "accept", "code", "reason"),
    [
        ("/api/v1/nodes", "GET", None, 200, None),
        ("/api/v1/nodes", "GET", f"{TABLE},application/json", 200, None),
        ("/api/v1/nodes", "GET", TABLE, 406, "NotAcceptable"),  # Table only: not served
        ("/api/v1/nodes", "GET", "*/*", 200, None),
        ("/api/v1/nodes", "GET", "application/vnd.kubernetes.protobuf", 406, "NotAcceptable"),
        ("/api/v1/nodes", "PUT", None, 405, "MethodNotAllowed"),  # no update of a collection
        ("/api/v1/nodes", "DELETE", None, 405, "MethodNotAllowed"),  # no deletecollection
        ("/api/v1/pods", "POST", None, 405, "MethodNotAllowed"),  # create needs a namespace
        ("/api/v1/namespaces/default/events/e", "DELETE", None, 405, "MethodNotAllowed"),
        ("/api/v1/pods/x", "GET", None, 404, "NotFound"),
        ("/api/v1/namespaces/default/nodes", "GET", None, 404, "NotFound"),
        ("/apis/apps/v1/deployments", "GET", None, 404, "NotFound"),
        ("/healthz", "GET", None, 404, "NotFound"),
    ],
)
def test_http_edges(
    kube_server: KubeFakeServer,
    path: str,
    method: str,
    accept: str | None,
    code: int,
    reason: str | None,
) -> None:
    status, headers, body = http(kube_server, path, method, accept)
    assert status == code
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) > 0
    assert body.get("reason") == reason
    if reason:
        assert (body["kind"], body["code"]) == ("Status", code)


def test_journal_records_every_request(kube_fake: KubeFake, kube_server: KubeFakeServer) -> None:
    kube_fake.faults.fail_requests(status=503, path_contains="/pods")
    http(
        kube_server,
        "/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-proxy&limit=5",
    )
    http(kube_server, "/nope", "DELETE")

    assert kube_fake.journal == [
        JournalEntry(
            "GET",
            "/api/v1/namespaces/kube-system/pods",
            {"labelSelector": "k8s-app=kube-proxy", "limit": "5"},
            503,
        ),
        JournalEntry("DELETE", "/nope", {}, 404),
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        kube_fake.journal[0].status = 200  # type: ignore[misc]
    kube_fake.clear_journal()
    assert kube_fake.journal == []


# -- seeding ----------------------------------------------------------------------------------


def test_upsert_assigns_and_keeps_server_fields(kube_fake: KubeFake) -> None:
    start = int(kube_fake.resource_version)
    created = kube_fake.upsert(node("n1"))
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["resourceVersion"] == str(start + 1) == kube_fake.resource_version

    replaced = kube_fake.upsert(node("n1", labels={"new": "yes"}))["metadata"]
    assert (replaced["uid"], replaced["creationTimestamp"]) == (
        meta["uid"],
        meta["creationTimestamp"],
    )
    assert int(replaced["resourceVersion"]) == start + 2
    assert replaced["labels"] == {"new": "yes"}

    gone = kube_fake.delete("Node", None, "n1")
    assert int(gone["metadata"]["resourceVersion"]) == start + 3 == int(kube_fake.resource_version)
    assert kube_fake.objects("Node") == []
    with pytest.raises(KeyError):
        kube_fake.delete("Node", None, "n1")


def test_objects_are_deep_copies_in_list_order(kube_fake: KubeFake) -> None:
    obj = service("b", namespace="ns1")
    kube_fake.upsert(obj)
    kube_fake.upsert(service("a", namespace="ns2"))
    obj["spec"]["type"] = "mutated after upsert"

    objects = kube_fake.objects("Service")
    objects[0]["spec"]["type"] = "mutated after objects()"

    assert [(o["metadata"]["namespace"], o["kind"]) for o in objects] == [
        ("ns1", "Service"),
        ("ns2", "Service"),
    ]
    assert [o["spec"]["type"] for o in kube_fake.objects("Service")] == ["LoadBalancer"] * 2
    assert kube_fake.upsert(service("c", namespace=""))["metadata"]["namespace"] == "default"
    assert kube_fake.get("Namespace", None, "kube-system")["metadata"]["uid"] == KUBE_SYSTEM_UID  # type: ignore[index]


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "apps/v1", "kind": "Node", "metadata": {"name": "x"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x", "namespace": "default"}},
        {"apiVersion": "v1", "kind": "Node"},
    ],
)
def test_upsert_rejects_what_the_api_could_not_hold(
    kube_fake: KubeFake, obj: dict[str, Any]
) -> None:
    with pytest.raises(ValueError):
        kube_fake.upsert(obj)


def test_server_start_and_stop_are_idempotent(kube_fake: KubeFake) -> None:
    server = KubeFakeServer(kube_fake)
    with pytest.raises(RuntimeError):
        _ = server.url
    assert server.start() is server.start()
    url = server.url
    assert http(server, "/version")[0] == 200
    server.stop()
    server.stop()
    with pytest.raises(RuntimeError):
        _ = server.url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/version", timeout=5)
