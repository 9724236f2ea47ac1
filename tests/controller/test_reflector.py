"""The reflector against the kube fake over HTTP: when a store may call itself current."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lbhc.controller.backoff import Backoff
from lbhc.controller.cache import ClusterCache
from lbhc.controller.reflector import Reflector
from lbhc.kube.client import KubeApi, KubeConfig, Resource, make_api_client
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.controller.harness import node_obj, wait_for


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
