"""What GCE's own health checking said of a node in a target pool (targetPools.getHealth), as
plain data: the evidence a drain verdict is verified against. The controller reads it within
its read budget (lbhc/controller/lb_verifier.py) and hands it to the pure planner with the
cloud snapshot; the planner never reads GCE."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property


class InstanceHealth(StrEnum):
    HEALTHY = "HEALTHY"  # in every forwarding rule's IP
    UNHEALTHY = "UNHEALTHY"  # in at least one: that load balancer sends it no new connections
    NOT_MEMBER = "NOT_MEMBER"  # not in the pool (confirmed from the pool's instance list)
    UNKNOWN = "UNKNOWN"  # the read failed or answered nothing: says nothing


@dataclass(frozen=True, slots=True)
class HealthReading:
    pool: str
    node: str
    state: InstanceHealth
    at: float  # Unix time of the read
    # Unix time since when it has read UNHEALTHY without a break (None unless UNHEALTHY):
    # a check made moments ago starts UNHEALTHY, so "failing open" needs its drain bound.
    unhealthy_since: float | None = None
    detail: str = ""  # why UNKNOWN, for humans


@dataclass(frozen=True)
class LbHealthView:
    """The newest reading per (pool, node), the time the view was taken, and whether reading
    is on at all ("" when it is; else why not, e.g. "the read budget is 0")."""

    readings: Mapping[tuple[str, str], HealthReading] = field(default_factory=dict)
    as_of: float = 0.0
    max_age: float = 0.0  # how old a reading may be and still count (the reader's choice)
    off: str = "GCE's health view is not read here"

    @cached_property
    def by_node(self) -> Mapping[str, tuple[HealthReading, ...]]:
        """Each node's readings: a few per node, so looking one up never walks a class's
        thousands of pools."""
        found: dict[str, list[HealthReading]] = {}
        for r in self.readings.values():
            found.setdefault(r.node, []).append(r)
        return {node: tuple(rs) for node, rs in found.items()}

    def newest_in(
        self, pools: frozenset[str], node: str, *, known: bool = False, max_age: float | None = None
    ) -> HealthReading | None:
        """The node's newest reading in any of `pools`; `known`: only what says something (a
        failed read does not); `max_age`: only readings no older than that at `as_of`."""
        found = [
            r
            for r in self.by_node.get(node, ())
            if r.pool in pools
            and not (known and r.state is InstanceHealth.UNKNOWN)
            and (max_age is None or self.as_of - r.at <= max_age)
        ]
        return max(found, key=lambda r: r.at) if found else None
