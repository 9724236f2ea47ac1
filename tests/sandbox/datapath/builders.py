"""Small builders for the data path's tests: a Compute fake holding one target pool behind one
forwarding rule, node backends for its instances, health servers the fake's real prober
probes (their answers flipped by the tests), and a line client that says what a connection
did: answered by a node, timed out, reset or closed."""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from lbhc.sandbox.compute_fake import ComputeFake, HealthProber
from lbhc.sandbox.compute_fake.probe_targets import PROBE_RANGES
from lbhc.sandbox.datapath import DataPath, NodeBackends
from tests.sandbox.compute_fake.test_prober import InstanceServer, Resolver

PROJECT, REGION, ZONE = "proj", "us-central1", "us-central1-a"
COMPUTE = "https://www.googleapis.com/compute/v1/"
RULE, POOL = "rule", "pool"
SCALE = 0.05  # health checking 20 times faster than real time
# 4 s interval and timeout: 0.2 s scaled, long enough for a loaded machine's probes; one
# success or two failures flip the state.
CHECK = {"checkIntervalSec": 4, "timeoutSec": 4, "healthyThreshold": 1, "unhealthyThreshold": 2}
DROP_WAIT = 0.5  # how long a client waits for an answer before it calls the flow dropped


def instance_url(name: str) -> str:
    return f"{COMPUTE}projects/{PROJECT}/zones/{ZONE}/instances/{name}"


def pool_url(name: str = POOL) -> str:
    return f"{COMPUTE}projects/{PROJECT}/regions/{REGION}/targetPools/{name}"


def compute_fake(
    nodes: Iterable[str], *, check: bool = False, rules: Iterable[str] = (RULE,)
) -> ComputeFake:
    """A pool of `nodes`' instances (with a legacy check on port 80 if `check`, and a firewall
    admitting its probes) behind forwarding rules named `rules`."""
    fake = ComputeFake()
    fake.add_network(PROJECT, "default")
    checks: list[str] = []
    if check:
        fake.add_http_health_check(PROJECT, "hc", **CHECK)
        allowed = [{"IPProtocol": "tcp", "ports": ["80"]}]
        fake.add_firewall(PROJECT, "hc-fw", allowed=allowed, sourceRanges=[*PROBE_RANGES])
        checks.append(f"{COMPUTE}projects/{PROJECT}/global/httpHealthChecks/hc")
    instances = [instance_url(n) for n in nodes]
    fake.add_target_pool(PROJECT, REGION, POOL, instances=instances, health_checks=checks)
    for i, rule in enumerate(rules):
        ip = f"203.0.113.{7 + i}"
        fake.add_forwarding_rule(PROJECT, REGION, rule, target=pool_url(), ip_address=ip)
    return fake


def remove_instance(fake: ComputeFake, node: str) -> None:
    """targetPools.removeInstance, as the service controller's node sync calls it."""
    path = f"/compute/v1/projects/{PROJECT}/regions/{REGION}/targetPools/{POOL}/removeInstance"
    body = f'{{"instances": [{{"instance": "{instance_url(node)}"}}]}}'
    status, _, answer = fake.handle("POST", path, body=body)
    assert status == 200, answer


@contextmanager
def backends(nodes: Iterable[str]) -> Iterator[NodeBackends]:
    with NodeBackends() as each:
        for node in nodes:
            each.add(node)
        yield each


@contextmanager
def data_path(
    fake: ComputeFake, node_backends: NodeBackends, keep_established: bool = True
) -> Iterator[DataPath]:
    with DataPath(
        fake, lambda _: node_backends, keep_established=keep_established, poll_sec=0.02
    ) as path:
        yield path


@contextmanager
def probed(fake: ComputeFake, nodes: Iterable[str]) -> Iterator[dict[str, InstanceServer]]:
    """The fake's real prober, probing one health server per node (answering 200 until a test
    sets its `status`), as the prober's own tests do."""
    servers: dict[str, InstanceServer] = {}
    resolver = Resolver()
    try:
        for node in nodes:
            servers[node] = InstanceServer()
            resolver.route(instance_url(node), servers[node].address)
        with HealthProber(fake, resolver, time_scale=SCALE, rescan_sec=0.01):
            yield servers
    finally:
        for server in servers.values():
            server.stop()


# -- a line client ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What one line sent on a connection got: a node's name, or how it failed."""

    node: str = ""
    failure: str = ""  # "", "timeout", "reset" or "closed"


def connect(address: tuple[str, int] | None) -> socket.socket:
    assert address is not None, "no listener there"
    sock = socket.create_connection(address, timeout=5)
    sock.settimeout(DROP_WAIT)
    return sock


def ask(sock: socket.socket) -> Answer:
    """Send a line; the node that answered, or what happened instead."""
    try:
        sock.sendall(b"which node?\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1024)
            if not chunk:
                return Answer(failure="closed")
            data += chunk
    except TimeoutError:
        return Answer(failure="timeout")
    except (ConnectionResetError, BrokenPipeError):
        return Answer(failure="reset")
    return Answer(node=data.decode().strip())


def one_exchange(address: tuple[str, int] | None) -> Answer:
    """A short connection: connect, one line, close."""
    with connect(address) as sock:
        return ask(sock)


def still_open(sock: socket.socket) -> bool:
    """The peer has neither closed nor reset the connection (nothing to read, no EOF)."""
    sock.setblocking(False)
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))  # data waiting: open too
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.settimeout(DROP_WAIT)
