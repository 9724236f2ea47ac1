"""Where the load goes: loopback addresses only, and a load that fits the spec's bounds.

The sandbox's emulated load balancers listen on 127.0.0.1. A load generator that could be
pointed anywhere else is a small denial-of-service tool; this one refuses any address
outside 127.0.0.0/8 at construction (`loopback_targets`) and checks again before every
connect (`require_loopback`), so no path reaches a socket with another address. Host names,
"localhost" included, are refused too: what they resolve to is not ours to decide.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from lbhc.sandbox.loadgen.spec import LoadSpec

LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
MAX_TARGETS = 32
# Over all targets: new connections per second the one loop thread can open and close on a
# small machine while the sandbox's own listeners and backends still get CPU time.
MAX_TOTAL_RATE = 1000.0
_MAX_PORT = 65535


@dataclass(frozen=True)
class Target:
    """One forwarding rule's listener: its name in the report, and where to connect."""

    name: str
    host: str
    port: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"target name {self.name!r}: expected a non-empty string")
        require_loopback(self.name, self.host)
        port = self.port
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port <= _MAX_PORT:
            raise ValueError(f"target {self.name!r}: port {port!r} is not within 1-{_MAX_PORT}")


def require_loopback(name: str, host: object) -> None:
    """ValueError unless `host` is an IPv4 address literal within 127.0.0.0/8."""
    try:
        address = ipaddress.IPv4Address(host) if isinstance(host, str) else None
    except ValueError:
        address = None
    if address is None or address not in LOOPBACK:
        raise ValueError(
            f"target {name!r}: host {host!r} is not a loopback IPv4 address (127.0.0.0/8); "
            "the load generator only connects to the sandbox's own listeners on this machine"
        )


def loopback_targets(targets: Mapping[str, tuple[str, int]]) -> tuple[Target, ...]:
    """The targets, validated, in the mapping's order."""
    if not 0 < len(targets) <= MAX_TARGETS:
        raise ValueError(f"targets: expected 1 to {MAX_TARGETS} targets, got {len(targets)}")
    found = []
    for name, address in targets.items():
        if not isinstance(address, tuple) or len(address) != 2:
            raise ValueError(f"target {name!r}: expected a (host, port) pair, got {address!r}")
        found.append(Target(name, address[0], address[1]))
    return tuple(found)


def check_fits(targets: tuple[Target, ...], spec: LoadSpec) -> None:
    """ValueError when the spec, multiplied by the number of targets, exceeds what the
    generator may do: every long-lived connection must fit under max_in_flight (they are
    opened together at the start and are never skipped), and the total rate is bounded."""
    held = spec.long_lived * len(targets)
    if held > spec.max_in_flight:
        raise ValueError(
            f"targets: {len(targets)} targets x LoadSpec.long_lived {spec.long_lived} = {held} "
            f"long-lived connections, more than LoadSpec.max_in_flight {spec.max_in_flight}"
        )
    total = spec.rate_per_sec * len(targets)
    if total > MAX_TOTAL_RATE:
        raise ValueError(
            f"targets: {len(targets)} targets x LoadSpec.rate_per_sec {spec.rate_per_sec:g} = "
            f"{total:g} new connections per second, more than {MAX_TOTAL_RATE:g} in total"
        )
