"""The fakes' HTTP server: lbhc.httpserver's, plus what only fakes need. Kubernetes watches
are chunked streams of `Iterable[bytes]` bodies; requests of any method are served with their
bodies read (Content-Length or chunked); stop() gives open streams a grace period to end
cleanly. The fakes trust their one test client: none of the controller's `Exposed` limits."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from lbhc.httpserver import Handler, Server, ServerThread

Body = bytes | Iterable[bytes]
# (method, path with query, headers, body) -> (status, headers, body)
Dispatch = Callable[[str, str, Mapping[str, str], bytes], tuple[int, Mapping[str, str], Body]]

_STREAM_DRAIN_SEC = 1.0  # how long stop() lets open streams end cleanly before cutting them


class _StreamingHandler(Handler):
    dispatch: Dispatch  # set on the per-server subclass
    server: _StreamingServer

    def serve(self) -> None:
        # An exception here (a fault dropping the connection) ends the connection unanswered.
        body = self._read_body()  # always read: an unread body would corrupt keep-alive
        headers = dict(self.headers.items())
        status, answer, payload = type(self).dispatch(self.command, self.path, headers, body)
        if isinstance(payload, bytes | bytearray):
            self.reply(status, answer, payload)
            return
        self.start_reply(status, answer)
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


def _peer_closed(connection: socket.socket) -> bool:
    """True once the client has closed or reset its end (a readable socket with no data)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _StreamingServer(Server):
    def __init__(self, address: tuple[str, int], handler: type[Handler], name: str) -> None:
        super().__init__(address, handler, name)
        self._streams: set[socket.socket] = set()
        self._streams_changed = threading.Condition()

    def stream_opened(self, connection: socket.socket) -> None:
        with self._streams_changed:
            self._streams.add(connection)

    def stream_closed(self, connection: socket.socket) -> None:
        with self._streams_changed:
            self._streams.discard(connection)
            self._streams_changed.notify_all()

    def end(self) -> None:
        """Let open streams end cleanly within _STREAM_DRAIN_SEC, then cut every connection."""
        self.stopping.set()  # streams see it between chunks and end with the last chunk
        deadline = time.monotonic() + _STREAM_DRAIN_SEC
        with self._streams_changed:
            while self._streams and (left := deadline - time.monotonic()) > 0:
                self._streams_changed.wait(left)
        super().end()  # a stream's connection is one of the server's: cut with the rest


class StreamingServer(ServerThread):
    """Serve `dispatch` on http://HOST:PORT (port 0 picks a free one); start/stop or `with`.
    A body that is an iterable of bytes is sent chunked, a chunk as it comes; an empty chunk
    is a tick that lets the server notice a stop or a client gone. stop() gives open streams
    up to _STREAM_DRAIN_SEC to end cleanly, then closes every connection."""

    def __init__(
        self, dispatch: Dispatch, name: str, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(name, host, port)
        attributes = {"dispatch": staticmethod(dispatch)}
        self._handler = type(f"{name}-handler", (_StreamingHandler,), attributes)
        self._stopping = threading.Event()

    @property
    def stopping(self) -> threading.Event:
        """Set by stop(): long-running dispatches (streams) may wait on it to end early."""
        return self._stopping

    def _new_server(self, address: tuple[str, int]) -> Server:
        server = _StreamingServer(address, self._handler, self._name)
        self._stopping = server.stopping
        return server
