"""A real HTTP/1.1 server on 127.0.0.1 serving a ComputeFake (for real clients over sockets)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from .fake import ComputeFake


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections alive; every response carries Content-Length.
    protocol_version = "HTTP/1.1"
    server_version = "ComputeFake/1"
    # Headers and body are separate writes; without TCP_NODELAY, Nagle plus the client's delayed
    # ACK adds ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    fake: ComputeFake  # set on the per-server subclass

    def _serve(self) -> None:
        body = self._read_body()
        status, headers, payload = self.fake.handle(
            self.command, self.path, None, dict(self.headers.items()), body
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
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the journal is the record


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a `wait` may be blocked; stop() must not hang on it


class ComputeFakeServer:
    """Serve `fake` on http://127.0.0.1:PORT (port 0 picks a free one); start/stop or `with`."""

    def __init__(self, fake: ComputeFake, host: str = "127.0.0.1", port: int = 0) -> None:
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

    def start(self) -> ComputeFakeServer:
        with self._lock:
            if self._server is not None:
                return self
            handler = type("ComputeFakeHandler", (_Handler,), {"fake": self.fake})
            self._server = _Server((self._host, self._port), handler)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.02},  # bounds how long stop() waits
                name="compute-fake-server",
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

    def __enter__(self) -> ComputeFakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
