"""The controller's HTTP server serves /healthz, /livez, /readyz, /metrics and /plan and
nothing else: every other path is 404, every method but GET and HEAD 405 (with Allow), and no
hostile request (traversal, absolute URIs, huge or endless headers, bodies it never reads,
slow or idle clients, garbage) can crash it, hang it, or keep it from answering others.
Raw sockets, so the requests are exactly as written."""

from __future__ import annotations

import ast
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pytest

from lbhc import httpserver
from lbhc.controller.http import health_server
from lbhc.controller.metrics import Metrics
from lbhc.httpserver import Exposed, LoopbackServer
from tests.chaos.record import record
from tests.controller.harness import world
from tests.waiting import wait_for

LIMITS = Exposed(request_timeout_sec=0.5, io_timeout_sec=1.0)
GENEROUS = 15.0  # any wait for the server: a bound on hanging, never a speed claim
PLAN = {"changes": [], "summary": {"create": 0}}
SLOW_CLIENTS = 20  # slowloris connections at once
HELD_AT_STOP = 10  # connections open (half of them mid-request) when the server stops


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    def ready() -> tuple[bool, str]:
        return True, "ok"

    with health_server("127.0.0.1:0", Metrics(), ready, lambda: PLAN, LIMITS) as s:
        yield s


def connect(server: LoopbackServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=GENEROUS)
    return sock


def read_answer(stream: BinaryIO, head: bool = False) -> Answer:
    """One response from `stream` (sock.makefile("rb")), leaving any next one unread."""
    status_line = stream.readline()
    assert status_line, "connection closed without an answer"
    if not status_line.startswith(b"HTTP/"):  # an HTTP/0.9 answer: the body alone, then close
        body = status_line + stream.read()
        return Answer(int(re.search(rb"Error code: (\d+)", body)[1]), {}, body)  # type: ignore[index]
    headers = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    length = 0 if head else int(headers.get("content-length", "0"))
    return Answer(int(status_line.split()[1]), headers, stream.read(length))


def ask(server: LoopbackServer, raw: bytes) -> Answer:
    with connect(server) as sock, sock.makefile("rb") as stream:
        sock.sendall(raw)
        return read_answer(stream, head=raw.startswith(b"HEAD "))


def get(path: str, method: str = "GET", extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: lbhc\r\n{extra}\r\n".encode()


def still_serving(server: LoopbackServer) -> bool:
    return ask(server, get("/healthz")).status == 200


# ---- what is served, and only that --------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "status", "content_type"),
    [
        ("/healthz", 200, "text/plain"),
        ("/livez", 200, "text/plain"),
        ("/readyz", 200, "text/plain"),
        ("/metrics", 200, "text/plain; version="),
        ("/plan", 200, "application/json"),
        ("/healthz?verbose=1", 200, "text/plain"),
        ("//healthz", 200, "text/plain"),  # the standard library collapses leading slashes
    ],
)
def test_the_served_paths(
    server: LoopbackServer, path: str, status: int, content_type: str
) -> None:
    answer = ask(server, get(path))
    assert answer.status == status
    assert answer.headers["content-type"].startswith(content_type)
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-store"
    assert "server" not in answer.headers  # no software or version named
    if path == "/plan":
        assert json.loads(answer.body) == PLAN


NOT_SERVED = [
    "/", "/healthz/", "/HEALTHZ", "/./healthz", "/healthz/../metrics", "/metrics/../plan",
    "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd",
    "/%68ealthz", "/healthz%00", "/readyz;x", "/plan.json", "/metrics/", "/.env",
    "/debug/pprof/", "/api/v1/namespaces", "/favicon.ico", "*",
    "http://127.0.0.1/healthz", "http://evil.example/metrics", "https://x/plan",
    "/" + "a" * 8000,
]  # fmt: skip


@pytest.mark.parametrize("path", NOT_SERVED)
def test_every_other_path_is_404(server: LoopbackServer, path: str) -> None:
    answer = ask(server, get(path))
    assert (answer.status, answer.body) == (404, b"not found\n")
    assert answer.headers["x-content-type-options"] == "nosniff"


METHODS = ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "PROPFIND", "BREW"]
METHODS += ["get", "Get", "M-SEARCH"]  # methods are case-sensitive: `get` is not GET


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", ["/healthz", "/metrics", "/plan", "/nowhere"])
def test_every_other_method_is_405_on_every_path(
    server: LoopbackServer, method: str, path: str
) -> None:
    answer = ask(server, get(path, method))
    assert (answer.status, answer.headers["allow"]) == (405, "GET, HEAD")
    assert "server" not in answer.headers


