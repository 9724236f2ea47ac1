"""The data path faces nothing but this machine: its bind helper refuses any address but
127.0.0.1, and every socket the data path and its node backends listen on is bound there, as
the kernel's own table of this process's listening sockets shows (not the code's word)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from lbhc.sandbox.datapath.loopback import NotLoopbackError, bind_loopback, listening_socket
from tests.sandbox.datapath.builders import backends, compute_fake, data_path, one_exchange

NODES = ("node-0", "node-1", "node-2")
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


@pytest.mark.parametrize("host", ["0.0.0.0", "", "127.0.0.2", "localhost", "10.0.0.1"])
def test_the_bind_helper_refuses_anything_but_127_0_0_1(host: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(NotLoopbackError, match=repr(host)):
            bind_loopback(sock, host)
        assert sock.getsockname() == ("0.0.0.0", 0)  # never bound


def test_the_bind_helper_refuses_ipv6() -> None:
    with (
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock,
        pytest.raises(NotLoopbackError, match="IPv4"),
    ):
        bind_loopback(sock)


def test_a_listening_socket_is_on_loopback() -> None:
    with listening_socket() as sock:
        assert sock.getsockname()[0] == "127.0.0.1"


def own_listening_sockets() -> dict[int, tuple[str, int]]:
    """This process's listening TCP sockets, by inode: (local address, port) from the
    kernel's tables (IPv6 addresses left in hex)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    found: dict[int, tuple[str, int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], int(fields[9])
            if state != LISTEN or inode not in inodes:
                continue
            address, port = local.split(":")
            if len(address) == 8:  # IPv4, little-endian hex
                address = socket.inet_ntoa(bytes.fromhex(address)[::-1])
            found[inode] = (address, int(port, 16))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/net/tcp")
def test_every_listening_socket_of_the_data_path_is_on_loopback() -> None:
    before = own_listening_sockets()
    with (
        backends(NODES) as nodes,
        data_path(compute_fake(NODES, rules=("r1", "r2")), nodes) as path,
    ):
        assert one_exchange(path.address("r1")).node in NODES
        opened = {i: a for i, a in own_listening_sockets().items() if i not in before}
        reported = set(path.listening()) | set(nodes.listening().values())
        # Two rules' listeners and three nodes' NodePorts, every one on 127.0.0.1.
        assert len(reported) == 5
        assert reported <= set(opened.values())
        assert {host for host, _ in opened.values()} == {"127.0.0.1"}
    assert not own_listening_sockets().keys() & opened.keys()  # all closed with them
