"""A small threaded HTTP/1.1 server: the controller's /healthz, /readyz and /metrics, and the
fakes that real clients talk to over real sockets. Responses are whole bodies or chunked
streams (watches).

The fakes trust their one test client. A server others can reach (the controller's health
port) is `Exposed`: only its methods, request bodies never read, and a deadline on receiving
each request, so no request can hold a thread or memory for long."""

from __future__ import annotations

import contextlib
import io
import logging
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

Body = bytes | Iterable[bytes]
# (method, path with query, headers, body) -> (status, headers, body)
Dispatch = Callable[[str, str, Mapping[str, str], bytes], tuple[int, Mapping[str, str], Body]]

_STREAM_DRAIN_SEC = 1.0  # how long stop() lets open streams end cleanly before cutting them

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Exposed:
    """Limits for a server reachable from outside the process."""

    methods: frozenset[str] = frozenset({"GET", "HEAD"})  # others: 405, on every path
    # From when the server starts waiting for a request (a new connection or the next one
    # on a kept-alive connection) to its last header: slow or idle clients are cut off.
    request_timeout_sec: float = 10.0
    io_timeout_sec: float = 10.0  # each write of the response (a client that stops reading)


class BindError(OSError):
    """A server could not listen on its address (the port is taken, the address is not this
    host's, a privileged port): one line naming the address and, once the caller has said
    which, the flag that set it."""

    def __init__(self, host: str, port: int, name: str, cause: OSError, flag: str = "") -> None:
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.host, self.port, self.name, self.cause, self.flag = host, port, name, cause, flag

    def with_flag(self, flag: str) -> BindError:
        """The same failure, naming the flag (or setting) the address came from."""
        return BindError(self.host, self.port, self.name, self.cause, flag)

    def __str__(self) -> str:
        import errno

        reason = (self.cause.strerror or str(self.cause)).lower()
        where = f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"
        source = self.flag or self.name
        if self.cause.errno == errno.EADDRINUSE:
            fix = f"stop what holds port {self.port}, or pass another " + (self.flag or "port")
        else:
            fix = "pass an address of this host" + (f" with {self.flag}" if self.flag else "")
        return f"cannot listen on {where} ({source}): {reason}; {fix}"


class _DeadlineReader(io.RawIOBase):
    """The connection's reads, each bounded by what is left of the handler's deadline."""

    def __init__(self, connection: socket.socket, handler: _Handler) -> None:
        self._connection = connection
        self._handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        deadline = self._handler.deadline
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("request not received in time")
            self._connection.settimeout(left)
        return self._connection.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps the clients' pooled connections alive.
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: without TCP_NODELAY, Nagle plus the client's
    # delayed ACK adds ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    dispatch: Dispatch  # set on the per-server subclass
    exposed: Exposed | None = None  # likewise
    deadline: float | None = None
    server: _Server

    def setup(self) -> None:
        super().setup()
        if self.exposed is not None:
            self.rfile.close()  # the socket's own file: reads go through the deadline instead
            self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))

    def handle_one_request(self) -> None:
        if self.exposed is not None:
            self.deadline = time.monotonic() + self.exposed.request_timeout_sec
        super().handle_one_request()

    def __getattr__(self, name: str) -> Any:
        # Any method reaches _serve on an exposed server, which answers 405 itself (the
        # standard library would answer 501 with its own page).
        if name.startswith("do_") and self.exposed is not None:
            return self._serve
        raise AttributeError(name)

    def send_response(self, code: int, message: str | None = None) -> None:
        """As the standard library's, without the Server header that names Python's version."""
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def _serve(self) -> None:
        if self.server.stopping.is_set():  # a stopped server answers nothing, even kept-alive
            self.close_connection = True
            return
        if self.exposed is not None:
            self._serve_exposed(self.exposed)
            return
        body = self._read_body()  # always read: an unread body would corrupt keep-alive
        headers = dict(self.headers.items())
        self._reply(*type(self).dispatch(self.command, self.path, headers, body))

    def _serve_exposed(self, exposed: Exposed) -> None:
        self.deadline = None
        self.connection.settimeout(exposed.io_timeout_sec)
        if self.headers.get("Content-Length", "0").strip() != "0" or self.headers.get(
            "Transfer-Encoding"
        ):
            # The body is never read (nothing served takes one), so the connection cannot
            # carry another request after it.
            self.close_connection = True
        if self.command not in exposed.methods:
            allow = ", ".join(sorted(exposed.methods))
            headers = {
                "Allow": allow,
                "Content-Type": "text/plain; charset=utf-8",
                "X-Content-Type-Options": "nosniff",
            }
            self._reply(405, headers, b"method not allowed\n")
            return
        self._reply(*self._dispatch(b""))

    def _dispatch(self, body: bytes) -> tuple[int, Mapping[str, str], Body]:
        """A failure answers 500 and is logged (path cut short: it is the client's text)."""
        try:
            headers = dict(self.headers.items())
            return type(self).dispatch(self.command, self.path, headers, body)
        except Exception:
            log.exception("%s: %s %.200s failed", self.server.name, self.command, self.path)
            return 500, {"Content-Type": "text/plain; charset=utf-8"}, b"internal error\n"

    def _reply(self, status: int, headers: Mapping[str, str], payload: Body) -> None:
        self.send_response(status)
        if self.close_connection:
            self.send_header("Connection", "close")
        for key, value in headers.items():
            self.send_header(key, value)
        if isinstance(payload, bytes | bytearray):
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._stream(payload)

    def _stream(self, chunks: Iterable[bytes]) -> None:
        iterator = iter(chunks)
        self.server.stream_opened(self.connection)
        clean = False
        try:
            while not self.server.stopping.is_set():
                try:
                    chunk = next(iterator)
                except StopIteration:
                    break
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                elif _peer_closed(self.connection):
                    return
            self.wfile.write(b"0\r\n\r\n")
            clean = True
        except Exception:
            # OSError: the client went away (BrokenPipe, ConnectionReset) or stop() cut the
            # socket; anything else is the stream's own way to end the connection abruptly.
            pass
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()  # runs the generator's cleanup now, not at garbage collection
            self.server.stream_closed(self.connection)
            if not clean:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the chunk's CRLF
            while self.rfile.readline().strip():  # trailers up to the blank line
                pass
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the fakes' journals are the record


