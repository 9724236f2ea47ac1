"""NodeBackends: one Service's NodePort on every node, as small TCP servers on 127.0.0.1.

A passthrough load balancer delivers a connection's packets to a node VM unchanged, where
kube-proxy's rules hand them to the Service's NodePort. Here each node's NodePort is a
listening socket of its own (127.0.0.1, ephemeral port) and the protocol is a line each way:
for every line the client sends, a serving node answers "<node-name>\\n", so a client can
tell which node served it; a connection stays open for more lines until the client closes it
(short connections do one exchange, long-lived ones one every so often).

Who serves, as kube-proxy decides for the Service's externalTrafficPolicy
(https://kubernetes.io/docs/reference/networking/virtual-ips/#external-traffic-policy):
Cluster (no predicate): every node; Local: only nodes the `serves` predicate names, that is
nodes with a ready local endpoint. On any other node kube-proxy drops the packets: the line is
never answered and the connection never closed.

`vanish(node)`: the node's VM is gone. A deleted VM's packets go nowhere, so every connection
to it, open or new, is silently dropped from then on: never answered, never closed; clients
see timeouts, not resets.

All nodes' sockets are served by one thread with a selector; `add` and `vanish` may be called
from any thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from lbhc.sandbox.datapath.loopback import listening_socket
from lbhc.sandbox.lifecycle import StartedInWith

log = logging.getLogger(__name__)

Serves = Callable[[str], bool]
_READ_SIZE = 4096
_MAX_LINE = 64 * 1024  # a client sending more without a newline is cut off


@dataclass(eq=False)
class _Connection:
    node: str
    sock: socket.socket
    inbox: bytearray = field(default_factory=bytearray)
    outbox: bytearray = field(default_factory=bytearray)


class NodeBackends(StartedInWith):
    """`serves(node)`: whether the node answers (None: every node, the Cluster policy); it is
    asked for every line, so it may follow live state, and must be quick."""

    def __init__(self, serves: Serves | None = None, *, name: str = "nodeport") -> None:
        self._serves = serves
        self.name = name
        self._lock = threading.Lock()  # the maps below
        self._listeners: dict[str, socket.socket] = {}
        self._addresses: dict[str, tuple[str, int]] = {}
        self._vanished: set[str] = set()
        self._answered: dict[str, int] = {}
        self._pending: list[tuple[str, socket.socket]] = []  # listeners to register
        # The loop thread's own state.
        self._selector = selectors.DefaultSelector()
        self._held: list[socket.socket] = []  # connections to vanished nodes: never closed
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._stop = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"backends-{name}", daemon=True)
        self._thread.start()

    # -- nodes ------------------------------------------------------------------------------

    def add(self, node: str) -> tuple[str, int]:
        """Start the node's server if it has none; where it listens. A vanished node stays
        vanished (a VM does not come back under its name)."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"NodeBackends {self.name} is closed")
            address = self._addresses.get(node)
            if address is not None:
                return address
            sock = listening_socket()
            sock.setblocking(False)
            host, port = sock.getsockname()[:2]
            self._listeners[node] = sock
            self._addresses[node] = address = (str(host), int(port))
            self._pending.append((node, sock))
        self._wake()
        return address

    def vanish(self, node: str) -> None:
        """The node's VM is gone: drop every connection to it, open or new, silently."""
        with self._lock:
            self._vanished.add(node)
        self._wake()

    def vanished(self, node: str) -> bool:
        with self._lock:
            return node in self._vanished

    def address(self, node: str) -> tuple[str, int] | None:
        """Where the node's NodePort listens; None for a node never added."""
        with self._lock:
            return self._addresses.get(node)

    def nodes(self) -> set[str]:
        with self._lock:
            return set(self._addresses)

    def listening(self) -> dict[str, tuple[str, int]]:
        """Every node's listening socket's address, as the kernel reports it now."""
        with self._lock:
            listeners = dict(self._listeners)
        found: dict[str, tuple[str, int]] = {}
        for node, sock in listeners.items():
            with contextlib.suppress(OSError):  # closed meanwhile
                host, port = sock.getsockname()[:2]
                found[node] = (str(host), int(port))
        return found

    def answered(self, node: str) -> int:
        """Lines the node has answered."""
        with self._lock:
            return self._answered.get(node, 0)

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop serving and close every socket (held ones included). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop = True
        self._wake()
        self._thread.join(timeout=10)

    # -- the loop -----------------------------------------------------------------------------

    def _wake(self) -> None:
        with self._lock:  # never write to the pipe's number once closed: it may be reused
            if self._wake_w < 0:
                return
            with contextlib.suppress(BlockingIOError):  # already woken
                os.write(self._wake_w, b"x")

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    stop, pending, self._pending = self._stop, self._pending, []
                if stop:
                    return
                for node, sock in pending:
                    self._selector.register(sock, selectors.EVENT_READ, node)
                for key, events in self._selector.select(timeout=1.0):
                    if key.data is None:
                        with contextlib.suppress(BlockingIOError):
                            os.read(self._wake_r, 4096)
                    elif isinstance(key.data, str):
                        self._accept(key.fileobj, key.data)  # type: ignore[arg-type]
                    else:
                        try:
                            self._serve(key.data, events)
                        except Exception:  # one connection's trouble ends it, not the server
                            log.exception("NodeBackends %s: serving %s", self.name, key.data.node)
                            self._close(key.data)
        finally:
            self._shut()

    def _accept(self, listener: socket.socket, node: str) -> None:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        sock.setblocking(False)
        if self.vanished(node):
            self._held.append(sock)  # a gone VM: the client's packets go nowhere
            return
        self._selector.register(sock, selectors.EVENT_READ, _Connection(node, sock))

    def _serve(self, conn: _Connection, events: int) -> None:
        if self.vanished(conn.node):
            self._selector.unregister(conn.sock)
            self._held.append(conn.sock)  # never read, never answered, never closed
            return
        try:
            if events & selectors.EVENT_READ and not self._read(conn):
                self._close(conn)
                return
            if conn.outbox:
                sent = conn.sock.send(conn.outbox)
                del conn.outbox[:sent]
        except BlockingIOError:
            pass
        except OSError:  # reset by the client
            self._close(conn)
            return
        wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.outbox else 0)
        self._selector.modify(conn.sock, wanted, conn)

    def _read(self, conn: _Connection) -> bool:
        """Read what came, answer each whole line the node serves; False at the client's
        end of stream (or a line too long)."""
        data = conn.sock.recv(_READ_SIZE)
        if not data:
            return False
        conn.inbox += data
        lines = conn.inbox.count(b"\n")
        if lines:
            del conn.inbox[: conn.inbox.rfind(b"\n") + 1]
            serving = self._serves is None or self._serves(conn.node)
            if serving:  # else kube-proxy drops them: no answer, no close
                conn.outbox += f"{conn.node}\n".encode() * lines
                with self._lock:
                    self._answered[conn.node] = self._answered.get(conn.node, 0) + lines
        return len(conn.inbox) <= _MAX_LINE

    def _close(self, conn: _Connection) -> None:
        with contextlib.suppress(KeyError, ValueError):  # not registered (any more)
            self._selector.unregister(conn.sock)
        with contextlib.suppress(OSError):
            conn.sock.close()

    def _shut(self) -> None:
        for key in list(self._selector.get_map().values()):
            if isinstance(key.fileobj, socket.socket):
                with contextlib.suppress(OSError):
                    key.fileobj.close()
        for sock in self._held:
            with contextlib.suppress(OSError):
                sock.close()
        with self._lock:
            for _, sock in self._pending:
                sock.close()
            for sock in self._listeners.values():
                sock.close()
            self._listeners.clear()
            self._selector.close()
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1
