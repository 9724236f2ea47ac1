"""DataPath: a listener on 127.0.0.1 for every TCP forwarding rule of the Compute fake, placing
each new connection on a member of the rule's load balancer as GCE's passthrough network load
balancer does (choice.choose_instance), and relaying it to that member's node backend
(backends.NodeBackends).

It follows the fake's live state: every `poll_sec` it rereads the rules, their members and
the members' health at each rule's IP (frontends.read_frontends: in process, from the health
prober installed in the fake; no API call), opens listeners for new rules, closes those of
deleted ones, and reviews the open flows: one whose instance left the load balancer, or turned
UNHEALTHY unless `keep_established`, is re-hashed, which resets it or drops it; one whose
forwarding rule is gone is dropped (rehash.py says why); one whose node's VM is gone
(NodeBackends.vanish) while its instance is still a member is dropped: the client times out,
until its instance is cut and it is reset.

A new connection with no member to go to (an empty pool, a backend service without backends),
or whose member has no node backend or a vanished one, is dropped: GCE has nowhere to deliver
its packets and a passthrough load balancer answers nothing itself (choice.py). It stays
dropped: a real client's handshake retries could still reach a member added later, but the
emulation accepted the connection already (relay.py) and does not move it.

Listeners, flows and polling share one asyncio loop on one thread; the public methods may be
called from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Self

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.datapath.backends import NodeBackends
from lbhc.sandbox.datapath.choice import Flow, choose_instance
from lbhc.sandbox.datapath.frontends import Frontend, read_frontends
from lbhc.sandbox.datapath.loopback import listening_socket
from lbhc.sandbox.datapath.records import FlowLog, FlowRecord
from lbhc.sandbox.datapath.rehash import established_flow
from lbhc.sandbox.datapath.relay import Relay
from lbhc.sandbox.lifecycle import StartedInWith

log = logging.getLogger(__name__)

BackendsFor = Callable[[Frontend], NodeBackends | None]
NodeOf = Callable[[str], str | None]


def instance_name(instance_url: str) -> str | None:
    """The node standing for an instance when nodes are named as their VMs (as on GKE)."""
    return instance_url.rstrip("/").rsplit("/", 1)[-1] or None


class DataPath(StartedInWith):
    """`backends_for(frontend)`: the NodeBackends of the rule's Service (its NodePort on
    every node), or None (its traffic is dropped). `node_of(instance URL)`: the node standing
    for the instance, or None."""

    def __init__(
        self,
        fake: ComputeFake,
        backends_for: BackendsFor,
        *,
        node_of: NodeOf = instance_name,
        keep_established: bool = True,
        poll_sec: float = 0.05,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if poll_sec <= 0:
            raise ValueError(f"poll_sec: got {poll_sec}; expected more than 0")
        self._fake, self._backends_for, self._node_of = fake, backends_for, node_of
        self.keep_established = keep_established
        self._poll_sec, self._clock = poll_sec, clock
        self._log = FlowLog()
        self._lock = threading.Lock()  # the published views below
        self._addresses: dict[str, tuple[str, int]] = {}
        self._published: dict[str, Frontend] = {}
        self._sockets: list[socket.socket] = []  # the listeners'
        # The loop's own state (its thread only).
        self._frontends: dict[str, Frontend] = {}
        self._servers: dict[str, asyncio.Server] = {}
        self._relays: dict[int, Relay] = {}
        self._handlers: set[asyncio.Task[None]] = set()  # the connections' handlers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None

    # -- what it serves -----------------------------------------------------------------------

    def address(self, rule_name: str) -> tuple[str, int] | None:
        """Where the forwarding rule's listener is; None for a rule it does not serve."""
        with self._lock:
            return self._addresses.get(rule_name)

    def addresses(self) -> dict[str, tuple[str, int]]:
        with self._lock:
            return dict(self._addresses)

    def frontend(self, rule_name: str) -> Frontend | None:
        """The rule as the last poll read it: members, their health, its Service."""
        with self._lock:
            return self._published.get(rule_name)

    def frontends(self) -> dict[str, Frontend]:
        """Every rule served, by name, as the last poll read them."""
        with self._lock:
            return dict(self._published)

    def listening(self) -> list[tuple[str, int]]:
        """Every listener's address, as the kernel reports it now."""
        with self._lock:
            sockets = list(self._sockets)
        found: list[tuple[str, int]] = []
        for sock in sockets:
            with contextlib.suppress(OSError):  # closed meanwhile
                host, port = sock.getsockname()[:2]
                found.append((str(host), int(port)))
        return found

    def flows(self) -> list[FlowRecord]:
        """Every flow so far: ended ones in the order they ended, then the open ones."""
        return self._log.records()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """Open the listeners of the rules there are now, then follow the fake."""
        if self._thread is not None:
            return self
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="data-path", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=30) or not self._thread.is_alive():
            raise RuntimeError("the data path did not start (its log says why)")
        return self

    def sync(self, timeout: float = 10.0) -> None:
        """Reread the fake and review every flow now (the loop does so every poll_sec)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("start() the data path first")

        async def poll() -> None:
            await self._poll()

        asyncio.run_coroutine_threadsafe(poll(), loop).result(timeout)

    def close(self) -> None:
        """Close every listener and flow. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has ended already
            loop.call_soon_threadsafe(self._stop_soon)
        thread.join(timeout=10)

    # -- the loop -----------------------------------------------------------------------------

    def _stop_soon(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    def _run(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
        except Exception:
            log.exception("data path stopped")
        finally:
            self._ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        await self._poll()
        self._ready.set()
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._poll_sec)
            await self._poll()
        await self._shut()

    async def _poll(self) -> None:
        try:
            frontends = read_frontends(self._fake)
        except Exception:  # keep serving what is known; a later poll may succeed
            log.exception("data path: reading the Compute fake failed")
            return
        for name in self._servers.keys() - frontends.keys():
            self._servers.pop(name).close()  # its flows are dropped below
        for name in frontends.keys() - self._servers.keys():
            try:
                self._servers[name] = await asyncio.start_server(
                    partial(self._accepted, name), sock=listening_socket()
                )
            except OSError:  # out of ports or files: tried again at the next poll
                log.exception("data path: no listener for forwarding rule %s", name)
                del frontends[name]
        self._frontends = frontends
        listeners = {name: server.sockets[0] for name, server in self._servers.items()}
        with self._lock:
            self._published = dict(frontends)
            self._sockets = list(listeners.values())
            self._addresses = {
                name: (str(sock.getsockname()[0]), int(sock.getsockname()[1]))
                for name, sock in listeners.items()
            }
        for relay in list(self._relays.values()):
            self._review(relay, frontends.get(relay.rule))

    def _review(self, relay: Relay, frontend: Frontend | None) -> None:
        """Keep, drop or reset an open flow after a change."""
        if not relay.established or relay.instance is None:
            if frontend is None:
                relay.drop()
            return  # never reached a node: it stays dropped
        if frontend is not None and self._backend(frontend, relay.instance) is None:
            relay.drop()  # its VM is gone, while still a member: nobody answers
        verdict = established_flow(
            relay.flow,
            relay.instance,
            frontend,
            keep_established=self.keep_established,
            answers=lambda instance: bool(frontend and self._backend(frontend, instance)),
        )
        if verdict == "drop":
            relay.drop()
        elif verdict == "reset":
            relay.reset()

    async def _accepted(
        self, rule: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        frontend = self._frontends.get(rule)
        client_ip, client_port = writer.get_extra_info("peername")[:2]
        if frontend is None:  # the rule went between accept and now
            writer.close()
            return
        flow = Flow(str(client_ip), int(client_port), frontend.ip, frontend.port)
        instance = choose_instance(flow, frontend.members, frontend.health, frontend.affinity)
        node = None if instance is None else self._node_of(instance)
        backend = None if instance is None else self._backend(frontend, instance)
        flow_id = self._log.open(FlowRecord(rule, int(client_port), instance, node, self._clock()))
        relay = Relay(flow_id, flow, rule, instance, node, (reader, writer), self._log, self._clock)
        self._relays[flow_id] = relay
        handler = asyncio.current_task()
        assert handler is not None  # a connection's handler is a task of its own
        self._handlers.add(handler)
        try:
            await relay.run(backend)
        finally:
            self._relays.pop(flow_id, None)
            self._handlers.discard(handler)

    def _backend(self, frontend: Frontend, instance: str) -> tuple[str, int] | None:
        """Where the instance's node answers for the rule's Service; None when no node stands
        for it, the node has no backend for the Service, or its VM is gone."""
        node = self._node_of(instance)
        backends = self._backends_for(frontend)
        if node is None or backends is None or backends.vanished(node):
            return None
        return backends.address(node)

    async def _shut(self) -> None:
        for server in self._servers.values():
            server.close()
        for relay in list(self._relays.values()):
            relay.close()
        if self._handlers:  # let every flow's handler finish: none is left pending
            await asyncio.wait(set(self._handlers), timeout=5)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(s.wait_closed() for s in self._servers.values())), 5
            )
        self._servers.clear()
        with self._lock:
            self._addresses.clear()
            self._sockets.clear()
