"""Which instance a passthrough network load balancer sends a new connection to: a pure
function of the connection's addresses and ports, the load balancer's members and their
health, so it can be judged from a table.

What GCE documents, and what this takes from it:
- A target pool picks "an instance from the target pool based on a hash of the source IP
  address, the source port, the destination IP address, and the destination port"; its
  sessionAffinity NONE (the default) is that 5-tuple hash (with the protocol), CLIENT_IP_PROTO
  a 3-tuple (addresses and protocol), CLIENT_IP a 2-tuple (addresses)
  (https://cloud.google.com/load-balancing/docs/target-pools, "sessionAffinity"). A backend
  service's sessionAffinity adds CLIENT_IP_PORT_PROTO (the 5-tuple) and, for internal ones,
  CLIENT_IP_NO_DESTINATION (the source address alone)
  (https://cloud.google.com/load-balancing/docs/network/ext-netlb-traffic-distribution,
  "Session affinity").
- New connections go to HEALTHY members only while at least one is, and to all of them when
  none is (fail open). Target pools: without a backup pool, traffic is "spread to the healthy
  instances with the best effort, or to all instances when no instance is healthy" (the
  TargetPool resource's backupPool field,
  https://cloud.google.com/compute/docs/reference/rest/v1/targetPools). Backend services
  without failover: "when all backend VMs are unhealthy, the load balancer distributes new
  connections among all backends as a last resort" (the traffic distribution page above).
- A load balancer with no member at all has nowhere to send the packets: they are dropped
  (a passthrough load balancer terminates nothing, so nobody answers with a RST): None here.

What GCE does not document, and is chosen here: the hash itself. Rendezvous (highest random
weight) hashing over a stable digest: deterministic for the same flow and members, even
across processes (Python's hash() is salted per process), spread evenly, and a member
leaving moves only the flows that were on it, as a consistent hash like GCE's Maglev does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

HEALTHY = "HEALTHY"
UNHEALTHY = "UNHEALTHY"


@dataclass(frozen=True)
class Flow:
    """A connection as the load balancer sees its packets: the client's address and port,
    the forwarding rule's IP and port it was sent to, the IP protocol."""

    client_ip: str
    client_port: int
    rule_ip: str
    rule_port: int
    protocol: str = "TCP"


# sessionAffinity -> the parts of the flow it hashes (see the module docstring).
_HASHED: Mapping[str, tuple[str, ...]] = {
    "NONE": ("client_ip", "client_port", "rule_ip", "rule_port", "protocol"),
    "CLIENT_IP_PORT_PROTO": ("client_ip", "client_port", "rule_ip", "rule_port", "protocol"),
    "CLIENT_IP_PROTO": ("client_ip", "rule_ip", "protocol"),
    "CLIENT_IP": ("client_ip", "rule_ip"),
    "CLIENT_IP_NO_DESTINATION": ("client_ip",),
}
AFFINITIES = frozenset(_HASHED)


def hashed_fields(flow: Flow, affinity: str = "NONE") -> tuple[str, ...]:
    """The values of `flow` that `affinity` hashes. ValueError for an affinity a passthrough
    load balancer does not have (cookie and header affinities are proxies' only)."""
    try:
        names = _HASHED[affinity]
    except KeyError:
        raise ValueError(
            f"session affinity {affinity!r}: expected one of {sorted(AFFINITIES)}"
        ) from None
    return tuple(str(getattr(flow, name)) for name in names)


def choose_instance(
    flow: Flow,
    members: Iterable[str],
    health: Mapping[str, str],
    affinity: str = "NONE",
) -> str | None:
    """The member `flow` goes to: among the members `health` calls HEALTHY, or among all of
    them when none is (fail open); None when there is no member (the packets are dropped).
    A member missing from `health` counts as not HEALTHY."""
    candidates = list(dict.fromkeys(members))
    if not candidates:
        return None
    healthy = [member for member in candidates if health.get(member) == HEALTHY]
    key = "\x00".join(hashed_fields(flow, affinity))
    return max(healthy or candidates, key=lambda member: (_weight(key, member), member))


def _weight(key: str, member: str) -> int:
    digest = hashlib.blake2b(f"{key}\x00{member}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")