def test_head_answers_headers_only(server: LoopbackServer) -> None:
    with connect(server) as sock, sock.makefile("rb") as stream:
        sock.sendall(get("/metrics", "HEAD") + get("/healthz"))  # pipelined on one connection
        head = read_answer(stream, head=True)
        assert (head.status, head.body) == (200, b"")
        assert int(head.headers["content-length"]) > 0
        assert read_answer(stream).body == b"ok\n"  # HEAD sent no body to confuse the next


# ---- bodies are never read ---------------------------------------------------------------


BODIES = [
    (get("/healthz", "POST", "Content-Length: 1000000000000\r\n") + b"partial", 405),
    (get("/healthz", extra="Content-Length: 1000000000\r\n"), 200),
    (get("/healthz", extra="Content-Length: not-a-number\r\n"), 200),
    (get("/metrics", extra="Transfer-Encoding: chunked\r\n") + b"ffffffff\r\nxx", 200),
    (get("/plan", "PUT", "Transfer-Encoding: gzip, chunked\r\n"), 405),
]


@pytest.mark.parametrize(("request_head", "status"), BODIES)
def test_a_body_is_never_waited_for_and_ends_the_connection(
    server: LoopbackServer, request_head: bytes, status: int
) -> None:
    """The answer comes although the announced body never does (the server would otherwise
    wait for it and time out); the connection then closes, as its rest is unread body."""
    with connect(server) as sock, sock.makefile("rb") as stream:
        sock.sendall(request_head)
        answer = read_answer(stream)
        assert (answer.status, answer.headers["connection"]) == (status, "close")
        assert stream.read(1) == b""


# ---- malformed, huge, slow and idle requests ----------------------------------------------


MALFORMED = [
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
    (get("/healthz", extra="X-Big: " + "b" * 70_000 + "\r\n"), 431),
    (get("/healthz", extra="".join(f"X-{i}: v\r\n" for i in range(150))), 431),
    (b"GET /healthz HTTP/9.9\r\n\r\n", 505),
    (b"GET /healthz HTTP/1.1 extra\r\n\r\n", 400),
    (b"\x00\xff\xfe garbage \x01\r\n\r\n", 400),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40 + b"\r\n\r\n", 400),
    (get("/healthz", extra="Bad Header Without Colon\r\n"), 200),
]


@pytest.mark.parametrize(("raw", "status"), MALFORMED)
def test_malformed_and_huge_requests_get_an_answer(
    server: LoopbackServer, raw: bytes, status: int
) -> None:
    assert ask(server, raw).status == status
    assert still_serving(server)


def test_an_idle_connection_is_closed(server: LoopbackServer) -> None:
    with connect(server) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""  # the server gave up on it: no request within the limit
        assert time.monotonic() - started < GENEROUS


def test_a_kept_alive_connection_is_closed_when_idle(server: LoopbackServer) -> None:
    with connect(server) as sock, sock.makefile("rb") as stream:
        sock.sendall(get("/healthz"))
        assert read_answer(stream).status == 200
        assert stream.read(1) == b""  # then closed, not held for ever


def test_headers_trickled_slowly_are_cut_off_while_others_are_served(
    server: LoopbackServer,
) -> None:
    """Slowloris: a byte of header every 50 ms never completes within the limit; each
    byte arriving does not extend it. Other clients are answered meanwhile."""
    stop = threading.Event()
    outcome: list[str] = []

    def trickle() -> None:
        with connect(server) as sock:
            try:
                sock.sendall(b"GET /healthz HTTP/1.1\r\n")
                while not stop.is_set():
                    sock.sendall(b"X")
                    time.sleep(0.05)
                outcome.append("never cut off")
            except OSError:
                outcome.append("cut off")

    slow = [threading.Thread(target=trickle, daemon=True) for _ in range(SLOW_CLIENTS)]
    for thread in slow:
        thread.start()
    assert still_serving(server)
    wait_for(lambda: len(outcome) == len(slow), timeout=GENEROUS, what="slow clients cut off")
    stop.set()
    assert outcome == ["cut off"] * len(slow)
    assert still_serving(server)


def test_a_client_that_never_reads_is_dropped(server: LoopbackServer) -> None:
    """Pipelined /metrics requests with nothing read back: the server's writes block, time
    out, and it drops the connection (our sends then fail) while serving others."""
    with connect(server) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        deadline = time.monotonic() + GENEROUS
        with pytest.raises(OSError):  # BrokenPipe or ConnectionReset: the server gave up
            while time.monotonic() < deadline:
                sock.sendall(get("/metrics") * 50)
                assert still_serving(server)
                time.sleep(0.05)


