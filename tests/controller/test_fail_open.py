"""A check that cannot pass anywhere: every serving node UNHEALTHY in GCE's own view while
kube-proxy is healthy (a firewall tag or network mismatch, usually), so the pool fails open.
The pure judgement, table-driven, and the controller's optional sampling end to end."""

from __future__ import annotations

import pytest

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.lb_sampler import HEALTH_CHECK_CANNOT_PASS, FailOpenWatch
from lbhc.controller.metrics import Metrics
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cloud import instance_url
from lbhc.planner.fail_open import fail_open
from lbhc.planner.status import StatusReport
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    MODERN_IMAGE as MODERN,
)
from tests.builders import (
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    config,
    kube_proxy_pod,
    node,
    pool_for,
    service,
)
from tests.controller.harness import PROJECT, REGION, world
from tests.waiting import wait_for


def report(*, ready: bool = True, covered: bool = True) -> StatusReport:
    nodes = (node("a"), node("b"), node("c", taints=TO_BE_DELETED))
    pods = tuple(kube_proxy_pod(n.name, image=MODERN, ready=ready) for n in nodes)
    web = service("web")
    snapshot = cluster(services=(web,), nodes=nodes, pods=pods)
    world_ = cloud(
        pools=(pool_for(web, health_checks=(CP.self_link,) if covered else ()),), checks=(CP,)
    )
    return assessed(snapshot, world_)


@pytest.mark.parametrize(
    ("health", "ready", "covered", "failing"),
    [
        ({"a": "UNHEALTHY", "b": "UNHEALTHY", "c": "UNHEALTHY"}, True, True, True),
        # The node being deleted is UNHEALTHY on purpose; the serving ones decide.
        ({"a": "UNHEALTHY", "b": "UNHEALTHY", "c": "HEALTHY"}, True, True, True),
        ({"a": "HEALTHY", "b": "UNHEALTHY", "c": "UNHEALTHY"}, True, True, False),
        ({"a": "UNHEALTHY", "b": "UNHEALTHY"}, False, True, False),  # kube-proxy itself unready
        ({"a": "UNHEALTHY", "b": "UNHEALTHY"}, True, False, False),  # no kube-proxy check
        ({}, True, True, False),  # GCE not asked
    ],
    ids=["all", "all-serving", "one-healthy", "kube-proxy-unready", "no-check", "not-sampled"],
)
def test_fail_open_is_every_serving_node_unhealthy_while_kube_proxy_is_healthy(
    health: dict[str, str], ready: bool, covered: bool, failing: bool
) -> None:
    found = fail_open(report(ready=ready, covered=covered), health)
    assert (found is not None) is failing
    if found is not None:
        assert found.nodes == 2 and "fails open" in found.message()


def test_the_controller_says_so_once_it_outlasts_the_checks_drain_bound() -> None:
    with world() as w:
        pool = w.add_service("web")
        app = w.start(
            settings={
                "lb_health_sample_sec": 0.1,
                "check_interval_sec": 1,
                "timeout_sec": 1,
                "unhealthy_threshold": 1,  # a 2 s bound: interval x (1 + 1)
            },
            resync_period=0.2,
        )
        wait_for(lambda: w.attached(pool), what="attached")
        for name in ("node-0", "node-1", "node-2"):
            w.compute.set_instance_health(
                f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/us-central1-a/"
                f"instances/{name}",
                "UNHEALTHY",
            )
        wait_for(
            lambda: w.events("HealthCheckCannotPass"),
            timeout=15,
            what="a HealthCheckCannotPass Event",
        )
        assert app.metrics.registry.get_sample_value("lbhc_pools_failing_open") == 1


def test_the_watch_waits_out_the_checks_drain_bound_and_starts_over_when_a_node_recovers() -> None:
    """The cloud provider's check (8 s x (3 + 1) = 32 s bound) starts UNHEALTHY when made:
    the watch says nothing until every serving node has stayed UNHEALTHY that long, samples at
    most once a period, and a node seen HEALTHY again restarts the count."""
    fake = ComputeFake()
    web = service("web")
    vms = {name: instance_url(node(name), PROJECT, f"{REGION}-a") for name in ("a", "b", "c")}
    for name in vms:
        fake.add_instance(PROJECT, f"{REGION}-a", name)
    fake.add_http_health_check(PROJECT, CP.name, port=10256, requestPath="/healthz")
    fake.add_target_pool(
        PROJECT, REGION, pool_for(web).name, instances=vms.values(), health_checks=[CP.self_link]
    )
    for url in vms.values():
        fake.set_instance_health(url, "UNHEALTHY")
    the_report = report()
    snapshot = cluster(
        services=(web,), nodes=(node("a"), node("b"), node("c", taints=TO_BE_DELETED))
    )
    world_ = cloud(pools=(pool_for(web, health_checks=(CP.self_link,)),), checks=(CP,))
    now, events, metrics = [0.0], list[EventSpec](), Metrics()
    with ComputeFakeServer(fake) as server:
        gce = GceClient(GceClientConfig(project=PROJECT, region=REGION, endpoint=server.url))
        lease = ObjectRef("Lease", "lbhc", "lbhc-system")
        watch = FailOpenWatch(gce, config(), metrics, events.append, lease, 10, lambda: now[0])

        def at(seconds: float) -> tuple[int, float | None]:
            now[0] = seconds
            watch.observe(snapshot, world_, the_report)
            said = [e for e in events if e.reason == HEALTH_CHECK_CANNOT_PASS]
            return len(said), metrics.registry.get_sample_value("lbhc_pools_failing_open")

        assert at(0) == (0, 0.0)  # UNHEALTHY from the start: the bound is 32 s
        assert at(31) == (0, 0.0)
        assert at(35) == (0, 0.0)  # sampled 4 s ago: not looked at again yet
        assert at(41) == (1, 1.0)
        fake.set_instance_health(vms["a"], "HEALTHY")
        assert at(51) == (1, 0.0)  # one serving node passes: the check can pass
        fake.set_instance_health(vms["a"], "UNHEALTHY")
        assert at(61) == (1, 0.0)  # counted again from here
        assert at(93) == (2, 1.0)
