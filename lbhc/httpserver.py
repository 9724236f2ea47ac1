"""The controller's HTTP server for /healthz, /readyz, /metrics and /plan: threaded HTTP/1.1
with whole-body answers, on a port others can reach. It is `Exposed`: only its methods, request
bodies never read, and deadlines on receiving each request and on each write, so no request
can hold a thread or memory for long."""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

# (method, path with query, headers, body) -> (status, headers, body)
Dispatch = Callable[[str, str, Mapping[str, str], bytes], tuple[int, Mapping[str, str], bytes]]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Exposed:
    """Limits for a server reachable from outside the process."""

    methods: frozenset[str] = frozenset({"GET", "HEAD"})  # others: 405, on every path
    # From when the server starts waiting for a request (a new connection or the next one
    # on a kept-alive connection) to its last header: slow or idle clients are cut off.
    request_timeout_sec: float = 10.0
    io_timeout_sec: float = 10.0  # each write of the response (a client that stops reading)


_LIMITS = Exposed()


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


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive and whole-body answers; a stopped server answers nothing. What a
    request gets is the subclass's `serve`."""

    # HTTP/1.1 keeps the clients' pooled connections alive.
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: without TCP_NODELAY, Nagle plus the client's
    # delayed ACK adds ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    server: Server

    def send_response(self, code: int, message: str | None = None) -> None:
        """As the standard library's, without the Server header that names Python's version."""
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def _serve(self) -> None:
        if self.server.stopping.is_set():  # a stopped server answers nothing, even kept-alive
            self.close_connection = True
            return
        self.serve()

    def serve(self) -> None:
        raise NotImplementedError

    def start_reply(self, status: int, headers: Mapping[str, str]) -> None:
        """The status line and `headers`; the caller ends the headers."""
        self.send_response(status)
        if self.close_connection:
            self.send_header("Connection", "close")
        for key, value in headers.items():
            self.send_header(key, value)

    def reply(self, status: int, headers: Mapping[str, str], payload: bytes) -> None:
        self.start_reply(status, headers)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the standard library would write every request to stderr


class _DeadlineReader(io.RawIOBase):
    """The connection's reads, each bounded by what is left of the handler's deadline."""

    def __init__(self, connection: socket.socket, handler: _ExposedHandler) -> None:
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


class _ExposedHandler(Handler):
    dispatch: Dispatch  # set on the per-server subclass
    exposed: Exposed  # likewise
    deadline: float | None = None

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket's own file: reads go through the deadline instead
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + self.exposed.request_timeout_sec
        super().handle_one_request()

    def __getattr__(self, name: str) -> Any:
        # Any method reaches serve, which answers 405 itself (the standard library would
        # answer 501 with its own page).
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def serve(self) -> None:
        self.deadline = None
        self.connection.settimeout(self.exposed.io_timeout_sec)
        if self.headers.get("Content-Length", "0").strip() != "0" or self.headers.get(
            "Transfer-Encoding"
        ):
            # The body is never read (nothing served takes one), so the connection cannot
            # carry another request after it.
            self.close_connection = True
        if self.command not in self.exposed.methods:
            allow = ", ".join(sorted(self.exposed.methods))
            headers = {
                "Allow": allow,
                "Content-Type": "text/plain; charset=utf-8",
                "X-Content-Type-Options": "nosniff",
            }
            self.reply(405, headers, b"method not allowed\n")
            return
        self.reply(*self._dispatch())

    def _dispatch(self) -> tuple[int, Mapping[str, str], bytes]:
        """A failure answers 500 and is logged (path cut short: it is the client's text). A
        body that is not bytes is one: answers are whole, never streamed."""
        try:
            headers = dict(self.headers.items())
            status, answer, payload = type(self).dispatch(self.command, self.path, headers, b"")
            if not isinstance(payload, bytes | bytearray):
                raise TypeError(
                    f"the answer's body is a {type(payload).__name__}, not bytes: "
                    "this server sends whole bodies, it does not stream"
                )
            return status, answer, payload
        except Exception:
            log.exception("%s: %s %.200s failed", self.server.name, self.command, self.path)
            return 500, {"Content-Type": "text/plain; charset=utf-8"}, b"internal error\n"


class Server(ThreadingHTTPServer):
    """Keeps its connections, to cut them when it stops."""

    daemon_threads = True
    block_on_close = False  # a client blocked in a long wait must not hang stop()

    def __init__(self, address: tuple[str, int], handler: type[Handler], name: str) -> None:
        super().__init__(address, handler)
        self.name = name
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client gone away is no error
            super().handle_error(request, client_address)

    def end(self) -> None:
        """Answer nothing more and cut every connection, idle kept-alive ones included: a
        stopped server must not go on answering on them (clients would never notice it went
        away)."""
        self.stopping.set()
        with self._connections_lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)


class ServerThread:
    """A `Server` on http://HOST:PORT (port 0 picks a free one), served from a thread of its
    own: bind/start/stop or `with`. What it serves is the subclass's `_new_server`."""

    def __init__(self, name: str, host: str, port: int) -> None:
        self._name = name
        self._host = host
        self._port = port
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{self._name} is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def bind(self) -> Self:
        """Listen now and serve once started: a caller that must not announce anything
        before its port is known to be free (the controller) fails here, with BindError."""
        with self._lock:
            self._listen()
            return self

    def _new_server(self, address: tuple[str, int]) -> Server:
        raise NotImplementedError

    def _listen(self) -> Server:
        if self._server is None:
            try:
                self._server = self._new_server((self._host, self._port))
            except OSError as exc:  # socketserver has closed the socket already
                raise BindError(self._host, self._port, self._name, exc) from exc
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
        """Idempotent. Every connection is closed, so clients see the server go away."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
        if server is None:
            return
        if thread is not None:  # shutdown() waits for serve_forever(): only once it ran
            server.shutdown()
            server.end()
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


class LoopbackServer(ServerThread):
    """Serve `dispatch` on http://HOST:PORT within the `exposed` limits."""

    def __init__(
        self,
        dispatch: Dispatch,
        name: str,
        host: str = "127.0.0.1",
        port: int = 0,
        exposed: Exposed = _LIMITS,
    ) -> None:
        super().__init__(name, host, port)
        attributes = {"dispatch": staticmethod(dispatch), "exposed": exposed}
        self._handler = type(f"{name}-handler", (_ExposedHandler,), attributes)

    def _new_server(self, address: tuple[str, int]) -> Server:
        return Server(address, self._handler, self._name)
