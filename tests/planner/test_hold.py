"""Holding a node's deletion (planner/hold): when a Node gets, keeps and loses lbhc's
delay-deletion annotation. The inputs are what `lbhc status` judges (assess) of small
snapshots: one node "m" whose case it is, two serving nodes GCE reads HEALTHY in every pool
(so a class of pools is judged working), and the load balancers of the case's world. Then the
two verdicts the plan reads: whether a node could be drained (DrainJudge.drainability) and
when GCE showed a marked one let go everywhere (verify_drain's drained_at)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from lbhc.model.backend import BackendService, BackendView
from lbhc.model.cloud import ForwardingRule, HttpHealthCheck, TargetPool
from lbhc.model.cluster import Node, Service
from lbhc.model.firewall import EffectiveFirewall
from lbhc.model.lb_health import HealthReading, InstanceHealth, LbHealthView
from lbhc.planner.drain import DrainState
from lbhc.planner.hold import (
    HOLD_ANNOTATION,
    HOLD_VALUE,
    HoldConfig,
    HoldPlan,
    HoldState,
    ReleaseReason,
    others_holding,
    plan_holds,
)
from lbhc.planner.status import StatusReport
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    MODERN_IMAGE,
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    kube,
    kube_proxy_pod,
    legacy_check,
    node,
    our_check,
    pool_for,
    service,
)
from tests.builders.backend import SHARED_GROUP, SHARED_HC, annotated, backend, backend_view
from tests.builders.gce import ADMITTING, effective, node_check_firewall

MARK = 1_800_000_000  # when the autoscaler marked node m: its taint's value, Unix seconds
MARGIN = 10.0
CONFIG = HoldConfig(release_margin_sec=MARGIN)
BOUND = 32  # the cloud provider's node check: 8 s x (3 + 1)
H, U, OUT = InstanceHealth.HEALTHY, InstanceHealth.UNHEALTHY, InstanceHealth.NOT_MEMBER
OLD_KUBE_PROXY = "registry.k8s.io/kube-proxy:v1.27.9"  # does not fail /healthz when deleted

HELD = kube.with_annotations({HOLD_ANNOTATION: HOLD_VALUE})
EXCLUDED = kube.with_labels({"node.kubernetes.io/exclude-from-external-load-balancers": "true"})
SERVING = ("s1", "s2")


def victim(*tweaks: kube.Tweak, marked: str | None = None) -> Node:
    """Node m; `marked`: the autoscaler's taint, with this value (None: not marked)."""
    taints = TO_BE_DELETED if marked is not None else ()
    return node("m", *tweaks, taints=taints, taint_value=marked or "")


def rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the load balancers around the node ---------------------------------------------------------

WEB, API, LEGACY = service("web"), service("api"), service("legacy")
RBS = annotated("rbs", "k8s2-rbs")
SLOW_CP = legacy_check("slow-node-check", check_interval_sec=10, unhealthy_threshold=5)
# lbhc's own check with timings of its own: 5 s x (2 + 1).
OURS = our_check(check_interval_sec=5, unhealthy_threshold=2)


def on(svc: Service, *checks: HttpHealthCheck) -> TargetPool:
    return pool_for(svc, health_checks=tuple(c.self_link for c in checks))


@dataclass(frozen=True)
class World:
    services: tuple[Service, ...] = ()
    pools: tuple[TargetPool, ...] = ()
    checks: tuple[HttpHealthCheck, ...] = (CP,)
    firewall: EffectiveFirewall = ADMITTING
    backends: tuple[BackendService, ...] = ()
    # What GCE shows of the serving nodes in every pool: HEALTHY, or UNHEALTHY for a minute
    # (longer than the check's bound: the class fails open).
    serving: InstanceHealth = H
    pools_read: bool = True
    backends_unreadable: str = ""  # why backend services could not be read ("" if read)


