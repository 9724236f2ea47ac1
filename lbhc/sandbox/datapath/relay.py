"""One client connection through the emulated load balancer, on the data path's event loop:
bytes relayed both ways between the client and the chosen node's backend, until one of them
closes, or the data path resets or drops the flow.

A passthrough load balancer does not terminate connections: the client's handshake is with
the node. The emulation has to accept the client's connection before it can hash it (only then
are its address and port known), so the client's connect() always succeeds; what follows is
what the client would see from a real one:
- relayed: the node's answers come back; either side's close ends the flow ("completed").
  A client's end of stream ends the flow at once (half-closes are not relayed).
- `reset()`: the flow's packets now reach an instance with no state for them, which answers
  with a RST: the client socket is closed with SO_LINGER 0, its next read fails with
  ECONNRESET ("reset"). A node refusing the connection is reset the same way.
- `drop()`: the packets go nowhere (a VM gone, no member): the backend side is cut and the
  client's bytes are read and discarded, never answered, the client socket never closed by
  the data path; the client times out ("dropped"). A dropped flow may still be reset later,
  as when its instance leaves the pool and the client's retransmissions reach another node.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Literal

from lbhc.sandbox.datapath.choice import Flow
from lbhc.sandbox.datapath.loopback import abort_on_close, connecting_socket
from lbhc.sandbox.datapath.records import FlowLog, Outcome

Mode = Literal["relay", "dropped", "reset"]
_CHUNK = 64 * 1024
_CONNECT_TIMEOUT = 5.0


class Relay:
    """A flow's life on the loop (every method is called on the loop's thread)."""

    def __init__(
        self,
        flow_id: int,
        flow: Flow,
        rule: str,
        instance: str | None,
        node: str | None,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        log: FlowLog,
        clock: Callable[[], float],
    ) -> None:
        self.flow_id, self.flow, self.rule = flow_id, flow, rule
        self.instance, self.node = instance, node
        self._client_reader, self._client_writer = client
        self._backend: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._log, self._clock = log, clock
        self.mode: Mode = "relay"
        self.established = False  # it reached a backend once
        self._done = asyncio.Event()
        self._down: asyncio.Task[None] | None = None

    @property
    def ended(self) -> bool:
        return self._done.is_set()

    async def run(self, backend: tuple[str, int] | None) -> None:
        """Relay to the node backend at `backend`, or drop the flow when it is None; returns
        when the flow has ended."""
        up: asyncio.Task[None] | None = None
        try:
            if backend is None:
                self.drop()
            else:
                try:
                    self._backend = await asyncio.wait_for(_open(backend), _CONNECT_TIMEOUT)
                except (OSError, TimeoutError):
                    self.reset()  # the node refused it (or never answered: a timeout is rare)
                    return
                if self.mode != "relay":  # reset or dropped while connecting
                    self._cut_backend()
                else:
                    self.established = True
                    self._down = asyncio.create_task(self._downstream())
            up = asyncio.create_task(self._upstream())
            await self._done.wait()
        finally:
            self._finish("completed")
            self._cut_backend()
            if self.mode != "reset":  # a reset one is closed already
                self._client_writer.close()
            pumps = [task for task in (up, self._down) if task is not None]
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)  # none left pending

    def reset(self) -> None:
        """The client gets a RST; the flow ends "reset"."""
        if self.ended:
            return
        self.mode = "reset"
        transport = self._client_writer.transport
        abort_on_close(transport.get_extra_info("socket"))
        transport.abort()
        self._cut_backend()
        self._finish("reset")

    def drop(self) -> None:
        """The client's packets go nowhere from now on; the flow ends "dropped" when the client
        gives up (or is reset later)."""
        if self.ended or self.mode != "relay":
            return
        self.mode = "dropped"
        if self._down is not None:
            self._down.cancel()
        self._cut_backend()

    def close(self) -> None:
        """The data path is stopping: end the flow and close the client's connection."""
        self._finish("completed")

    # -- the pumps ------------------------------------------------------------------------

    async def _upstream(self) -> None:
        """Client to backend; discarded while dropped. The client's end of stream (or its
        reset) ends the flow."""
        while True:
            try:
                data = await self._client_reader.read(_CHUNK)
            except OSError:
                break
            if not data:
                break
            if self.mode == "relay" and self._backend is not None:
                writer = self._backend[1]
                with contextlib.suppress(OSError):  # the backend's end: _downstream judges it
                    writer.write(data)
                    await writer.drain()
        self._finish("completed")

    async def _downstream(self) -> None:
        """Backend to client; the backend's close closes the client's side too."""
        assert self._backend is not None
        reader = self._backend[0]
        try:
            while data := await reader.read(_CHUNK):
                self._client_writer.write(data)
                await self._client_writer.drain()
        except ConnectionResetError:
            if self.mode == "relay":
                self.reset()  # the node reset it: so does the client see it
            return
        except OSError:
            pass
        if self.mode == "relay":
            self._finish("completed")

    # -- endings --------------------------------------------------------------------------

    def _finish(self, outcome: Outcome) -> None:
        if self.ended:
            return
        if outcome == "completed" and self.mode == "dropped":
            outcome = "dropped"
        self._log.end(self.flow_id, outcome, self._clock())
        self._done.set()

    def _cut_backend(self) -> None:
        if self._backend is not None:
            self._backend[1].transport.abort()
            self._backend = None


async def _open(address: tuple[str, int]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to a node backend from a socket bound to 127.0.0.1."""
    sock = connecting_socket()
    try:
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, address)
        return await asyncio.open_connection(sock=sock)
    except BaseException:
        with contextlib.suppress(OSError):
            sock.close()
        raise