def test_a_failing_handler_answers_500_and_the_server_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def ready() -> tuple[bool, str]:
        raise RuntimeError("cache exploded")

    with health_server("127.0.0.1:0", Metrics(), ready, exposed=LIMITS) as s:
        assert ask(s, get("/readyz")).status == 500
        assert ask(s, get("/plan")).status == 503  # no pass yet
        assert still_serving(s)
    assert "cache exploded" in caplog.text


def test_stop_returns_with_hostile_connections_open() -> None:
    with ExitStack() as stack:
        s = health_server("127.0.0.1:0", Metrics(), lambda: (True, "ok"), exposed=Exposed())
        s.start()
        socks = [stack.enter_context(connect(s)) for _ in range(HELD_AT_STOP)]
        for sock in socks[:5]:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")  # never finished
        started = time.monotonic()
        s.stop()
        assert time.monotonic() - started < GENEROUS


# ---- whole bodies only, nothing of the sandbox -------------------------------------------


def test_an_iterable_body_is_refused_not_streamed(caplog: pytest.LogCaptureFixture) -> None:
    """Streaming is the fakes' (lbhc.sandbox.streaming), not the controller's: a dispatch
    that returns an iterable gets a 500 with a length, and the reason in the log."""
    closed = threading.Event()

    def chunks() -> Iterator[bytes]:
        try:
            yield b"never sent\n"
        finally:
            closed.set()

    def dispatch(
        method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        if path == "/stream":
            return 200, {}, chunks()  # type: ignore[return-value]  # what the type forbids
        return 200, {}, b"whole\n"

    with (
        LoopbackServer(dispatch, "no-streams", exposed=LIMITS) as s,
        connect(s) as sock,
        sock.makefile("rb") as stream,
    ):
        sock.sendall(get("/stream") + get("/whole"))  # pipelined on one connection
        refused = read_answer(stream)
        assert (refused.status, refused.body) == (500, b"internal error\n")
        assert "transfer-encoding" not in refused.headers
        assert read_answer(stream).body == b"whole\n"  # the connection was not broken
    assert "generator, not bytes: this server sends whole bodies, it does not stream" in (
        caplog.text
    )


def test_a_stopped_server_closes_its_kept_alive_connections() -> None:
    """At once, not when the idle connection's request deadline (longer than our read's
    timeout) would have closed it."""
    patient = Exposed(request_timeout_sec=GENEROUS * 4)
    with (
        health_server("127.0.0.1:0", Metrics(), lambda: (True, "ok"), exposed=patient) as s,
        connect(s) as sock,
        sock.makefile("rb") as stream,
    ):
        sock.sendall(get("/healthz"))
        assert read_answer(stream).status == 200
        s.stop()
        assert stream.read(1) == b""  # closed with the server: clients see it gone


def test_the_server_needs_nothing_of_the_sandbox() -> None:
    """The controller image leaves lbhc/sandbox out (.dockerignore): the module imports none
    of it, now or later (a function's own import included)."""
    source = Path(httpserver.__file__)
    imported = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert not [name for name in imported if name.startswith(("lbhc.sandbox", "."))]
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, lbhc.httpserver; print(*sorted(sys.modules))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert "lbhc.httpserver" in loaded
    assert not [name for name in loaded if name.startswith("lbhc.sandbox")]


# ---- the controller's own server has these limits -----------------------------------------


def test_the_running_controller_serves_with_the_limits() -> None:
    with world() as w:
        app = w.start()
        wait_for(lambda: app.http is not None, what="the HTTP server")
        assert app.http is not None
        probes = [ask(app.http, get(path, method)) for path, method in PROBES]
        assert [a.status for a in probes] == [status for status, *_ in EXPECTED]
        assert all("server" not in a.headers for a in probes)
    record(
        "security",
        "http-server",
        paths_probed=len(NOT_SERVED) + 7,
        methods_probed=len(METHODS),
        hostile_requests=len(MALFORMED) + len(BODIES) + SLOW_CLIENTS + HELD_AT_STOP + 3,
    )


PROBES = [("/healthz", "GET"), ("/healthz", "POST"), ("/nope", "GET"), ("/metrics", "DELETE")]
EXPECTED = [(200,), (405,), (404,), (405,)]