DRAINS = World((WEB, API), (on(WEB, CP), on(API, CP)))
# One pool in its class: GCE's read of it is the whole class's.
ONE_POOL = World((WEB,), (on(WEB, CP),))
PARTLY = World((WEB, LEGACY), (on(WEB, CP), on(LEGACY)))
NO_CHECK = World((LEGACY,), (on(LEGACY),))
NO_LB = World()
# The cloud provider's firewall admits the probes only towards a load balancer that is gone.
PROBE_BLOCKED = World(
    (WEB,), (on(WEB, CP),), firewall=effective(node_check_firewall(pinned_to="34.0.0.99"))
)
FAILING_OPEN = World((WEB,), (on(WEB, CP),), serving=U)
# ingress-gce's backend service, on its shared /healthz check, with a minute of connection
# draining; the serving nodes are in its instance group, node m is not (as read).
DRAINING_60 = backend("k8s2-rbs", SHARED_HC, backends=(SHARED_GROUP,), draining_timeout_sec=60)
BACKEND = World((RBS,), backends=(DRAINING_60,))
# The same Service, its backend services unreadable (a 403, a 503): which load balancers
# hold the nodes, and whether they drain them, is unknown.
BACKEND_UNREAD = World((RBS,), backends_unreadable="403 Forbidden")


@dataclass(frozen=True)
class Seen:
    """What GCE's getHealth showed of node m: `at` seconds after MARK, in the world's
    `pool`-th target pool."""

    state: InstanceHealth
    at: float
    pool: int = 0


def report(
    world: World,
    nodes: tuple[Node, ...],
    now: float,
    seen: dict[str, tuple[Seen, ...]],
    image: str = MODERN_IMAGE,
) -> StatusReport:
    """`lbhc status` at `now` (Unix time); `seen`: node name -> what GCE showed of it."""
    readings: dict[tuple[str, str], HealthReading] = {}
    for pool in world.pools:
        for name in SERVING:
            since = now - 60 if world.serving is U else None
            readings[pool.name, name] = HealthReading(
                pool.name, name, world.serving, now - 1, since
            )
    for name, each in seen.items():
        for s in each:
            pool_name = world.pools[s.pool].name
            since = MARK + s.at if s.state is U else None
            readings[pool_name, name] = HealthReading(pool_name, name, s.state, MARK + s.at, since)
    ips = iter(f"34.0.0.{i}" for i in range(1, 90))
    rules = [ForwardingRule(p.name, target=p.self_link, ip_address=next(ips)) for p in world.pools]
    rules += [
        ForwardingRule(f"rule-{b.name}", ip_address=next(ips), backend_service=b.self_link)
        for b in world.backends
    ]
    snapshot = cloud(
        pools=world.pools,
        rules=tuple(rules),
        checks=world.checks,
        network_firewall=world.firewall,
        lb_health=LbHealthView(readings, as_of=now, max_age=180, off=""),
        backends=backend_view(world.backends, {SHARED_GROUP: SERVING}),
    )
    if world.backends_unreadable:
        unread = BackendView(unreadable=world.backends_unreadable)
        snapshot = dataclasses.replace(snapshot, backends=unread)
    if not world.pools_read:
        snapshot = dataclasses.replace(snapshot, pools_complete=False)
    pods = (
        *(kube_proxy_pod(name) for name in SERVING),
        *(kube_proxy_pod(n.name, image=image) for n in nodes if n.name not in SERVING),
    )
    everyone = (*(node(name, HELD) for name in SERVING), *nodes)
    return assessed(cluster(services=world.services, nodes=everyone, pods=pods), snapshot)


# -- plan_holds, one node at a time -------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    desc: str
    node: Node
    world: World = DRAINS
    seen: tuple[Seen, ...] = ()  # what GCE showed of node m
    at: float = 20.0  # the pass: seconds after MARK
    image: str = MODERN_IMAGE  # node m's kube-proxy
    complete: bool = True
    first_seen: float | None = None  # when lbhc first saw m marked, seconds after MARK
    present: bool = True  # False: judged on a previous read, gone from the Nodes now
    # expected
    state: HoldState | None = HoldState.HELD  # None: the plan says nothing of it
    write: str = ""  # "add", "remove", or "" for none
    release: ReleaseReason | None = None
    reason: str = ""  # a phrase the hold's reason says
    marked_since: float | None = None  # seconds after MARK
    deadline: float | None = None  # of a held node: seconds after MARK


