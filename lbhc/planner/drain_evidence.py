"""A marked node's drain verdict checked against GCE: is it still in the pools, and what does
GCE's own health checking say of it there?

Which pools hold a node is not listed (a pool's `instances` names every member: pools x nodes
URLs), so it is derived from the service controller's predicates: every node not excluded is
in every pool of the cluster's Services, and one marked for deletion stays there until the
controller's next node sync takes it out (a node added or deleted, an exclusion-label or
providerID change, or the Service's own sync; a taint alone triggers none:
k8s.io/cloud-provider controllers/service/controller.go, shouldSyncUpdatedNode and
stableNodeSetPredicates). Where GCE was asked (one pool per class, lbhc/controller/
lb_verifier.py), the answer replaces the derivation: a node GCE shows out of a class's pool
was taken out of the class's pools by that node sync; one it answers for is a member, and its
HEALTHY or UNHEALTHY says whether that load balancer still sends it new connections."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from lbhc.model.lb_health import HealthReading, InstanceHealth, LbHealthView
from lbhc.planner.backend_drain import BackendMembership
from lbhc.planner.drain import DrainState, NodeDrain, marked_epoch
from lbhc.planner.firewall_reach import Reach
from lbhc.planner.lb_views import LbDrainView, LbKind, PoolDrainKind
from lbhc.planner.listing import first_few
from lbhc.planner.pool_classes import ClassHealth, ClassVerdict, PoolClass

_WORKING = frozenset({ClassHealth.HEALTHY, ClassHealth.DEGRADED})
NO_BACKENDS = BackendMembership((), ())


@dataclass(frozen=True)
class Membership:
    held: tuple[LbDrainView, ...]  # load balancers taken to hold the node (read or derived)
    cut: tuple[HealthReading, ...]  # GCE shows it out of these pools (and their classes)
    # GCE shows it out of these backend services (each its own: NEG subsets differ).
    cut_backends: tuple[HealthReading, ...] = ()


def newest_reading(
    pool_class: PoolClass, node: str, view: LbHealthView, max_age: float
) -> HealthReading | None:
    """The node's newest known state in the class (a failed read says nothing)."""
    return view.newest_in(pool_class.members, node, known=True, max_age=max_age)


def newest_in_lb(lb: str, node: str, view: LbHealthView, max_age: float) -> HealthReading | None:
    """The node's newest known state in one load balancer (a backend service is its own:
    NEG subsets differ between the members of a class)."""
    return view.newest_in(frozenset((lb,)), node, known=True, max_age=max_age)


def membership(
    node: str,
    views: Sequence[LbDrainView],
    classes: Sequence[PoolClass],
    view: LbHealthView,
    max_age: float,
) -> Membership:
    out: set[str] = set()
    cut: list[HealthReading] = []
    cut_backends: list[HealthReading] = []
    for pool_class in classes:
        if pool_class.lb is LbKind.BACKEND_SERVICE:
            for name in pool_class.pools:
                reading = newest_in_lb(name, node, view, max_age)
                if reading is not None and reading.state is InstanceHealth.NOT_MEMBER:
                    out.add(name)
                    cut_backends.append(reading)
            continue
        reading = newest_reading(pool_class, node, view, max_age)
        if reading is not None and reading.state is InstanceHealth.NOT_MEMBER:
            out.update(pool_class.pools)
            cut.append(reading)
    held = tuple(v for v in views if v.name not in out)
    return Membership(held, tuple(cut), tuple(cut_backends))


def verify_drain(
    drain: NodeDrain,
    node: str,
    held: Membership,
    classes: Sequence[PoolClass],
    verdicts: Sequence[ClassVerdict],
    view: LbHealthView,
    max_age: float,
    backends: BackendMembership = NO_BACKENDS,
) -> NodeDrain:
    """The verdict with what GCE showed of the marked node, and whether that verifies it.
    `held` covers every load balancer taken to hold the node, backend services too; a backend
    service whose membership is derived (NEGs) leaves the verdict unverified, saying so."""
    if not drain.marked_for_deletion or drain.state is DrainState.UNKNOWN:
        return drain
    unread = [
        f"membership of {r.view.lb.value} {r.view.name} derived"
        for r in backends.taken_out
        if r.derived
    ]
    if drain.state is DrainState.NOT_APPLICABLE and (held.cut or backends.taken_out):
        seen = "membership read from GCE"
        if held.cut:
            pools = first_few([r.pool for r in held.cut], 3)
            out = "; ".join(r.describe() for r in backends.taken_out)
            drain = replace(
                drain,
                reason=(
                    "marked for deletion; GCE's getHealth and the pools' instance lists show it "
                    f"out of every target pool that held it ({pools}): the service controller "
                    "took it out, so no network load balancer sends it new connections"
                    + (f"; {out}" if out else "")
                ),
            )
        if unread:
            return replace(drain, evidence=f"not verified ({first_few(unread, 2, '; ')})")
        return replace(drain, verified=True, evidence=seen, drained_at=view.as_of or None)
    if view.off:
        return replace(drain, evidence=f"not verified: {view.off}")
    held_pools = {v.name for v in held.held}
    health = {v.pool_class: v.health for v in verdicts}
    lines: list[str] = []
    missing: list[str] = []
    since = marked_epoch(drain.marked_at)
    unhealthy_at: list[float] = []  # by when each class holding it sends it nothing new
    for pool_class in classes:
        if not held_pools.intersection(pool_class.pools):
            continue
        reading = newest_reading(pool_class, node, view, max_age)
        if reading is None:
            missing.append(f"not read yet in {pool_class.describe()}")
            continue
        lines.append(f"{reading.state.value} in {pool_class.lb.value} {reading.pool}")
        if reading.state is InstanceHealth.UNHEALTHY and (since is None or reading.at >= since):
            unhealthy_at.append(_class_drained_at(pool_class, reading))
        if pool_class.kind is not PoolDrainKind.HEALTHZ:
            continue
        if pool_class.reach != Reach.ADMITTED.value:
            missing.append(f"probe reach of {reading.pool} is {pool_class.reach or 'unjudged'}")
        elif health.get(pool_class) not in _WORKING:
            missing.append(f"{pool_class.describe()} is {health.get(pool_class, 'unjudged')}")
    missing += unread
    seen = "GCE's getHealth: " + first_few(lines, 3, "; ") if lines else ""
    if missing:
        why = first_few(missing, 2, "; ")
        return replace(drain, evidence=f"not verified ({why})" + (f"; {seen}" if seen else ""))
    verified = replace(drain, verified=True, evidence=seen)
    if drain.state is DrainState.DRAINING and len(unhealthy_at) == len(lines) and lines:
        # Every load balancer still holding it reads it UNHEALTHY: none sends it new
        # connections any more (what a hold on its deletion waits for, planner/hold).
        return replace(verified, drained_at=max(unhealthy_at))
    return verified


def _class_drained_at(pool_class: PoolClass, reading: HealthReading) -> float:
    """By when every load balancer of the class reads the node UNHEALTHY, from one read. GCE
    keeps a state per forwarding-rule IP, each probed on its own phase: the others of the
    class turn UNHEALTHY within one check interval of the one read, and an interval is at
    most half the bound (interval x (unhealthy threshold + 1), the threshold at least 1). A
    class of one is drained when read so."""
    if len(pool_class.pools) == 1:
        return reading.at
    turned = reading.unhealthy_since or reading.at
    return max(reading.at, turned + pool_class.bound_seconds / 2)
