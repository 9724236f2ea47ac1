"""The fakes' server (lbhc.sandbox.streaming): streamed bodies chunked, flushed per chunk,
ended by the client going away, cut by an exception, and never hanging stop(); request bodies
read whole, sent with a length or chunked."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

import pytest

from lbhc.sandbox.streaming import Body, StreamingServer

BOUND_SEC = 3.0  # generous for a loaded machine; the fast paths take a tick (~0.1 s)


class Gates:
    """What the stream under test waits for and reports, with deadlines instead of sleeps."""

    def __init__(self) -> None:
        self.go = threading.Event()  # lets the stream send its second chunk
        self.closed = threading.Event()  # the stream's cleanup ran
        self.block = threading.Event()  # a misbehaving stream blocks on this without ticking


def ticking(gates: Gates, fail: bool = False) -> Iterator[bytes]:
    try:
        yield b"first\n"
        while not gates.go.wait(0.02):
            yield b""  # a tick: lets the server notice a stop or a client gone
        if fail:
            raise RuntimeError("cut")
        yield b"second\n"
    finally:
        gates.closed.set()


def forever(gates: Gates) -> Iterator[bytes]:
    try:
        yield b"first\n"
        while True:
            yield b""
            time.sleep(0.02)
    finally:
        gates.closed.set()


def stuck(gates: Gates) -> Iterator[bytes]:
    yield b"first\n"
    gates.block.wait(30)  # never ticks: stop() must cut it
    yield b"late\n"


@pytest.fixture
def gates() -> Gates:
    return Gates()


@pytest.fixture
def server(gates: Gates) -> Iterator[StreamingServer]:
    def dispatch(
        method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], Body]:
        streams = {
            "/ticking": lambda: ticking(gates),
            "/failing": lambda: ticking(gates, fail=True),
            "/forever": lambda: forever(gates),
            "/stuck": lambda: stuck(gates),
        }
        if path in streams:
            return 200, {"Content-Type": "text/plain"}, streams[path]()
        if path == "/echo":
            return 200, {"Content-Type": "text/plain"}, method.encode() + b" " + body
        return 200, {"Content-Type": "text/plain"}, b"plain"

    with StreamingServer(dispatch, "loopback-test") as running:
        yield running
        gates.block.set()


def connect(server: StreamingServer) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=BOUND_SEC)


def test_chunks_are_flushed_one_by_one_and_the_connection_is_reused(
    server: StreamingServer, gates: Gates
) -> None:
    conn = connect(server)
    conn.request("GET", "/ticking")
    response = conn.getresponse()

    assert response.getheader("Transfer-Encoding") == "chunked"
    assert response.getheader("Content-Length") is None
    assert response.readline() == b"first\n"  # before the stream may go on: flushed
    gates.go.set()
    assert response.read() == b"second\n"  # then the terminating chunk ends it cleanly

    conn.request("GET", "/plain")  # keep-alive: same connection
    plain = conn.getresponse()
    assert (plain.read(), plain.getheader("Content-Length")) == (b"plain", "5")
    conn.close()


def test_a_client_that_goes_away_ends_the_stream(server: StreamingServer, gates: Gates) -> None:
    conn = connect(server)
    conn.request("GET", "/forever")
    response = conn.getresponse()
    assert response.readline() == b"first\n"

    conn.close()

    assert gates.closed.wait(BOUND_SEC), "the stream was not closed after the client left"


def test_an_exception_cuts_the_connection_without_the_last_chunk(
    server: StreamingServer, gates: Gates
) -> None:
    conn = connect(server)
    conn.request("GET", "/failing")
    response = conn.getresponse()
    assert response.readline() == b"first\n"
    gates.go.set()

    with pytest.raises(http.client.IncompleteRead):
        response.read()
    conn.close()


@pytest.mark.parametrize("path", ["/forever", "/stuck"])
def test_stop_does_not_hang_on_open_streams(server: StreamingServer, path: str) -> None:
    conns = [connect(server) for _ in range(3)]
    responses = []
    for conn in conns:
        conn.request("GET", path)
        responses.append(conn.getresponse())
        assert responses[-1].readline() == b"first\n"

    stopper = threading.Thread(target=server.stop)
    started = time.monotonic()
    stopper.start()
    stopper.join(BOUND_SEC)

    assert not stopper.is_alive(), f"stop() hung with open {path} streams"
    for response in responses:
        # A ticking stream ends cleanly; a stuck one is cut. Either way the client is told.
        try:
            assert response.read() == b""
        except http.client.IncompleteRead:
            assert path == "/stuck"
    assert time.monotonic() - started < BOUND_SEC
    for conn in conns:
        conn.close()


def test_a_stopped_server_does_not_answer_on_kept_alive_connections(
    server: StreamingServer,
) -> None:
    conn = connect(server)
    conn.request("GET", "/plain")
    assert conn.getresponse().read() == b"plain"

    server.stop()

    # The idle connection was closed with the server: the client sees it gone, not answers.
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        conn.request("GET", "/plain")
        conn.getresponse()
    conn.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_request_bodies_are_read_whole_with_a_length_or_chunked(
    server: StreamingServer, method: str
) -> None:
    conn = connect(server)
    conn.request(method, "/echo", body=b"sized body")
    assert conn.getresponse().read() == method.encode() + b" sized body"

    chunks = iter([b"chunked ", b"in ", b"three"])  # an iterable: http.client sends it chunked
    conn.request(method, "/echo", body=chunks, encode_chunked=True)
    assert conn.getresponse().read() == method.encode() + b" chunked in three"

    conn.request("GET", "/plain")  # each body was read to its end: the connection goes on
    assert conn.getresponse().read() == b"plain"
    conn.close()