MARKED = str(MARK)
CASES = [
    # -- nodes not marked: the annotation follows drainability ---------------------------------
    Case(
        "a node joins: a load balancer can drain it, it has no annotation: one add",
        victim(),
        write="add",
        reason="held: 2 load balancer(s) drain it",
    ),
    Case("it keeps it: drainable and annotated, nothing written", victim(HELD), reason="held"),
    Case(
        "one pool drains it, another has no check: drainable in some is enough to hold",
        victim(),
        world=PARTLY,
        write="add",
    ),
    Case(
        "it leaves: a Node no longer listed gets no entry and no write",
        victim(HELD),
        present=False,
        state=None,
    ),
    Case(
        "labelled out of load balancers, annotated: taken off",
        victim(HELD, EXCLUDED),
        state=HoldState.NOT_HELD,
        write="remove",
        reason="exclude-from-external-load-balancers",
    ),
    Case(
        "labelled out of load balancers, not annotated: nothing to do",
        victim(EXCLUDED),
        state=HoldState.NOT_HELD,
    ),
    Case(
        "kube-proxy too old to fail /healthz: nothing can drain it, taken off",
        victim(HELD),
        image=OLD_KUBE_PROXY,
        state=HoldState.NOT_HELD,
        write="remove",
        reason="nothing can drain it",
    ),
    Case(
        "in no load balancer: taken off",
        victim(HELD),
        world=NO_LB,
        state=HoldState.NOT_HELD,
        write="remove",
        reason="it is in no load balancer",
    ),
    Case(
        "only a pool whose probes the firewall drops: it fails open, taken off",
        victim(HELD),
        world=PROBE_BLOCKED,
        state=HoldState.NOT_HELD,
        write="remove",
        reason="fails open",
    ),
    Case(
        "only a pool GCE shows failing open: taken off",
        victim(HELD),
        world=FAILING_OPEN,
        state=HoldState.NOT_HELD,
        write="remove",
        reason="fails open",
    ),
    Case(
        "only a pool without a check: taken off",
        victim(HELD),
        world=NO_CHECK,
        state=HoldState.NOT_HELD,
        write="remove",
        reason="no health check",
    ),
    Case(
        "nothing can drain it and it is not annotated: nothing to take off",
        victim(),
        world=NO_CHECK,
        state=HoldState.NOT_HELD,
    ),
    Case(
        "the target pools could not be read: whatever it carries stays",
        victim(HELD),
        world=dataclasses.replace(NO_CHECK, pools_read=False),
        reason="unchanged: the target pools could not be read",
    ),
    Case(
        "the target pools could not be read: nothing is added",
        victim(),
        world=dataclasses.replace(DRAINS, pools_read=False),
        state=HoldState.NOT_HELD,
        reason="unchanged",
    ),
    Case(
        "backend services could not be read: whatever it carries stays",
        victim(HELD),
        world=BACKEND_UNREAD,
        reason="unchanged: backend services could not be read (403 Forbidden)",
    ),
    Case(
        "backend services could not be read: nothing is added",
        victim(),
        world=BACKEND_UNREAD,
        state=HoldState.NOT_HELD,
        reason="unchanged",
    ),
    Case(
        "an incomplete view adds nothing",
        victim(),
        complete=False,
        state=HoldState.NOT_HELD,
        reason="not read in full",
    ),
    Case(
        "an incomplete view removes nothing that is not a release",
        victim(HELD),
        world=NO_CHECK,
        complete=False,
        reason="not read in full",
    ),
    # -- marked: held until drained everywhere, or the bound and margin have passed ------------
    Case(
        "marked and drained everywhere: released",
        victim(HELD, marked=MARKED),
        world=ONE_POOL,
        seen=(Seen(U, 20),),
        at=21,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.DRAINED,
        reason="released: unhealthy in every load balancer after 21 s",
        marked_since=0,
    ),
    Case(
        "marked, drained everywhere, on an incomplete view: the release still goes out",
        victim(HELD, marked=MARKED),
        world=ONE_POOL,
        seen=(Seen(U, 20),),
        at=21,
        complete=False,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.DRAINED,
        marked_since=0,
    ),
    Case(
        "marked, read UNHEALTHY in one of its class's two pools: held until the other is too",
        victim(HELD, marked=MARKED),
        seen=(Seen(U, 20),),
        at=21,
        reason="waiting for its load balancers",
        marked_since=0,
        deadline=20 + BOUND / 2,
    ),
    Case(
        "marked, read UNHEALTHY in one of its class's two pools, an interval on: released",
        victim(HELD, marked=MARKED),
        seen=(Seen(U, 20),),
        at=20 + BOUND / 2,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.DRAINED,
        reason="released: unhealthy in every load balancer after 36 s",
        marked_since=0,
    ),
    Case(
        "marked, still HEALTHY since the mark: held, released at the latest at the deadline",
        victim(HELD, marked=MARKED),
        seen=(Seen(H, 15),),
        reason="released at the latest in 22 s",
        marked_since=0,
        deadline=BOUND + MARGIN,
    ),
    Case(
        "marked, UNHEALTHY only in a read from before its mark: not drained, held",
        victim(HELD, marked=MARKED),
        seen=(Seen(U, -5),),
        marked_since=0,
        deadline=BOUND + MARGIN,
    ),
    Case(
        "marked, drained in some (another pool has no check): held until its deadline",
        victim(HELD, marked=MARKED),
        world=PARTLY,
        seen=(Seen(U, 15),),
        marked_since=0,
        deadline=BOUND + MARGIN,
    ),
    Case(
        "marked, not yet drained, a second before mark + bound + margin: held",
        victim(HELD, marked=MARKED),
        at=BOUND + MARGIN - 1,
        marked_since=0,
        deadline=BOUND + MARGIN,
    ),
    Case(
        "marked, not drained, past mark + bound + margin: released, bound elapsed",
        victim(HELD, marked=MARKED),
        seen=(Seen(H, 40),),
        at=BOUND + MARGIN + 1,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.BOUND_ELAPSED,
        reason="bound elapsed (after 43 s marked)",
        marked_since=0,
    ),
    Case(
        "marked, partially drained, past mark + bound + margin: released, bound elapsed",
        victim(HELD, marked=MARKED),
        world=PARTLY,
        at=BOUND + MARGIN + 1,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.BOUND_ELAPSED,
        marked_since=0,
    ),
    Case(
        "marked, only a pool without a check: nothing drains it, released at once",
        victim(HELD, marked=MARKED),
        world=NO_CHECK,
        at=5,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.NOTHING_DRAINS,
        reason="nothing can drain it",
        marked_since=0,
    ),
    Case(
        "marked, kube-proxy too old: nothing drains it, released at once",
        victim(HELD, marked=MARKED),
        image=OLD_KUBE_PROXY,
        at=5,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.NOTHING_DRAINS,
        marked_since=0,
    ),
    Case(
        "marked, in no load balancer: released at once",
        victim(HELD, marked=MARKED),
        world=NO_LB,
        at=5,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.NOTHING_DRAINS,
        reason="it is in no load balancer",
        marked_since=0,
    ),
    Case(
        "marked and labelled out of load balancers: released at once",
        victim(HELD, EXCLUDED, marked=MARKED),
        at=5,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.NOTHING_DRAINS,
        marked_since=0,
    ),
    Case(
        "marked and never held: the annotation is never added to a marked node",
        victim(marked=MARKED),
        at=5,
        state=HoldState.NOT_HELD,
        reason="marked before lbhc held it",
        marked_since=0,
    ),
    Case(
        "marked, never held, nothing drains it: not held, never said released",
        victim(marked=MARKED),
        world=NO_CHECK,
        at=5,
        state=HoldState.NOT_HELD,
        reason="not held: nothing can drain it",
        marked_since=0,
    ),
    Case(
        "marked, never held, drained: nothing to take off",
        victim(marked=MARKED),
        world=ONE_POOL,
        seen=(Seen(U, 20),),
        at=21,
        state=HoldState.RELEASED,
        release=ReleaseReason.DRAINED,
        marked_since=0,
    ),
    Case(
        "controller restarted mid-hold: a fresh plan keeps it, no remove and no re-add",
        victim(HELD, marked=MARKED),
        at=30,
        first_seen=None,
        marked_since=0,
        deadline=BOUND + MARGIN,
    ),
    Case(
        "the taint's value is the mark's time, not when lbhc first saw it",
        victim(HELD, marked=MARKED),
        first_seen=7,
        marked_since=0,
        deadline=BOUND + MARGIN,
    ),
    Case(
        "a mark without a time: from when lbhc first saw it marked",
        victim(HELD, marked=""),
        first_seen=3,
        marked_since=3,
        deadline=3 + BOUND + MARGIN,
    ),
    Case(
        "a mark without a time nobody saw before: from now",
        victim(HELD, marked=""),
        at=20,
        marked_since=20,
        deadline=20 + BOUND + MARGIN,
    ),
    Case(
        "a deletionTimestamp alone is a mark, from its time",
        victim(HELD, kube.deleting(rfc3339(MARK + 2))),
        marked_since=2,
        deadline=2 + BOUND + MARGIN,
    ),
    Case(
        "a backend service took it out with a minute of connection draining: held past the "
        "bound until the draining timeout has passed",
        victim(HELD, marked=MARKED),
        world=BACKEND,
        at=45,
        reason="waiting for its load balancers",
        marked_since=0,
        # GCE showed it out: released (and a pass due) as the draining ends, not at the
        # bound's margin after it.
        deadline=60,
    ),
    Case(
        "a backend service took it out, its connection draining over: released, drained",
        victim(HELD, marked=MARKED),
        world=BACKEND,
        at=61,
        state=HoldState.RELEASED,
        write="remove",
        release=ReleaseReason.DRAINED,
        reason="released: out of every load balancer after 61 s",
        marked_since=0,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.desc for c in CASES])
