"""Tiny backends on 127.0.0.1 for the load generator's tests, one behaviour each.

LineServer serves every connection from one thread with a selector, so that a test can
reset or close the open connections at a moment of its choosing (from the test thread, a
close would wait for a blocked recv; here the server's own thread does it between two
selects). Modes, per line received:
- answer: the node name and "\\n", as the data path's backends do;
- silent: nothing, and the connection stays open (a node whose VM was deleted);
- reset: an RST (SO_LINGER 0, then close: a connection re-hashed to another node);
- close: a clean close (FIN) without an answer;
- garbage: a line far longer than any node name.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

Address = tuple[str, int]
MODES = ("answer", "silent", "reset", "close", "garbage")


def reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class LineServer:
    def __init__(self, mode: str = "answer", name: str = "node-a") -> None:
        assert mode in MODES, mode
        self.mode, self.name = mode, name
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._lock = threading.Lock()  # the fields below, read by the tests
        self._answers: dict[socket.socket, int] = {}  # open connection -> lines answered
        self._buffers: dict[socket.socket, bytes] = {}
        self._commands: list[Callable[[], None]] = []
        self.accepted = 0
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="test-line-server")
        self._thread.start()

    @property
    def address(self) -> Address:
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    def answers(self) -> list[int]:
        """Lines answered on each connection still open."""
        with self._lock:
            return list(self._answers.values())

    def set_mode(self, mode: str) -> None:
        """From the next line on."""
        assert mode in MODES, mode
        self.mode = mode

    def reset_all(self) -> float:
        """Reset every open connection; time.monotonic() just before the first went."""
        return self._in_server_thread(reset)

    def close_all(self) -> float:
        """Close every open connection cleanly (FIN); time.monotonic() just before."""
        return self._in_server_thread(lambda sock: sock.close())

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=5)
        for sock in list(self._answers):
            sock.close()
        self._selector.close()
        self._listener.close()

    def _in_server_thread(self, end: Callable[[socket.socket], None]) -> float:
        done = threading.Event()
        when: list[float] = []

        def command() -> None:
            when.append(time.monotonic())
            for sock in list(self._answers):
                self._drop(sock, end)
            done.set()

        with self._lock:
            self._commands.append(command)
        assert done.wait(5), "the test server did not run the command"
        return when[0]

    def _serve(self) -> None:
        while not self._closing.is_set():
            for key, _ in self._selector.select(0.02):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    self._accept()
                else:
                    self._read(sock)
            with self._lock:
                commands, self._commands = self._commands, []
            for command in commands:
                command()

    def _accept(self) -> None:
        with contextlib.suppress(BlockingIOError):
            sock, _ = self._listener.accept()
            sock.setblocking(False)
            self._selector.register(sock, selectors.EVENT_READ)
            with self._lock:
                self._answers[sock] = 0
                self._buffers[sock] = b""
                self.accepted += 1

    def _read(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(4096)
        except OSError:
            data = b""
        if not data:
            self._drop(sock, socket.socket.close)
            return
        buffer = self._buffers[sock] + data
        while b"\n" in buffer:
            _, buffer = buffer.split(b"\n", 1)
            mode = self.mode
            if mode == "answer":
                sock.sendall(self.name.encode() + b"\n")
                with self._lock:
                    self._answers[sock] += 1
            elif mode == "garbage":
                sock.sendall(b"x" * 4000 + b"\n")
            elif mode in ("reset", "close"):
                self._drop(sock, reset if mode == "reset" else socket.socket.close)
                return
        self._buffers[sock] = buffer

    def _drop(self, sock: socket.socket, end: Callable[[socket.socket], None]) -> None:
        self._selector.unregister(sock)
        with self._lock:
            del self._answers[sock], self._buffers[sock]
        end(sock)


@contextlib.contextmanager
def line_server(mode: str = "answer", name: str = "node-a") -> Iterator[LineServer]:
    server = LineServer(mode, name)
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def refusing_port() -> Iterator[Address]:
    """A port bound (so nothing else takes it) but not listening: connects are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[:2]


@contextlib.contextmanager
def full_backlog() -> Iterator[Address]:
    """A listener that never accepts, its queue already full: Linux drops further SYNs, so a
    connect neither succeeds nor fails until the client gives up (a connect timeout)."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        filler.connect(listener.getsockname())  # takes the one place in the queue
        yield listener.getsockname()[:2]
