"""The reflector: against the kube fake over HTTP, and against a scripted API stream by
stream (bookmarks, 410s, undecodable objects, backoff): when a store may call itself current."""

from __future__ import annotations

import collections
import json
import random
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from lbhc.controller.backoff import Backoff
from lbhc.controller.reflector import Reflector
from lbhc.kube.cache import ClusterCache
from lbhc.kube.client import KubeApi, KubeConfig, make_api_client
from lbhc.kube.resources import Resource
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.controller.harness import node_obj
from tests.waiting import wait_for


@pytest.fixture
def running() -> Iterator[tuple[KubeFake, ClusterCache, Reflector]]:
    fake = KubeFake(bookmark_interval=3600)  # a quiet stream says nothing at all
    fake.upsert(node_obj("node-0"))
    with KubeFakeServer(fake) as server:
        config = KubeConfig(host=server.url)
        cache = ClusterCache("uid")
        for other in (Resource.SERVICES, Resource.KUBE_PROXY_PODS):
            cache.replace(other, [])
        reflector = Reflector(
            KubeApi(make_api_client(config), config),
            Resource.NODES,
            cache,
            lambda reason: None,
            backoff=Backoff(0.01, 0.05),
        )
        reflector.start()
        try:
            wait_for(lambda: cache.snapshot().complete, what="initial sync")
            yield fake, cache, reflector
        finally:
            reflector.stop()


def watches(fake: KubeFake) -> list[int]:
    return [e.status for e in fake.journal if e.path == "/api/v1/nodes" and e.query.get("watch")]


def test_after_a_failed_watch_the_store_is_a_gap_until_the_stream_delivers(
    running: tuple[KubeFake, ClusterCache, Reflector],
) -> None:
    fake, cache, _ = running
    fake.faults.fail_requests(times=1, status=500, path_contains="/api/v1/nodes")
    fake.faults.drop_watches()
    wait_for(lambda: watches(fake)[-2:] == [500, 200], what="a failed then a successful watch")
    # Reconnected, but nothing read yet: the missed events (or a 410) may still be coming.
    assert cache.snapshot().gaps == ("nodes watch failed: HTTP 500 Internal Server Error",)
    fake.upsert(node_obj("node-1"))
    wait_for(lambda: cache.snapshot().complete, what="fresh once an event arrived")
    assert {n.name for n in cache.snapshot().nodes} == {"node-0", "node-1"}


# The reflector against a scripted API: each list page and each watch stream is given in
# advance; a stream can hold (the test inspects the cache, then resumes it) and move the
# clock. When the script runs out the next watch parks, open and silent, until the test ends.
# Waits are on conditions with timeouts; backoff waits are recorded, never timed.


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Hold:
    """The stream pauses here until the test resumes it (or the reflector closes it)."""


@dataclass(frozen=True)
class Advance:
    """Time passes while the watch is open."""

    seconds: float


Step = bytes | BaseException | Advance | Hold
HOLD_TIMEOUT = 10.0


