"""Every list route serves watch, in the API's own form (the core/v1 Event view converted)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import node, pod, service

# Every list route serves watch: (path, object to seed through the fake).
_DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "kube-proxy"}}
_LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lbhc"}}
_EVENT = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "web.1", "namespace": "default"},
    "note": "hello",
    "regarding": {"kind": "Service", "name": "web", "namespace": "default"},
}
WATCH_ROUTES = [
    ("/api/v1/nodes", node("n1"), ("v1", "Node")),
    (
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
        ("v1", "Namespace"),
    ),
    ("/api/v1/services", service("web"), ("v1", "Service")),
    ("/api/v1/namespaces/default/services", service("web"), ("v1", "Service")),
    ("/api/v1/pods", pod("p"), ("v1", "Pod")),
    ("/api/v1/namespaces/kube-system/pods", pod("p"), ("v1", "Pod")),
    ("/apis/apps/v1/daemonsets", _DS, ("apps/v1", "DaemonSet")),
    ("/apis/apps/v1/namespaces/default/daemonsets", _DS, ("apps/v1", "DaemonSet")),
    (
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        _LEASE,
        ("coordination.k8s.io/v1", "Lease"),
    ),
    ("/apis/events.k8s.io/v1/events", _EVENT, ("events.k8s.io/v1", "Event")),
    ("/api/v1/namespaces/default/events", _EVENT, ("v1", "Event")),  # converted
]


@pytest.mark.parametrize(("path", "obj", "served_as"), WATCH_ROUTES)
@pytest.mark.parametrize("flag", ["true", "1"])
def test_every_list_route_watches(
    kube_fake: KubeFake,
    kube_server: KubeFakeServer,
    path: str,
    obj: dict[str, Any],
    served_as: tuple[str, str],
    flag: str,
) -> None:
    start = kube_fake.resource_version
    kube_fake.upsert(obj)
    url = f"{kube_server.url}{path}?watch={flag}&resourceVersion={start}"

    response = urllib.request.urlopen(url, timeout=10)
    assert response.headers["Transfer-Encoding"] == "chunked"
    event = json.loads(response.readline())
    response.close()

    assert event["type"] == "ADDED"
    assert (event["object"]["apiVersion"], event["object"]["kind"]) == served_as
    assert event["object"]["metadata"]["name"] == obj["metadata"]["name"]


def test_core_event_view_converts_fields(kube_fake: KubeFake, kube_server: KubeFakeServer) -> None:
    kube_fake.upsert(_EVENT)
    url = f"{kube_server.url}/api/v1/events?watch=1&resourceVersion=0"

    with urllib.request.urlopen(url, timeout=10) as response:
        event = json.loads(response.readline())["object"]

    assert (event["message"], event["involvedObject"]["name"]) == ("hello", "web")
    assert "note" not in event and "regarding" not in event
