"""Watch streams through the real kubernetes client's raw streaming: event order and
resourceVersions, initial events, selectors, bookmarks, timeouts, 410 Gone and faults."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import node, pod, service
from tests.kube_fixtures import seed, status_body
from tests.sandbox.kube_fake.support import WATCH_TIMEOUT, WatchStream, object_names

Open = Callable[[Any], WatchStream]


def watch_nodes(core: Any, rv: str, **kwargs: Any) -> Any:
    return core.list_node(
        watch=True,
        resource_version=rv,
        _preload_content=False,
        _request_timeout=WATCH_TIMEOUT,
        **kwargs,
    )


def test_added_modified_deleted_in_order_with_increasing_versions(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    seed(kube_fake, node("n1"))
    stream = watches(watch_nodes(core, kube_fake.resource_version))

    kube_fake.upsert(node("n2"))
    kube_fake.taint("n1", "ToBeDeletedByClusterAutoscaler", "1")
    kube_fake.delete("Node", None, "n2")
    events = [stream.next() for _ in range(3)]

    assert object_names(events) == [("ADDED", "n2"), ("MODIFIED", "n1"), ("DELETED", "n2")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert versions[-1] == int(kube_fake.resource_version)
    assert all((e["object"]["kind"], e["object"]["apiVersion"]) == ("Node", "v1") for e in events)
    assert events[1]["object"]["spec"]["taints"][0]["key"] == "ToBeDeletedByClusterAutoscaler"


@pytest.mark.parametrize("rv", ["", "0"])
def test_no_or_zero_version_starts_with_the_current_state(
    kube_fake: KubeFake, core: Any, watches: Open, rv: str
) -> None:
    seed(kube_fake, node("n2"), node("n1"))
    stream = watches(watch_nodes(core, rv))

    initial = [stream.next(), stream.next()]
    kube_fake.upsert(node("n3"))

    assert object_names(initial) == [("ADDED", "n1"), ("ADDED", "n2")]  # in key order
    assert object_names([stream.next()]) == [("ADDED", "n3")]


def test_a_version_starts_after_it_replaying_history(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    start = kube_fake.resource_version
    seed(kube_fake, node("n1"), node("n1", labels={"v": "2"}))

    stream = watches(watch_nodes(core, start))

    assert object_names([stream.next(), stream.next()]) == [("ADDED", "n1"), ("MODIFIED", "n1")]


def test_bookmarks_carry_the_current_version_and_one_ends_a_timed_out_watch(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    kube_fake.bookmark_interval = 0.05
    stream = watches(
        watch_nodes(core, kube_fake.resource_version, allow_watch_bookmarks=True, timeout_seconds=1)
    )

    bookmark = stream.next()
    kube_fake.upsert(node("n1"))
    assert stream.next_non_bookmark()["type"] == "ADDED"
    rest = stream.wait_end(timeout=5)

    assert bookmark == {
        "type": "BOOKMARK",
        "object": {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": "2"}},
    }
    assert rest and rest[-1]["type"] == "BOOKMARK"  # sent as the watch times out
    assert rest[-1]["object"]["metadata"]["resourceVersion"] == kube_fake.resource_version
    assert stream.error is None  # ended cleanly


def test_no_bookmarks_unless_asked(kube_fake: KubeFake, core: Any, watches: Open) -> None:
    kube_fake.bookmark_interval = 0.01
    stream = watches(watch_nodes(core, kube_fake.resource_version, timeout_seconds=1))

    assert stream.wait_end() == []
    assert stream.error is None


def _expired(kube_fake: KubeFake) -> None:
    kube_fake.compact()


def _limited(kube_fake: KubeFake) -> None:
    for i in range(3):
        kube_fake.upsert(node(f"later-{i}"))


@pytest.mark.parametrize("forget", [_expired, _limited], ids=["compact", "history_limit"])
def test_a_version_older_than_the_history_is_one_410_error_event(
    watches: Open, forget: Callable[[KubeFake], None]
) -> None:
    fake = KubeFake(history_limit=2)
    with KubeFakeServer(fake) as server:
        config = client.Configuration()
        config.host = server.url
        api = client.CoreV1Api(client.ApiClient(config))
        seed(fake, node("n1"), node("n2"))
        old = "1"
        forget(fake)

        response = watch_nodes(api, old)
        assert response.status == 200  # the error is in the stream, as the watch cache does
        events = watches(response).wait_end()

    assert len(events) == 1
    message = events[0]["object"]["message"]
    assert re.fullmatch(r"too old resource version: 1 \((\d+)\)", message), message
    assert events == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": "Expired",
                "code": 410,
            },
        }
    ]


def test_a_future_version_is_an_error_event(kube_fake: KubeFake, core: Any, watches: Open) -> None:
    events = watches(watch_nodes(core, "99")).wait_end()

    assert [(e["type"], e["object"]["code"]) for e in events] == [("ERROR", 504)]


def test_label_selector_turns_leaving_into_deleted_and_entering_into_added(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    seed(kube_fake, service("web", labels={"lb": "yes"}), service("api"))
    stream = watches(
        core.list_service_for_all_namespaces(
            watch=True,
            resource_version=kube_fake.resource_version,
            label_selector="lb=yes",
            _preload_content=False,
            _request_timeout=WATCH_TIMEOUT,
        )
    )

    kube_fake.patch("Service", "default", "api", {"metadata": {"labels": {"x": "1"}}})  # unseen
    kube_fake.patch("Service", "default", "web", {"metadata": {"labels": {"lb": None}}})
    kube_fake.patch("Service", "default", "api", {"metadata": {"labels": {"lb": "yes"}}})
    kube_fake.patch("Service", "default", "api", {"spec": {"type": "NodePort"}})
    events = [stream.next() for _ in range(3)]

    assert object_names(events) == [("DELETED", "web"), ("ADDED", "api"), ("MODIFIED", "api")]
    # DELETED carries the object as it was, at the change's resourceVersion (the cacher's way).
    assert events[0]["object"]["metadata"]["labels"] == {"lb": "yes"}
    assert (
        int(events[0]["object"]["metadata"]["resourceVersion"])
        == int(events[1]["object"]["metadata"]["resourceVersion"]) - 1
    )


def test_field_selector_and_namespace_scope(kube_fake: KubeFake, core: Any, watches: Open) -> None:
    stream = watches(
        core.list_namespaced_pod(
            "kube-system",
            watch=True,
            resource_version=kube_fake.resource_version,
            field_selector="spec.nodeName=n1",
            _preload_content=False,
            _request_timeout=WATCH_TIMEOUT,
        )
    )

    seed(
        kube_fake,
        pod("other-ns", namespace="default", node_name="n1"),
        pod("other-node", node_name="n2"),
        pod("wanted", node_name="n1"),
    )

    assert object_names([stream.next()]) == [("ADDED", "wanted")]


def test_drop_watches_cuts_open_streams_mid_stream(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    seed(kube_fake, node("n1"))
    first, second = (watches(watch_nodes(core, "0")) for _ in range(2))
    assert first.next()["type"] == second.next()["type"] == "ADDED"

    kube_fake.faults.drop_watches()
    first.wait_end()
    second.wait_end()
    later = watches(watch_nodes(core, kube_fake.resource_version))
    kube_fake.upsert(node("n2"))

    # Cut without the terminating chunk: the client sees a broken response, not an end.
    assert first.error is not None and second.error is not None
    assert object_names([later.next()]) == [("ADDED", "n2")]  # later watches are not cut


def test_failed_requests_apply_to_watches(kube_fake: KubeFake, core: Any) -> None:
    kube_fake.faults.fail_requests(status=403)

    with pytest.raises(ApiException) as err:
        watch_nodes(core, "0")

    assert err.value.status == 403
    assert 'cannot watch resource "nodes"' in status_body(err.value)["message"]
    assert kube_fake.journal[-1].query["watch"] in ("true", "True")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("resourceVersion=abc", 'invalid resource version "abc"'),
        ("timeoutSeconds=soon", 'timeoutSeconds: invalid value "soon"'),
        ("labelSelector=a%20b", "unable to parse requirement"),
        ("fieldSelector=spec.nodeName%3Dx", "field label not supported: spec.nodeName"),
    ],
)
def test_bad_watch_parameters_are_400_before_the_stream(
    kube_server: KubeFakeServer, query: str, message: str
) -> None:
    url = f"{kube_server.url}/api/v1/nodes?watch=true&{query}"
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url, timeout=5)
    assert err.value.code == 400
    assert message in json.loads(err.value.read())["message"]


def test_journal_names_the_client(kube_fake: KubeFake, kube_server: KubeFakeServer) -> None:
    seed(kube_fake, node("n1"))
    request = urllib.request.Request(
        f"{kube_server.url}/api/v1/nodes?watch=1",
        headers={"User-Agent": "lbhc/test", "X-Lbhc-Client-Id": "replica-a"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.loads(response.readline())["type"] == "ADDED"
    urllib.request.urlopen(f"{kube_server.url}/version", timeout=5).read()

    watch, version = kube_fake.journal
    assert (watch.user_agent, watch.client_id, watch.status) == ("lbhc/test", "replica-a", 200)
    assert version.client_id == ""


def test_send_initial_events_ends_the_initial_state_with_a_bookmark(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    seed(kube_fake, node("n1"))
    stream = watches(
        watch_nodes(
            core,
            "",
            allow_watch_bookmarks=True,
            send_initial_events=True,
            resource_version_match="NotOlderThan",
        )
    )

    added, end = stream.next(), stream.next()

    assert object_names([added]) == [("ADDED", "n1")]
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"] == {
        "resourceVersion": kube_fake.resource_version,
        "annotations": {"k8s.io/initial-events-end": "true"},
    }
    with pytest.raises(ApiException) as err:
        watch_nodes(core, "", send_initial_events=True)
    assert (err.value.status, status_body(err.value)["reason"]) == (422, "Invalid")
