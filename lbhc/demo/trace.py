"""What one demo run records, for its picture (lbhc/demo/picture.py): each node's health as each
load balancer sees it, the outcome of every client connection, and the events between them.
Every time is in seconds from the run's start.

Plain frozen data with no plotting library behind it: the demo fills it in whether or not
the picture is ever drawn. Each type refuses a value the picture could not place (a state
or outcome it has no colour for, a time that is not a number), so a recording mistake shows
where it is made, not as a gap in a picture later."""

from __future__ import annotations

import math
from dataclasses import dataclass

HEALTHY, UNHEALTHY, OUT = "HEALTHY", "UNHEALTHY", "out"
# GCE's two health states (targetPools.getHealth), and "out": the node is no longer a member
# of the load balancer's pool or backends, so it gets no new connection either way.
HEALTH_STATES = (HEALTHY, UNHEALTHY, OUT)

# How a client connection ended: completed (its whole exchange), failed (an error other than
# the ones below), reset (RST mid-exchange), refused (RST to the SYN), timed-out (no answer
# within the client's limit), cut (open when its node went away, closed by that).
OUTCOMES = ("completed", "failed", "reset", "refused", "timed-out", "cut")

# short: one request and its answer; long: held open across the scale-down.
KINDS = ("short", "long")


def _finite(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds, not {value!r}")


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


@dataclass(frozen=True)
class HealthPoint:
    """At `t`, `load_balancer` saw `node` in `state`, which holds until its next point."""

    t: float
    node: str
    load_balancer: str
    state: str

    def __post_init__(self) -> None:
        _finite("HealthPoint.t", self.t)
        _one_of("HealthPoint.state", self.state, HEALTH_STATES)
        if not self.node or not self.load_balancer:
            raise ValueError("HealthPoint needs a node and a load balancer")


@dataclass(frozen=True)
class ConnectionPoint:
    """One client connection through a load balancer: when it started and ended, how it
    ended, and the node that served it (None when none did, e.g. refused or timed out
    before any node answered)."""

    started: float
    ended: float
    outcome: str
    node: str | None
    kind: str

    def __post_init__(self) -> None:
        _finite("ConnectionPoint.started", self.started)
        _finite("ConnectionPoint.ended", self.ended)
        if self.ended < self.started:
            message = f"a connection cannot end ({self.ended}) before it starts ({self.started})"
            raise ValueError(message)
        _one_of("ConnectionPoint.outcome", self.outcome, OUTCOMES)
        _one_of("ConnectionPoint.kind", self.kind, KINDS)


@dataclass(frozen=True)
class Mark:
    """An event worth a vertical line: "tainted", "deleted", "cut from pool"."""

    t: float
    text: str

    def __post_init__(self) -> None:
        _finite("Mark.t", self.t)
        if not self.text:
            raise ValueError("a Mark needs a text")


@dataclass(frozen=True)
class RunTrace:
    """One run of the scenario (e.g. `with-lbhc`, `upstream`, `without-check`, each with a
    long and the default 5 s autoscaler delete delay): what the picture draws as one panel."""

    name: str
    health: tuple[HealthPoint, ...]
    connections: tuple[ConnectionPoint, ...]
    marks: tuple[Mark, ...]

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a RunTrace needs a name")

    @property
    def last_t(self) -> float:
        """The latest time anything in the run was recorded at (0 for an empty run)."""
        times = [p.t for p in self.health] + [m.t for m in self.marks]
        times += [c.ended for c in self.connections]
        return max(times, default=0.0)