class ScriptedKube:
    """The two calls the Reflector makes on KubeApi (list_page, watch), recorded and
    answered from the script in order."""

    def __init__(
        self,
        clock: ManualClock,
        pages: Sequence[bytes | BaseException],
        watches: Sequence[Sequence[Step] | BaseException],
    ) -> None:
        self.clock = clock
        self._pages = collections.deque(pages)
        self._watches = collections.deque(watches)
        self.calls: list[tuple[str, str]] = []  # ("list", continue token) / ("watch", version)
        self.unscripted: list[str] = []
        self._cond = threading.Condition()
        self._held = 0  # holds reached by the reflector
        self._resumed = 0  # holds the test let go
        self._awaited = 0  # holds the test has waited for
        self._released = False

    def list_page(self, resource: Resource, continue_token: str = "") -> bytes:
        assert resource is Resource.NODES
        with self._cond:
            self.calls.append(("list", continue_token))
            page = self._pages.popleft() if self._pages else None
            if page is None:
                self.unscripted.append(f"list {continue_token!r}")
                self._cond.notify_all()
        if page is None:
            raise AssertionError("no list page scripted")
        if isinstance(page, BaseException):
            raise page
        return page

    def watch(self, resource: Resource, resource_version: str, timeout_seconds: int) -> Stream:
        assert resource is Resource.NODES
        assert 300 <= timeout_seconds < 600  # the default, jittered up to twice
        with self._cond:
            self.calls.append(("watch", resource_version))
            script: Sequence[Step] | BaseException = (
                self._watches.popleft() if self._watches else [Hold()]
            )
        if isinstance(script, BaseException):
            raise script
        return Stream(self, script)

    def hold(self, stream: Stream) -> bool:
        """In the reflector's thread: wait to be resumed. False when the stream should end."""
        with self._cond:
            self._held += 1
            mine = self._held
            self._cond.notify_all()
            self._cond.wait_for(
                lambda: self._resumed >= mine or self._released or stream.closed, HOLD_TIMEOUT
            )
            return self._resumed >= mine and not stream.closed

    def close(self, stream: Stream) -> None:
        with self._cond:
            stream.closed = True
            self._cond.notify_all()

    def until_held(self) -> None:
        """Wait until the reflector reaches the next hold (or parks): all before it is done."""
        with self._cond:
            self._awaited += 1
            target = self._awaited
            self._cond.wait_for(lambda: self._held >= target or self.unscripted, HOLD_TIMEOUT)
            reached = self._held >= target
        assert not self.unscripted, f"unscripted calls {self.unscripted}; calls: {self.calls}"
        assert reached, f"the reflector never reached hold {target}; calls: {self.calls}"

    def resume(self) -> None:
        with self._cond:
            self._resumed += 1
            self._cond.notify_all()

    def release(self) -> None:
        """The test is over: every hold ends its stream, now and later."""
        with self._cond:
            self._released = True
            self._cond.notify_all()


class Stream:
    def __init__(self, kube: ScriptedKube, steps: Sequence[Step]) -> None:
        self._kube = kube
        self._steps = steps
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for step in self._steps:
            if self.closed:
                return
            if isinstance(step, Hold):
                if not self._kube.hold(self):
                    return
            elif isinstance(step, Advance):
                self._kube.clock.now += step.seconds
            elif isinstance(step, BaseException):
                raise step
            else:
                yield step

    def close(self) -> None:
        self._kube.close(self)


class RecordedWaits(random.Random):
    """Backoff's randomness, handing out the longest wait of each draw and recording it: the
    waits the reflector asked for, as numbers rather than elapsed time."""

    def __init__(self) -> None:
        super().__init__(0)
        self.waits: list[float] = []

    def uniform(self, a: float, b: float) -> float:
        self.waits.append(b)
        return b


@dataclass
class Run:
    kube: ScriptedKube
    cache: ClusterCache
    waits: list[float]  # each backoff wait asked for, in order (0.001 doubling to 0.004)
    changes: list[str]  # what on_change was told
    restarts: list[str]  # what on_restart was told

    def names(self) -> set[str]:
        return {n.name for n in self.cache.snapshot().nodes}

    def gaps(self) -> tuple[str, ...]:
        return self.cache.snapshot().gaps


@contextmanager
def reflecting(
    pages: Sequence[bytes | BaseException], watches: Sequence[Sequence[Step] | BaseException]
) -> Iterator[Run]:
    clock = ManualClock()
    kube = ScriptedKube(clock, pages, watches)
    cache = ClusterCache("uid")
    for other in (Resource.SERVICES, Resource.KUBE_PROXY_PODS):
        cache.replace(other, [])
    rng = RecordedWaits()
    run = Run(kube, cache, rng.waits, [], [])
    reflector = Reflector(
        cast(KubeApi, kube),
        Resource.NODES,
        cache,
        run.changes.append,
        on_restart=lambda resource, why: run.restarts.append(why),
        backoff=Backoff(0.001, 0.004, rng=rng),
        clock=clock,
    )
    reflector.start()
    try:
        yield run
    finally:
        kube.release()
        reflector.stop()
    assert kube.unscripted == []


def node(name: str, version: str, **fields: Any) -> dict[str, Any]:
    obj = node_obj(name)
    obj["metadata"]["resourceVersion"] = version
    obj["spec"].update(fields)
    return obj


