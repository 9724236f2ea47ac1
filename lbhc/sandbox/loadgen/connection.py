"""One connection's life on the load generator's asyncio loop, and how it is judged.

The backend protocol is line based: the client sends a line, the backend answers one line,
its node name; the connection stays open for more lines until the client closes it. Every
step runs under its own timeout (connect_timeout_sec, then response_timeout_sec per
answer), so no connection outlives its spec whatever the other end does. Each coroutine
records exactly one Attempt, also when it is cancelled (the run ended or was stopped).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from lbhc.sandbox.loadgen.report import Attempt, Outcome
from lbhc.sandbox.loadgen.spec import LoadSpec
from lbhc.sandbox.loadgen.targets import Target, require_loopback

REQUEST = b"req\n"
# A node name is a DNS subdomain (at most 253 characters); a longer line is not an answer,
# and the limit keeps a misbehaving backend from filling memory.
LINE_LIMIT = 256

Clock = Callable[[], float]
Record = Callable[[Attempt], None]
# What the wire can throw at us, and the PeerClosed/BadAnswer below. Anything else is a bug
# in this code and is left to propagate rather than be counted as an outcome.
WIRE_ERRORS = (OSError, EOFError, ValueError)


class PeerClosed(EOFError):
    """EOF before a whole answer line."""


class BadAnswer(ValueError):
    """A line that is not a node name, or data nobody asked for."""


def classify(exc: BaseException) -> Outcome:
    """The outcome a wire error stands for. TimeoutError covers asyncio's timeouts and a
    kernel ETIMEDOUT alike."""
    if isinstance(exc, TimeoutError):
        return "timed-out"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    # A write after the peer's reset fails with EPIPE (or ECONNABORTED) rather than ECONNRESET.
    if isinstance(exc, ConnectionResetError | BrokenPipeError | ConnectionAbortedError):
        return "reset"
    if isinstance(exc, EOFError):
        return "closed"
    return "error"


def node_name(line: bytes) -> str:
    """The node name in an answer line; PeerClosed or BadAnswer if it is not one."""
    if not line.endswith(b"\n"):
        raise PeerClosed("the connection ended before a whole answer line")
    name = line.rstrip(b"\r\n").decode("ascii", errors="replace")
    if not name or not name.isprintable() or " " in name or "\ufffd" in name:
        raise BadAnswer(f"not a node name: {line[:64]!r}")
    return name


async def connect(
    target: Target, timeout: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    # Checked again here, not only when the Target was made: this is the one place that
    # opens sockets, so nothing else needs to be trusted to have checked.
    require_loopback(target.name, target.host)
    async with asyncio.timeout(timeout):
        return await asyncio.open_connection(target.host, target.port, limit=LINE_LIMIT)


async def ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float) -> str:
    """Send one request line; the node name answered, within `timeout`."""
    writer.write(REQUEST)
    async with asyncio.timeout(timeout):
        try:
            await writer.drain()
        except ConnectionResetError:
            # asyncio says "Connection lost" for a connection the peer had closed cleanly
            # too; a real reset leaves the reader with the error, not at EOF.
            if reader.at_eof():
                raise PeerClosed("the connection was closed before the request") from None
            raise
        return node_name(await reader.readline())


async def idle(reader: asyncio.StreamReader, seconds: float) -> None:
    """Wait `seconds` between pings while watching the connection, so that a reset or a close
    is recorded when it happens, not at the next ping (up to ping_interval_sec later)."""
    quiet = asyncio.timeout(seconds)
    try:
        async with quiet:
            data = await reader.read(1)
    except TimeoutError:
        if quiet.expired():
            return  # nothing happened: time for the next ping
        raise
    if not data:
        raise PeerClosed("the connection was closed between pings")
    raise BadAnswer(f"data nobody asked for: {data!r}")


@dataclass(frozen=True)
class Context:
    """What every connection of a run shares."""

    spec: LoadSpec
    clock: Clock
    record: Record


def close(writer: asyncio.StreamWriter) -> None:
    """Close now: abort() drops anything still unsent instead of waiting for the peer to
    read it (a peer that never reads would keep the socket open past the run). The socket
    goes on the loop's next turn, with a FIN as on any close."""
    writer.transport.abort()


async def short(target: Target, started: float, run: Context) -> None:
    """Connect, send one line, read one line, close. `started` is when the generator decided
    to start it: the task itself may get its first turn later on a busy loop, and that
    wait is part of what the client saw (as an open-loop client measures)."""
    spec = run.spec
    writer: asyncio.StreamWriter | None = None
    node: str | None = None
    port: int | None = None
    outcome: Outcome = "stopped"  # unless the connection gets to an end before a cancel
    try:
        reader, writer = await connect(target, spec.connect_timeout_sec)
        port = int(writer.get_extra_info("sockname")[1])
        node = await ask(reader, writer, spec.response_timeout_sec)
        outcome = "completed"
    except WIRE_ERRORS as exc:
        outcome = classify(exc)
    finally:
        if writer is not None:
            close(writer)
        run.record(Attempt(target.name, "short", started, run.clock(), outcome, node, port))


async def long_lived(target: Target, started: float, run: Context) -> None:
    """Connect, ping at once (to learn the node) and then every ping_interval_sec, until the
    connection breaks or the task is cancelled at the end of the run."""
    loop = asyncio.get_running_loop()
    spec = run.spec
    writer: asyncio.StreamWriter | None = None
    node: str | None = None
    outcome: Outcome | None = None
    try:
        reader, writer = await connect(target, spec.connect_timeout_sec)
        while True:
            asked = loop.time()
            node = await ask(reader, writer, spec.response_timeout_sec)
            # The interval runs from one ping to the next, not from an answer to the next ping.
            await idle(reader, max(0.0, asked + spec.ping_interval_sec - loop.time()))
    except WIRE_ERRORS as exc:
        outcome = classify(exc)
    finally:
        if writer is not None:
            close(writer)
        if outcome is None:
            # Cancelled: the run ended with the connection up. A ping still unanswered at
            # that moment is not judged: the connection had not broken yet.
            outcome = "completed" if node is not None else "stopped"
        run.record(Attempt(target.name, "long", started, run.clock(), outcome, node))
