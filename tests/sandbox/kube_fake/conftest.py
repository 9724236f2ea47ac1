"""Fixtures for the fake API server's own tests: the fake on a real socket, the real
kubernetes client (and its raw watch streams) pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.kube_fixtures import api_client, kube_fake, kube_server, reader
from tests.sandbox.kube_fake.support import WatchStream

__all__ = ["api_client", "kube_fake", "kube_server", "reader"]


@pytest.fixture
def core(api_client: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(api_client)


@pytest.fixture
def watches() -> Iterator[Callable[[Any], WatchStream]]:
    """Open watches (`watches(core.list_node(watch=True, ..., _preload_content=False))`),
    closed at the end of the test."""
    opened: list[WatchStream] = []

    def open_stream(response: Any) -> WatchStream:
        opened.append(WatchStream(response))
        return opened[-1]

    yield open_stream
    for stream in opened:
        stream.close()