def listed(version: str, *names: str) -> bytes:
    items = [node(name, version) for name in names]
    body = {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": version}}
    return json.dumps({**body, "items": items}).encode()


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


def bookmark(version: str) -> bytes:
    obj = {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": version}}
    return event("BOOKMARK", obj)


def error(code: int, reason: str) -> bytes:
    obj = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason}
    return event("ERROR", {**obj, "code": code, "message": "too old resource version"})


UNREADABLE = {"taints": "not-a-list"}  # valid JSON the Node projection cannot read


def test_added_modified_and_deleted_reach_the_cache() -> None:
    tainted = node("node-0", "12", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    stream: list[Step] = [
        event("ADDED", node("node-2", "11")),
        event("MODIFIED", tainted),
        event("DELETED", node("node-1", "13")),
        event(
            "MODIFIED", {**tainted, "metadata": {**tainted["metadata"], "resourceVersion": "14"}}
        ),
        Hold(),
    ]
    with reflecting([listed("10", "node-0", "node-1")], [stream]) as run:
        run.kube.until_held()
        assert run.names() == {"node-0", "node-2"}
        (node_0,) = [n for n in run.cache.snapshot().nodes if n.name == "node-0"]
        assert [t.key for t in node_0.spec.taints] == ["k"]
        assert run.cache.snapshot().complete
        # A MODIFIED that changes nothing lbhc reads (a heartbeat) is not a change.
        assert run.changes == [
            "nodes listed",
            "nodes added node-2",
            "nodes modified node-0",
            "nodes deleted node-1",
        ]
        run.kube.resume()
        run.kube.until_held()  # parked on the next watch
        assert run.kube.calls == [("list", ""), ("watch", "10"), ("watch", "14")]
        assert run.waits == []  # a watch that delivered reconnects at once


def test_a_bookmark_moves_the_version_the_next_watch_starts_from() -> None:
    with reflecting([listed("10", "node-0")], [[bookmark("50")]]) as run:
        run.kube.until_held()
        assert run.kube.calls == [("list", ""), ("watch", "10"), ("watch", "50")]
        assert run.waits == []  # a bookmark is a delivery: no backoff
        assert run.names() == {"node-0"}
        assert run.changes == ["nodes listed"]


def test_an_expired_watch_after_events_relists_at_once_and_the_relist_is_the_truth() -> None:
    pages = [listed("10", "node-0", "node-1"), listed("30", "node-1", "node-3")]
    stream: list[Step] = [event("ADDED", node("node-2", "11")), error(410, "Expired")]
    with reflecting(pages, [stream]) as run:
        run.kube.until_held()
        assert run.kube.calls == [("list", ""), ("watch", "10"), ("list", ""), ("watch", "30")]
        assert run.names() == {"node-1", "node-3"}
        assert run.restarts == ["expired (410): relisting"]
        assert run.waits == []  # history moved on while we watched: no reason to wait
        assert run.cache.snapshot().complete


@pytest.mark.parametrize(
    "expiry",
    [[error(410, "Expired")], ApiException(status=410, reason="Gone")],
    ids=["in-stream ERROR", "HTTP 410"],
)
def test_expired_right_after_a_list_relists_after_a_backoff(
    expiry: list[Step] | BaseException,
) -> None:
    pages = [listed("10", "node-0"), listed("20", "node-0", "node-1")]
    with reflecting(pages, [expiry]) as run:
        run.kube.until_held()
        assert run.kube.calls == [("list", ""), ("watch", "10"), ("list", ""), ("watch", "20")]
        assert run.restarts == ["expired (410): relisting"]
        assert run.waits == [0.001]  # not a spin of full relists
        assert run.names() == {"node-0", "node-1"}


@pytest.mark.parametrize(
    ("last", "names"),
    [
        (event("DELETED", node("node-0", "12", **UNREADABLE)), set()),
        (event("MODIFIED", node("node-0", "12")), {"node-0"}),
    ],
    ids=["deleted", "fixed"],
)
def test_an_undecodable_object_is_a_gap_until_deleted_or_readable(
    last: bytes, names: set[str]
) -> None:
    stream: list[Step] = [event("MODIFIED", node("node-0", "11", **UNREADABLE)), Hold(), last]
    with reflecting([listed("10", "node-0", "node-1")], [stream]) as run:
        run.kube.until_held()
        # What it held before is no longer current: dropped, and the store can vouch for
        # nothing about it until it is readable or gone.
        assert run.names() == {"node-1"}
        assert run.gaps() == (
            "nodes: 1 object(s) could not be decoded "
            "(node-0: object.spec.taints: Input should be a valid array)",
        )
        assert not run.cache.snapshot().complete
        run.kube.resume()
        run.kube.until_held()
        assert run.gaps() == ()
        assert run.names() == names | {"node-1"}
        # The undecodable events still moved the resourceVersion on.
        assert run.kube.calls[-1] == ("watch", "12")


def test_a_watch_that_ends_at_once_backs_off_more_each_time_until_one_delivers() -> None:
    empty: list[Step] = []
    watches: list[list[Step] | BaseException] = [
        empty,
        empty,
        empty,
        empty,
        [event("ADDED", node("node-1", "11"))],
        empty,
    ]
    with reflecting([listed("10", "node-0")], watches) as run:
        run.kube.until_held()
        assert run.waits == [0.001, 0.002, 0.004, 0.004, 0.001]
        assert run.kube.calls == [("list", "")] + [("watch", "10")] * 5 + [("watch", "11")] * 2


@pytest.mark.parametrize(
    ("open_for", "backs_off"),
    [(0.0, True), (0.999, True), (1.0, False), (300.0, False)],
)
def test_only_a_very_short_empty_watch_backs_off(open_for: float, backs_off: bool) -> None:
    """As client-go's "very short watch": under a second with nothing delivered is a server
    refusing to watch; a watch the server ends after its timeout is not."""
    with reflecting([listed("10", "node-0")], [[Advance(open_for)]]) as run:
        run.kube.until_held()
        assert run.waits == ([0.001] if backs_off else [])
        assert run.kube.calls == [("list", ""), ("watch", "10"), ("watch", "10")]


@pytest.mark.parametrize(
    ("failure", "gap"),
    [
        (
            ApiException(status=500, reason="Internal Server Error"),
            "HTTP 500 Internal Server Error",
        ),
        ([event("ADDED", node("node-1", "11")), error(500, "InternalError")], "RuntimeError"),
        (
            [event("ADDED", node("node-1", "11")), ProtocolError("Connection broken")],
            "ProtocolError",
        ),
    ],
    ids=["HTTP 500", "in-stream ERROR 500", "connection broken"],
)
def test_a_failed_watch_is_a_gap_until_the_next_stream_delivers(
    failure: list[Step] | BaseException, gap: str
) -> None:
    resumed: list[Step] = [Hold(), event("ADDED", node("node-2", "12")), Hold()]
    with reflecting([listed("10", "node-0")], [failure, resumed]) as run:
        run.kube.until_held()
        # Reconnected, nothing read yet: missed events (or a 410) may still be coming.
        assert run.gaps() == (f"nodes watch failed: {gap}",)
        assert run.waits == [0.001]
        seen = "10" if isinstance(failure, BaseException) else "11"
        assert run.kube.calls == [("list", ""), ("watch", "10"), ("watch", seen)]  # no relist
        run.kube.resume()
        run.kube.until_held()
        assert run.gaps() == ()
        assert run.cache.snapshot().complete
        assert "nodes watch resumed" in run.changes


def test_expired_again_right_after_a_relist_waits_even_if_the_last_watch_delivered() -> None:
    pages = [listed("10", "node-0"), listed("30", "node-0"), listed("40", "node-0")]
    watches: list[list[Step] | BaseException] = [
        [event("ADDED", node("node-1", "11")), error(410, "Expired")],
        [error(410, "Expired")],
    ]
    with reflecting(pages, watches) as run:
        run.kube.until_held()
        assert run.kube.calls == [
            ("list", ""),
            ("watch", "10"),
            ("list", ""),
            ("watch", "30"),
            ("list", ""),
            ("watch", "40"),
        ]
        assert run.waits == [0.001]  # only before the third list
