"""The fake's fault injection beyond failed requests: watch events cut mid-line, stalled
streams, slow, empty and unanswered requests, outages, short pages, faults narrowed to one
named server, and the journal's times, servers and resourceVersions."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import node
from tests.kube_fixtures import seed
from tests.sandbox.kube_fake.support import WatchStream
from tests.sandbox.kube_fake.test_watch import watch_nodes
from tests.waiting import wait_for

Open = Callable[[Any], WatchStream]


def get(server: KubeFakeServer, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def raw_watch(server: KubeFakeServer, path: str) -> tuple[bytes, BaseException | None]:
    """The decoded body of a watch read to its end, and the error that ended it if it was
    cut (None when it ended properly)."""
    url = urlsplit(server.url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=5)
    connection.request("GET", path)
    response = connection.getresponse()
    data = b""
    try:
        while chunk := response.read1(65536):
            data += chunk
    except (http.client.HTTPException, OSError) as exc:
        return data, exc
    finally:
        connection.close()
    return data, None


@pytest.fixture
def second_server(kube_fake: KubeFake) -> Iterator[KubeFakeServer]:
    with KubeFakeServer(kube_fake, name="b") as server:
        yield server


# -- watch streams ----------------------------------------------------------------------------


@pytest.mark.parametrize("clean_end", [False, True])
def test_a_cut_event_stops_mid_line(
    kube_fake: KubeFake, kube_server: KubeFakeServer, clean_end: bool
) -> None:
    start = kube_fake.resource_version
    seed(kube_fake, node("n2"), node("n3"))
    kube_fake.faults.cut_watch_events(path_contains="/nodes", clean_end=clean_end)

    data, error = raw_watch(kube_server, f"/api/v1/nodes?watch=1&resourceVersion={start}")

    assert data and b"\n" not in data  # half of n2's ADDED: no complete line at all
    with pytest.raises(ValueError):
        json.loads(data)
    assert data.startswith(b'{"type":"ADDED"')
    assert (error is None) is clean_end  # abrupt: no terminating chunk
    # The fault is spent: the next watch replays both events whole.
    again = raw_watch(
        kube_server, f"/api/v1/nodes?watch=1&resourceVersion={start}&timeoutSeconds=1"
    )
    lines = [json.loads(line) for line in again[0].splitlines()]
    assert [e["object"]["metadata"]["name"] for e in lines] == ["n2", "n3"]


def test_a_cut_on_another_path_spares_this_watch(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    kube_fake.faults.cut_watch_events(path_contains="/services")
    stream = watches(watch_nodes(core, kube_fake.resource_version))
    kube_fake.upsert(node("n1"))
    assert stream.next()["object"]["metadata"]["name"] == "n1"


def test_a_stalled_watch_sends_nothing_then_catches_up(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    kube_fake.bookmark_interval = 0.05  # a live stream would send many bookmarks meanwhile
    stalled_at = time.monotonic()
    kube_fake.faults.stall_watches(0.6, path_contains="/nodes")
    stream = watches(watch_nodes(core, kube_fake.resource_version, allow_watch_bookmarks=True))
    kube_fake.upsert(node("n1"))

    first = stream.next()
    received = time.monotonic()

    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "n1")
    assert received - stalled_at >= 0.5  # not a byte during the stall, bookmarks included


def test_a_stalled_watch_can_still_be_dropped(
    kube_fake: KubeFake, core: Any, watches: Open
) -> None:
    kube_fake.faults.stall_watches(30, path_contains="/nodes")
    stream = watches(watch_nodes(core, kube_fake.resource_version))
    kube_fake.upsert(node("n1"))
    kube_fake.faults.drop_watches()

    assert stream.wait_end() == []  # cut before it sent anything
    assert stream.error is not None


# -- slow, empty and unanswered requests ----------------------------------------------------


def test_a_delayed_list_arrives_late_and_stale(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    seed(kube_fake, node("n1"))
    kube_fake.faults.delay_requests(0.5, path_contains="/nodes")
    result: list[tuple[int, bytes]] = []
    started = time.monotonic()
    reader = threading.Thread(target=lambda: result.append(get(kube_server, "/api/v1/nodes")))
    reader.start()
    wait_for(lambda: kube_fake.journal, 5, "the list to be read (its delay then begins)")
    kube_fake.upsert(node("n2"))  # after the list was read: not in it
    reader.join(5)

    status, body = result[0]
    assert time.monotonic() - started >= 0.5
    assert status == 200
    assert [i["metadata"]["name"] for i in json.loads(body)["items"]] == ["n1"]
    assert get(kube_server, "/api/v1/nodes")[0] == 200  # spent after one request


@pytest.mark.parametrize("body", [b"", b"{}"])
def test_empty_answers_for_lists_and_watches(
    kube_fake: KubeFake, kube_server: KubeFakeServer, core: Any, watches: Open, body: bytes
) -> None:
    seed(kube_fake, node("n1"))
    kube_fake.faults.answer_empty(times=2, path_contains="/nodes", body=body)

    assert get(kube_server, "/api/v1/nodes") == (200, body)
    stream = watches(watch_nodes(core, "0"))
    rest = stream.wait_end()

    assert stream.error is None  # ended properly, and at once: no event at all
    assert rest == []  # no line at all (`{}` has no newline: never a whole event)
    assert json.loads(get(kube_server, "/api/v1/nodes")[1])["items"]  # spent


def test_an_outage_fails_everything_and_cuts_open_watches_until_lifted(
    kube_fake: KubeFake, kube_server: KubeFakeServer, core: Any, watches: Open
) -> None:
    stream = watches(watch_nodes(core, kube_fake.resource_version))
    kube_fake.faults.start_outage(503)

    stream.wait_end()
    assert stream.error is not None  # cut, not ended
    assert get(kube_server, "/api/v1/nodes")[0] == 503
    assert get(kube_server, "/version")[0] == 503
    kube_fake.faults.end_outage()
    assert get(kube_server, "/api/v1/nodes")[0] == 200


def test_an_unanswered_outage_closes_connections_without_a_status_line(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    kube_fake.faults.start_outage(None)
    with pytest.raises((http.client.HTTPException, OSError)):
        get(kube_server, "/api/v1/nodes")
    kube_fake.faults.end_outage()
    assert get(kube_server, "/api/v1/nodes")[0] == 200


def test_faults_narrowed_to_one_server_spare_the_others(
    kube_fake: KubeFake, kube_server: KubeFakeServer, second_server: KubeFakeServer
) -> None:
    kube_fake.faults.start_outage(503, server="b")
    kube_fake.faults.fail_requests(status=500, server="b")  # queued behind the outage
    assert get(second_server, "/api/v1/nodes")[0] == 503
    assert get(kube_server, "/api/v1/nodes")[0] == 200
    kube_fake.faults.end_outage()
    assert get(kube_server, "/api/v1/nodes")[0] == 200  # the 500 is not this server's
    assert get(second_server, "/api/v1/nodes")[0] == 500
    assert [(e.server, e.status) for e in kube_fake.journal] == [
        ("b", 503),
        ("", 200),
        ("", 200),
        ("b", 500),
    ]


def test_faults_narrowed_to_lists_or_to_watches(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    seed(kube_fake, node("n1"))
    kube_fake.faults.answer_empty(path_contains="/nodes", body=b"{}", watch=False)
    kube_fake.faults.fail_requests(status=503, path_contains="/nodes", watch=True)

    assert get(kube_server, "/api/v1/nodes?watch=true")[0] == 503  # the list fault skipped
    assert get(kube_server, "/api/v1/nodes") == (200, b"{}")
    assert json.loads(get(kube_server, "/api/v1/nodes")[1])["items"]


def test_a_page_size_limit_makes_continue_tokens_appear(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    seed(kube_fake, *(node(f"n{i}") for i in range(5)))
    kube_fake.faults.limit_page_size(2)
    names: list[str] = []
    path = "/api/v1/nodes?limit=500"
    while True:
        page = json.loads(get(kube_server, path)[1])
        names += [i["metadata"]["name"] for i in page["items"]]
        assert len(page["items"]) <= 2
        if not page["metadata"].get("continue"):
            break
        path = f"/api/v1/nodes?limit=500&continue={page['metadata']['continue']}"
    assert names == [f"n{i}" for i in range(5)]
    kube_fake.faults.limit_page_size(None)
    assert len(json.loads(get(kube_server, "/api/v1/nodes?limit=500")[1])["items"]) == 5


@pytest.mark.parametrize(
    "arm",
    [
        lambda f: f.delay_requests(0),
        lambda f: f.answer_empty(times=0),
        lambda f: f.cut_watch_events(times=0),
        lambda f: f.stall_watches(0),
        lambda f: f.limit_page_size(0),
        lambda f: f.start_outage(200),
    ],
)
def test_new_fault_arguments_are_checked(kube_fake: KubeFake, arm: Callable[[Any], None]) -> None:
    with pytest.raises(ValueError):
        arm(kube_fake.faults)


def test_a_history_limit_set_later_expires_watchers_that_fall_behind(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    start = kube_fake.resource_version
    kube_fake.history_limit = 2
    seed(kube_fake, *(node(f"n{i}") for i in range(4)))

    data, _ = raw_watch(kube_server, f"/api/v1/nodes?watch=1&resourceVersion={start}")

    event = json.loads(data)
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)
    with pytest.raises(ValueError):
        kube_fake.history_limit = 0


# -- journal and restarts ---------------------------------------------------------------------


def test_the_journal_says_when_which_server_showed_which_version(
    kube_fake: KubeFake, kube_server: KubeFakeServer, second_server: KubeFakeServer
) -> None:
    before = time.monotonic()
    seed(kube_fake, node("n1"))
    first_rv = kube_fake.get("Node", None, "n1")["metadata"]["resourceVersion"]  # type: ignore[index]
    get(second_server, "/api/v1/nodes/n1")
    kube_fake.patch("Node", None, "n1", {"metadata": {"labels": {"v": "2"}}})
    get(kube_server, "/api/v1/nodes/n1")
    get(kube_server, "/api/v1/nodes")

    shown = [(e.server, e.resource_version) for e in kube_fake.journal]
    versions = kube_fake.revisions("Node", None, "n1")
    assert [rv for rv, _ in versions] == [first_rv, shown[1][1]]
    assert shown == [("b", first_rv), ("", versions[1][0]), ("", "")]  # lists name no object
    assert versions[1][1]["metadata"]["labels"]["v"] == "2"
    times = [e.time for e in kube_fake.journal]
    assert before <= times[0] <= times[1] <= times[2] <= time.monotonic()


def test_a_restarted_server_answers_on_the_same_port(
    kube_fake: KubeFake, kube_server: KubeFakeServer
) -> None:
    url = kube_server.url
    kube_server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/version", timeout=2)
    again = kube_server.restarted()
    try:
        assert again.url == url
        assert get(again, "/version")[0] == 200
    finally:
        again.stop()