def test_when_a_node_gets_keeps_and_loses_the_hold(case: Case) -> None:
    now = MARK + case.at
    judged = report(case.world, (case.node,), now, {"m": case.seen}, case.image)
    listed = (*(node(name, HELD) for name in SERVING), case.node)
    nodes = tuple(n for n in listed if case.present or n.name != "m")
    first_seen = {"m": MARK + case.first_seen} if case.first_seen is not None else None
    made = plan_holds(
        nodes, judged.nodes, CONFIG, now, complete=case.complete, first_seen_marked=first_seen
    )
    hold = next((h for h in made.nodes if h.node == "m"), None)
    writes = [w for w in made.writes if w.node == "m"]
    if case.state is None:
        assert hold is None and writes == []
        return
    assert hold is not None
    assert hold.state is case.state, hold.reason
    assert hold.release is case.release, hold.reason
    assert case.reason in hold.reason, hold.reason
    since = None if case.marked_since is None else MARK + case.marked_since
    assert hold.marked_since == since
    if case.state is HoldState.HELD:
        assert hold.deadline == (None if case.deadline is None else MARK + case.deadline)
    assert [("add" if w.add else "remove") for w in writes] == ([case.write] if case.write else [])
    for write in writes:
        assert write.release is case.release
        assert write.reason == hold.reason
        if case.release is not None:
            assert write.held_for == now - (since or 0)


