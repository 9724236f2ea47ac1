"""DELETE with the API's conventions: the object in the answer, preconditions, finalizers and
deletionTimestamp, and the fake's helpers going through the same code as HTTP writes."""

from __future__ import annotations

from typing import Any

import pytest

from lbhc.sandbox.kube_fake import ApiError, KubeFake, KubeFakeServer
from tests.builders.kube import node, service
from tests.kube_fixtures import seed
from tests.sandbox.kube_fake.support import WATCH_TIMEOUT, WatchStream, object_names, request

SVC = "/api/v1/namespaces/default/services"


# -- delete and finalizers ----------------------------------------------------------------------


def test_delete_returns_the_object_and_removes_it(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    kube_fake.upsert(service("web"))

    status, body = request(kube_server, "DELETE", f"{SVC}/web")
    again = request(kube_server, "DELETE", f"{SVC}/web")

    assert (status, body["kind"], body["metadata"]["name"]) == (200, "Service", "web")
    assert body["metadata"]["resourceVersion"] == kube_fake.resource_version
    assert kube_fake.get("Service", "default", "web") is None
    assert (again[0], again[1]["reason"]) == (404, "NotFound")


def test_delete_preconditions(kube_fake: KubeFake, kube_server: KubeFakeServer) -> None:
    kube_fake.upsert(service("web"))
    options = {"kind": "DeleteOptions", "preconditions": {"resourceVersion": "1"}}

    status, body = request(kube_server, "DELETE", f"{SVC}/web", options)

    assert (status, body["reason"]) == (409, "Conflict")
    assert kube_fake.get("Service", "default", "web") is not None


def test_finalizers_hold_a_deleted_object_until_the_last_one_is_removed(
    kube_fake: KubeFake, core: Any, kube_server: KubeFakeServer, watches: Any
) -> None:
    obj = service("web")
    obj["metadata"]["finalizers"] = ["lbhc.dev/a", "lbhc.dev/b"]
    kube_fake.upsert(obj)
    stream: WatchStream = watches(
        core.list_namespaced_service(
            "default",
            watch=True,
            resource_version=kube_fake.resource_version,
            _preload_content=False,
            _request_timeout=WATCH_TIMEOUT,
        )
    )

    status, deleting = request(kube_server, "DELETE", f"{SVC}/web")
    again = request(kube_server, "DELETE", f"{SVC}/web")[1]
    added = request(
        kube_server,
        "PATCH",
        f"{SVC}/web",
        {"metadata": {"finalizers": ["lbhc.dev/a", "lbhc.dev/b", "lbhc.dev/c"]}},
        "application/merge-patch+json",
    )
    kube_fake.patch("Service", "default", "web", {"metadata": {"finalizers": ["lbhc.dev/b"]}})
    kube_fake.patch("Service", "default", "web", {"metadata": {"finalizers": None}})

    meta = deleting["metadata"]
    assert status == 200 and meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    assert again == deleting  # deleting a terminating object changes nothing
    assert added[0] == 422 and "no new finalizers" in added[1]["message"]
    events = [stream.next() for _ in range(3)]
    assert object_names(events) == [("MODIFIED", "web"), ("MODIFIED", "web"), ("DELETED", "web")]
    assert events[1]["object"]["metadata"]["finalizers"] == ["lbhc.dev/b"]
    assert kube_fake.get("Service", "default", "web") is None


def test_helpers_go_through_the_api_path(kube_fake: KubeFake) -> None:
    obj = node("n1")
    obj["metadata"]["finalizers"] = ["x"]
    kube_fake.upsert(obj)

    held = kube_fake.delete("Node", None, "n1")
    with pytest.raises(KeyError):
        kube_fake.patch("Node", None, "missing", {})
    with pytest.raises(KeyError):
        kube_fake.delete("Node", None, "missing")
    with pytest.raises(ApiError) as err:
        kube_fake.patch("Node", None, "n1", {"metadata": {"resourceVersion": "1"}})

    assert held["metadata"]["deletionTimestamp"]
    assert err.value.code == 409
    kube_fake.patch("Node", None, "n1", [{"op": "remove", "path": "/metadata/finalizers"}], "json")
    assert kube_fake.get("Node", None, "n1") is None


def test_taint_and_untaint(kube_fake: KubeFake) -> None:
    seed(kube_fake, node("n1", taints=(("keep", "", "NoExecute"),)))

    kube_fake.taint("n1", "ToBeDeletedByClusterAutoscaler", "1", "NoSchedule")
    kube_fake.taint("n1", "ToBeDeletedByClusterAutoscaler", "2", "NoSchedule")  # replaces
    tainted = kube_fake.get("Node", None, "n1")["spec"]["taints"]  # type: ignore[index]
    kube_fake.untaint("n1", "ToBeDeletedByClusterAutoscaler")
    kube_fake.untaint("n1", "keep")

    assert tainted == [
        {"key": "keep", "value": "", "effect": "NoExecute"},
        {"key": "ToBeDeletedByClusterAutoscaler", "value": "2", "effect": "NoSchedule"},
    ]
    assert "taints" not in kube_fake.get("Node", None, "n1")["spec"]  # type: ignore[index]
