"""A real HTTP/1.1 server on 127.0.0.1 serving a KubeFake, for real clients over sockets."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from .fake import KubeFake


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps the clients' pooled connections alive; every response has Content-Length.
    protocol_version = "HTTP/1.1"
    server_version = "KubeFake/1"
    # Headers and body are separate writes: without TCP_NODELAY, Nagle plus the client's
    # delayed ACK adds ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    fake: KubeFake  # set on the per-server subclass

    def _serve(self) -> None:
        self._drain_body()
        response = self.fake.handle(self.command, self.path, dict(self.headers.items()))
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _drain_body(self) -> None:
        """Nothing reads request bodies yet, but an unread body would corrupt keep-alive."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                self.rfile.read(size + 2)  # the chunk and its CRLF
            while self.rfile.readline().strip():  # trailers up to the blank line
                pass
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the journal is the record


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait on a client holding a connection open


class KubeFakeServer:
    """Serve `fake` on http://127.0.0.1:PORT (port 0 picks a free one); start/stop or `with`."""

    def __init__(self, fake: KubeFake, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fake = fake
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> KubeFakeServer:
        with self._lock:
            if self._server is not None:
                return self
            handler = type("KubeFakeHandler", (_Handler,), {"fake": self.fake})
            self._server = _Server((self._host, self._port), handler)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.01},  # stop() waits up to one poll
                name="kube-fake-server",
                daemon=True,
            )
            self._thread.start()
            return self

    def stop(self) -> None:
        with self._lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> KubeFakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
