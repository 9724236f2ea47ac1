"""The controller's reading of GCE's own health view: the real GCE client against the Compute
fake over HTTP, a clock the test moves. What it reads (marked nodes first, a few serving nodes
per class), how much (never past its budget), what it makes of it (failing open after the
check's bound, a refusal confirmed from the pool's instance list, a cut before the bound) and
what it says (Events, metrics, a pass fired), end to end through the controller too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.lb_verifier import (
    CUT_BEFORE_DRAINED,
    HEALTH_CHECK_CANNOT_PASS,
    LbVerifier,
    VerifierOptions,
)
from lbhc.controller.metrics import Metrics
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cloud import instance_url, instance_urls
from lbhc.model.lb_health import InstanceHealth
from lbhc.planner.status import StatusReport
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.builders import CLOUD_PROVIDER_CHECK as CP
from tests.builders import (
    MODERN_IMAGE,
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    kube_proxy_pod,
    node,
    pool_for,
    rule_for,
    service,
)
from tests.controller.harness import PROJECT, REGION, world
from tests.waiting import wait_for

SERVING = ("a", "b", "c")
MARKED_AT = 1_000_000  # the taint's value: Unix seconds


@dataclass
class Rig:
    fake: ComputeFake
    verifier: LbVerifier
    metrics: Metrics
    now: list[float]
    events: list[EventSpec] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)
    vms: dict[str, str] = field(default_factory=dict)

    def at(self, seconds: float) -> None:
        self.now[0] = MARKED_AT + seconds
        self.verifier.tick()

    def reads(self) -> list[str]:
        """The getHealth calls the fake saw, as `pool/node`."""
        return [
            f"{e.path.split('/')[-2]}/{(e.body or {})['instance'].rsplit('/', 1)[-1]}"
            for e in self.fake.journal
            if e.path.endswith("/getHealth")
        ]

    def said(self, reason: str) -> list[EventSpec]:
        return [e for e in self.events if e.reason == reason]

    def metric(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)


def scene(*, marked: bool, in_pool: bool = True) -> tuple[StatusReport, dict[str, str]]:
    """Services web and api on the cloud provider's check; nodes a, b, c serve, m is marked."""
    web, api = service("web"), service("api")
    names = (*SERVING, *(("m",) if marked else ()))
    nodes = tuple(
        node(n, taints=TO_BE_DELETED, taint_value=str(MARKED_AT)) if n == "m" else node(n)
        for n in names
    )
    pods = tuple(kube_proxy_pod(n.name, image=MODERN_IMAGE) for n in nodes)
    pools = tuple(pool_for(s, health_checks=(CP.self_link,)) for s in (web, api))
    rules = (rule_for(web, ip="34.0.0.1"), rule_for(api, ip="34.0.0.2"))
    world_ = cloud(pools=pools, rules=rules, checks=(CP,))
    report = assessed(cluster(services=(web, api), nodes=nodes, pods=pods), world_)
    return report, instance_urls(nodes, PROJECT, REGION)


@contextmanager
def rig(*, reads_per_minute: int = 30, marked: bool = False, in_pool: bool = True) -> Iterator[Rig]:
    fake = ComputeFake()
    report, vms = scene(marked=marked)
    fake.add_http_health_check(PROJECT, CP.name, port=10256, requestPath="/healthz")
    members = [url for name, url in vms.items() if in_pool or name != "m"]
    for pool in sorted({v.pool_class.pools for v in report.pool_classes}.pop()):
        fake.add_target_pool(PROJECT, REGION, pool, instances=members, health_checks=[CP.self_link])
    now = [float(MARKED_AT)]
    metrics = Metrics()
    with ComputeFakeServer(fake) as server:
        gce = GceClient(GceClientConfig(project=PROJECT, region=REGION, endpoint=server.url))
        r = Rig(fake, None, metrics, now, vms=vms)  # type: ignore[arg-type]
        r.verifier = LbVerifier(
            gce,
            metrics,
            r.events.append,
            ObjectRef("Lease", "lbhc", "lbhc-system"),
            r.fired.append,
            VerifierOptions(reads_per_minute, sample_every=60),
            clock=lambda: now[0],
        )
        r.verifier.observe(report, vms)
        yield r


def test_every_serving_node_unhealthy_past_the_bound_is_failing_open_once() -> None:
    """The cloud provider's check (bound 32 s) starts UNHEALTHY: a class whose sampled nodes all
    read UNHEALTHY is read again every 10 s (not settled), said nothing of before they were
    seen so for the bound, failing open after it (one Event, its pools counted), and healthy
    once a node passes; a settled class waits its 60 s period."""
    with rig() as r:
        for url in r.vms.values():
            r.fake.set_instance_health(url, "UNHEALTHY")
        r.at(0)
        assert len(r.reads()) == 3  # a few serving nodes, not every node in every pool
        r.at(5)
        assert len(r.reads()) == 3  # not every tick
        r.at(11)
        r.at(22)
        assert len(r.reads()) == 9
        assert not r.said(HEALTH_CHECK_CANNOT_PASS)  # seen UNHEALTHY for 22 s only
        r.at(33)
        assert len(r.said(HEALTH_CHECK_CANNOT_PASS)) == 1
        assert r.metric("lbhc_pools_failing_open") == 2
        assert r.metric("lbhc_pool_classes", health="failing-open") == 1
        assert any("failing open" in f for f in r.fired)
        r.at(44)
        assert len(r.said(HEALTH_CHECK_CANNOT_PASS)) == 1  # once per episode
        for url in r.vms.values():
            r.fake.set_instance_health(url, "HEALTHY")
        r.at(55)
        assert r.metric("lbhc_pools_failing_open") == 0
        assert r.metric("lbhc_pool_classes", health="healthy") == 1
        settled = len(r.reads())
        r.at(100)
        assert len(r.reads()) == settled  # healthy: the next sample 60 s after the last
        r.at(116)
        assert len(r.reads()) == settled + 3