def _peer_closed(connection: socket.socket) -> bool:
    """True once the client has closed or reset its end (a readable socket with no data)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a client blocked in a long wait must not hang stop()

    def __init__(self, address: tuple[str, int], handler: type[_Handler], name: str) -> None:
        super().__init__(address, handler)
        self.name = name
        self.stopping = threading.Event()
        self._streams: set[socket.socket] = set()
        self._streams_changed = threading.Condition()
        self._connections: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._streams_changed:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._streams_changed:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client gone away is no error
            super().handle_error(request, client_address)

    def stream_opened(self, connection: socket.socket) -> None:
        with self._streams_changed:
            self._streams.add(connection)

    def stream_closed(self, connection: socket.socket) -> None:
        with self._streams_changed:
            self._streams.discard(connection)
            self._streams_changed.notify_all()

    def end_streams(self, grace: float) -> None:
        """Let open streams end cleanly within `grace` seconds, then cut every connection."""
        self.stopping.set()
        deadline = time.monotonic() + grace
        with self._streams_changed:
            while self._streams and (left := deadline - time.monotonic()) > 0:
                self._streams_changed.wait(left)
            # Cut what is left, idle kept-alive connections included: a stopped server must
            # not go on answering on them (clients would never notice it went away).
            for connection in self._streams | self._connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)


class LoopbackServer:
    """Serve `dispatch` on http://HOST:PORT (port 0 picks a free one); start/stop or `with`."""

    def __init__(
        self,
        dispatch: Dispatch,
        name: str,
        host: str = "127.0.0.1",
        port: int = 0,
        exposed: Exposed | None = None,
    ) -> None:
        self._dispatch = dispatch
        self._exposed = exposed
        self._name = name
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{self._name} is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def stopping(self) -> threading.Event:
        """Set by stop(): long-running dispatches (streams) may wait on it to end early."""
        return self._stopping

    def bind(self) -> Self:
        """Listen now and serve once started: a caller that must not announce anything
        before its port is known to be free (the controller) fails here, with BindError."""
        with self._lock:
            self._listen()
            return self

    def _listen(self) -> _Server:
        if self._server is None:
            attributes = {"dispatch": staticmethod(self._dispatch), "exposed": self._exposed}
            handler = type(f"{self._name}-handler", (_Handler,), attributes)
            try:
                self._server = _Server((self._host, self._port), handler, self._name)
            except OSError as exc:  # socketserver has closed the socket already
                raise BindError(self._host, self._port, self._name, exc) from exc
            self._stopping = self._server.stopping
        return self._server

    def start(self) -> Self:
        with self._lock:
            if self._thread is not None:
                return self
            server = self._listen()
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.01},  # stop() waits up to one poll
                name=self._name,
                daemon=True,
            )
            self._thread.start()
            return self

    def stop(self) -> None:
        """Idempotent. Open streams get up to a second to end cleanly; then every connection
        is closed, so clients see the server go away."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
        if server is None:
            return
        if thread is not None:  # shutdown() waits for serve_forever(): only once it ran
            server.shutdown()
            server.end_streams(_STREAM_DRAIN_SEC)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