# -- the plan as a whole: what a restart or a new leader decides ---------------------------------

FLEET_NOW = MARK + 21
FLEET = (
    node("joining"),
    node("kept", HELD),
    node("excluded", HELD, EXCLUDED),
    node("drained", HELD, taints=TO_BE_DELETED, taint_value=MARKED),
    node("waiting", HELD, taints=TO_BE_DELETED, taint_value=str(MARK + 10)),
    node("late", taints=TO_BE_DELETED, taint_value=MARKED),
)


def fleet_plan(*, complete: bool = True, first_seen: dict[str, float] | None = None) -> HoldPlan:
    judged = report(ONE_POOL, FLEET, FLEET_NOW, {"drained": (Seen(U, 20),)})
    nodes = (*(node(name, HELD) for name in SERVING), *FLEET)
    return plan_holds(
        nodes, judged.nodes, CONFIG, FLEET_NOW, complete=complete, first_seen_marked=first_seen
    )


def test_the_same_inputs_give_the_same_plan_whoever_makes_it() -> None:
    """A new leader, or a restarted controller, has no memory of when it saw the marks: the
    taints' own times make its plan the one the old leader would have made."""
    first = fleet_plan(first_seen={"drained": MARK + 3, "waiting": MARK + 12, "late": MARK + 1})
    assert fleet_plan() == first
    assert fleet_plan() == fleet_plan()
    writes = {(w.node, w.add, w.release) for w in first.writes}
    assert writes == {
        ("joining", True, None),
        ("excluded", False, None),
        ("drained", False, ReleaseReason.DRAINED),
    }
    # Nodes carrying the annotation as listed: the two serving ones and four of the fleet.
    assert first.holds == 6
    # The only held, marked node still waiting: marked 10 s after MARK.
    assert first.next_deadline == MARK + 10 + BOUND + MARGIN


