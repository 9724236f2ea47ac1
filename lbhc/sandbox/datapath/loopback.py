"""Every socket of the emulated data path, and how it ends.

The data path stands for a load balancer and for the nodes' NodePorts, which in a real
cluster face the internet; in the sandbox they must face nothing but this machine. So every
socket the package opens, listening or connecting, is made here and bound to 127.0.0.1
before use: `bind_loopback` refuses any other address, and checks what the kernel actually
bound, so a change elsewhere (a host taken from configuration, a wildcard) fails loudly
instead of exposing a port.

`abort_on_close` makes a connection end as a host without state for it ends it: a TCP RST
rather than a FIN (SO_LINGER on with a zero timeout makes close() abort it, see socket(7)).
"""

from __future__ import annotations

import contextlib
import socket
import struct

LOOPBACK = "127.0.0.1"
_LINGER_ABORT = struct.pack("ii", 1, 0)  # struct linger {l_onoff = 1, l_linger = 0}


class NotLoopbackError(ValueError):
    """An address other than 127.0.0.1 was asked for, or the kernel bound another."""


def bind_loopback(sock: socket.socket, host: str = LOOPBACK, port: int = 0) -> tuple[str, int]:
    """Bind `sock` to 127.0.0.1:`port` (0: an ephemeral port); the address it got.
    NotLoopbackError for any other host, or if the kernel bound something else."""
    if host != LOOPBACK:
        raise NotLoopbackError(f"the data path binds {LOOPBACK} only; asked for {host!r}")
    if sock.family != socket.AF_INET:
        raise NotLoopbackError(f"the data path uses IPv4 loopback only; got {sock.family!r}")
    sock.bind((host, port))
    bound_host, bound_port = sock.getsockname()[:2]
    if bound_host != LOOPBACK:  # never expected; checked so nothing can slip through
        sock.close()
        raise NotLoopbackError(f"bound {bound_host}:{bound_port}, not {LOOPBACK}")
    return str(bound_host), int(bound_port)


def listening_socket(backlog: int = 128) -> socket.socket:
    """A TCP socket listening on 127.0.0.1, on an ephemeral port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        bind_loopback(sock)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


def connecting_socket() -> socket.socket:
    """A TCP socket bound to 127.0.0.1 (ephemeral port), ready to connect to a loopback
    address: the data path's own side of a connection to a node backend."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        bind_loopback(sock)
    except BaseException:
        sock.close()
        raise
    return sock


def abort_on_close(sock: socket.socket | object) -> None:
    """Make the socket's close() send a RST instead of a FIN. `sock` may be asyncio's
    TransportSocket wrapper; a socket already gone is ignored."""
    setsockopt = getattr(sock, "setsockopt", None)
    if setsockopt is None:
        return
    with contextlib.suppress(OSError):
        setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ABORT)