def test_the_budget_bounds_the_reads_and_what_waits_is_counted() -> None:
    """Three reads a minute: whatever is due (a marked node every 10 s, samples every
    minute), no minute holds more than three."""
    with rig(reads_per_minute=3, marked=True) as r:
        by_minute = []
        for minute in range(2):
            before = len(r.reads())
            for second in range(0, 60, 5):
                r.at(60 * minute + second)
            by_minute.append(len(r.reads()) - before)
        assert by_minute == [3, 3]
        assert (r.metric("lbhc_lb_health_reads_deferred_total") or 0) > 0
        # Marked node first: the very first read is m's.
        assert r.reads()[0].endswith("/m")


def test_a_marked_node_is_read_in_one_pool_per_class_and_its_unhealthy_turn_seen() -> None:
    with rig(marked=True) as r:
        r.fake.set_instance_health(r.vms["m"], "HEALTHY")
        r.at(1)
        first = [x for x in r.reads() if x.endswith("/m")]
        assert len(first) == 1  # one class: one pool
        r.fake.set_instance_health(r.vms["m"], "UNHEALTHY")
        r.at(5)  # under marked_every (10 s): not read again yet
        assert len([x for x in r.reads() if x.endswith("/m")]) == 1
        r.at(12)
        again = [x for x in r.reads() if x.endswith("/m")]
        assert again == first * 2  # the same pool, so its turn is seen in one place
        reading = next(x for x in r.verifier.view().readings.values() if x.node == "m")
        assert reading.state is InstanceHealth.UNHEALTHY
        assert any("m UNHEALTHY" in f for f in r.fired)


def test_a_refusal_is_confirmed_from_the_pool_and_a_cut_before_the_bound_reported() -> None:
    """m is not in the pools (the service controller's node sync took it out 3 s after the
    taint): getHealth refuses it, the pool's instance list (one partial read) confirms it, and
    a cut before the check's 32 s bound is a CutBeforeDrained Event on the Node."""
    with rig(marked=True, in_pool=False) as r:
        r.at(3)
        masks = [
            e.field_mask for e in r.fake.journal if e.method == "GET" and "targetPools/" in e.path
        ]
        assert masks == ["instances"]
        reading = next(x for x in r.verifier.view().readings.values() if x.node == "m")
        assert reading.state is InstanceHealth.NOT_MEMBER
        cut = r.said(CUT_BEFORE_DRAINED)
        assert len(cut) == 1 and cut[0].regarding == ObjectRef("Node", "m")
        assert "at most 3 s after it was marked" in cut[0].note
        assert r.metric("lbhc_nodes_cut_before_drained_total") == 1
        r.at(30)
        assert len([x for x in r.reads() if x.endswith("/m")]) == 1  # let go: not asked again


def test_a_cut_after_the_bound_is_no_news() -> None:
    with rig(marked=True, in_pool=False) as r:
        r.at(40)
        assert not r.said(CUT_BEFORE_DRAINED)


def test_a_refusal_the_pool_list_contradicts_is_unknown_not_out() -> None:
    """A 400 for some other reason, while the pool does list the node: not called out."""
    with rig(marked=True) as r:
        r.fake.faults.fail_requests(1, 400, "invalid", "POST", "/getHealth")
        r.at(1)
        reading = next(x for x in r.verifier.view().readings.values() if x.node == "m")
        assert reading.state is InstanceHealth.UNKNOWN
        assert "yet the pool lists it" in reading.detail
        assert not r.said(CUT_BEFORE_DRAINED)


def test_the_controller_reads_by_default_and_says_a_check_cannot_pass() -> None:
    with world() as w:
        pool = w.add_service("web")
        app = w.start(
            settings={
                "lb_health_sample_sec": 1.0,  # marked and unsettled classes read every 1 s
                "check_interval_sec": 1,
                "timeout_sec": 1,
                "unhealthy_threshold": 1,  # a 2 s bound: interval x (1 + 1)
            },
            resync_period=0.2,
        )
        wait_for(lambda: w.attached(pool), what="attached")
        for name in ("node-0", "node-1", "node-2"):
            w.compute.set_instance_health(
                instance_url(node(name), PROJECT, f"{REGION}-a"), "UNHEALTHY"
            )
        wait_for(
            lambda: w.events("HealthCheckCannotPass"),
            timeout=20,
            what="a HealthCheckCannotPass Event",
        )
        assert app.metrics.registry.get_sample_value("lbhc_pools_failing_open") == 1