def test_an_incomplete_view_adds_nothing_and_removes_nothing_but_releases() -> None:
    whole, partial = fleet_plan(), fleet_plan(complete=False)
    assert not partial.complete
    assert all(w.release is not None and not w.add for w in partial.writes)
    assert partial.writes == tuple(w for w in whole.writes if w.release is not None)
    assert partial.next_deadline == whole.next_deadline


def test_the_annotation_value_and_other_controllers_delay_deletion_annotations() -> None:
    """A Node keeps only delay-deletion annotations (its others are large and unread); lbhc's
    is one of them, and another controller's is seen as such."""
    other = "delay-deletion.cluster-autoscaler.kubernetes.io/backup"
    n = node("n", kube.with_annotations({HOLD_ANNOTATION: HOLD_VALUE, other: "x", "a/b": "c"}))
    assert n.metadata.annotations == {HOLD_ANNOTATION: HOLD_VALUE, other: "x"}
    assert others_holding(n) == (other,)
    assert HOLD_ANNOTATION.startswith("delay-deletion.cluster-autoscaler.kubernetes.io/")


# -- DrainJudge.drainability: could a load balancer drain it, were it marked now? ----------------


@dataclass(frozen=True)
class AbleCase:
    desc: str
    world: World
    able: bool | None
    bound: int | None = None
    reason: str = ""
    node: Node = dataclasses.field(default_factory=victim)
    image: str = MODERN_IMAGE


