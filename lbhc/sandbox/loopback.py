"""A real HTTP/1.1 server on 127.0.0.1 in a background thread, for the fakes: real clients
talk to them over real sockets, exactly as they would to Google or a kube-apiserver."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

# (method, path with query, headers, body) -> (status, headers, body)
Dispatch = Callable[[str, str, Mapping[str, str], bytes], tuple[int, Mapping[str, str], bytes]]


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps the clients' pooled connections alive; every response has Content-Length.
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: without TCP_NODELAY, Nagle plus the client's
    # delayed ACK adds ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    dispatch: Dispatch  # set on the per-server subclass

    def _serve(self) -> None:
        body = self._read_body()  # always read: an unread body would corrupt keep-alive
        status, headers, payload = type(self).dispatch(
            self.command, self.path, dict(self.headers.items()), body
        )
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a client blocked in a long wait must not hang stop()


class LoopbackServer:
    """Serve `dispatch` on http://HOST:PORT (port 0 picks a free one); start/stop or `with`."""

    def __init__(
        self, dispatch: Dispatch, name: str, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._dispatch = dispatch
        self._name = name
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{self._name} is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        with self._lock:
            if self._server is not None:
                return self
            handler = type(
                f"{self._name}-handler", (_Handler,), {"dispatch": staticmethod(self._dispatch)}
            )
            self._server = _Server((self._host, self._port), handler)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.01},  # stop() waits up to one poll
                name=self._name,
                daemon=True,
            )
            self._thread.start()
            return self

    def stop(self) -> None:
        """Idempotent."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
        if server is None:
            return
        server.shutdown()
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