ABLE_CASES = [
    AbleCase("pools on the cloud provider's kube-proxy /healthz check", DRAINS, True, BOUND),
    AbleCase(
        "a pool on lbhc's check: its own timings' bound",
        World((WEB,), (on(WEB, OURS),), checks=(OURS,)),
        True,
        5 * (2 + 1),
    ),
    AbleCase(
        "two checks: the slower one's bound",
        World((WEB, API), (on(WEB, CP), on(API, SLOW_CP)), checks=(CP, SLOW_CP)),
        True,
        10 * (5 + 1),
    ),
    AbleCase("one pool drains it, another has no check", PARTLY, True, BOUND),
    AbleCase("a backend service on ingress-gce's shared /healthz check", BACKEND, True, BOUND),
    AbleCase("probes dropped by the firewall", PROBE_BLOCKED, False, reason="fails open"),
    AbleCase("failing open", FAILING_OPEN, False, reason="fails open"),
    AbleCase("no check", NO_CHECK, False, reason="no health check"),
    AbleCase("no load balancer", NO_LB, False, reason="it is in no load balancer"),
    AbleCase(
        "kube-proxy too old",
        DRAINS,
        False,
        reason=f"kube-proxy {OLD_KUBE_PROXY.rsplit(':', 1)[1]} does not fail /healthz",
        image=OLD_KUBE_PROXY,
    ),
    AbleCase(
        "labelled out of load balancers",
        DRAINS,
        False,
        reason="exclude-from-external-load-balancers",
        node=victim(EXCLUDED),
    ),
    AbleCase(
        "backend services unread, a Service without a target pool: unknown",
        BACKEND_UNREAD,
        None,
        reason="backend services could not be read (403 Forbidden)",
    ),
    AbleCase(
        "backend services unread, yet a target pool drains it: drainable",
        dataclasses.replace(DRAINS, services=(*DRAINS.services, RBS), backends_unreadable="503"),
        True,
        BOUND,
    ),
    AbleCase(
        "target pools unread: unknown",
        dataclasses.replace(DRAINS, pools_read=False),
        None,
        reason="could not be read",
    ),
]


@pytest.mark.parametrize("case", ABLE_CASES, ids=[c.desc for c in ABLE_CASES])
def test_drainability(case: AbleCase) -> None:
    judged = report(case.world, (case.node,), MARK, {}, case.image)
    able = next(n.drainability for n in judged.nodes if n.node == "m")
    assert able.able is case.able, able.reason
    assert able.bound_seconds == case.bound, able.reason
    assert case.reason in able.reason


# -- verify_drain's drained_at: when GCE showed every load balancer let the marked node go -------

TWO_CLASSES = World((WEB, API), (on(WEB, CP), on(API, SLOW_CP)), checks=(CP, SLOW_CP))


@dataclass(frozen=True)
class DrainedCase:
    desc: str
    seen: tuple[Seen, ...]
    drained_at: float | None  # seconds after MARK
    world: World = DRAINS
    at: float = 30.0  # when GCE's view was taken, seconds after MARK


DRAINED_CASES = [
    DrainedCase("UNHEALTHY read after the mark: drained then", (Seen(U, 20),), 20, ONE_POOL),
    DrainedCase(
        "UNHEALTHY read in one of its class's two pools: the other, probed on its own phase, "
        "within one interval (at most half the bound) more",
        (Seen(U, 20),),
        20 + BOUND / 2,
    ),
    DrainedCase("UNHEALTHY read only before the mark: does not count", (Seen(U, -5),), None),
    DrainedCase("HEALTHY since the mark", (Seen(H, 20),), None),
    DrainedCase("not read since the mark", (), None),
    DrainedCase(
        "UNHEALTHY in both classes holding it: drained when the later one was read",
        (Seen(U, 10, 0), Seen(U, 25, 1)),
        25,
        TWO_CLASSES,
    ),
    DrainedCase(
        "UNHEALTHY in one class, still HEALTHY in the other: not drained",
        (Seen(U, 10, 0), Seen(H, 25, 1)),
        None,
        TWO_CLASSES,
    ),
    DrainedCase("GCE shows it out of every pool: drained as of the view", (Seen(OUT, 20),), 30),
]


@pytest.mark.parametrize("case", DRAINED_CASES, ids=[c.desc for c in DRAINED_CASES])
def test_drained_at(case: DrainedCase) -> None:
    judged = report(case.world, (victim(marked=MARKED),), MARK + case.at, {"m": case.seen})
    drain = next(n.drain for n in judged.nodes if n.node == "m")
    assert drain.marked_for_deletion
    expected = None if case.drained_at is None else MARK + case.drained_at
    assert drain.drained_at == expected, (drain.state, drain.evidence)
    if expected is not None:
        assert drain.verified and drain.state in (DrainState.DRAINING, DrainState.NOT_APPLICABLE)
