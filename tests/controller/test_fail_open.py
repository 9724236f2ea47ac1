"""A check that cannot pass anywhere: every serving node UNHEALTHY in GCE's own view while
kube-proxy is healthy (a firewall tag or network mismatch, usually), so the pool fails open.
The pure judgement, table-driven, and the controller's optional sampling end to end."""

from __future__ import annotations

import pytest

from lbhc.planner.fail_open import fail_open
from lbhc.planner.planner import plan
from lbhc.planner.status import StatusReport, assess
from tests.builders import (
    TO_BE_DELETED,
    cloud,
    cloud_provider_check,
    cluster,
    config,
    kube_proxy_pod,
    node,
    pool_for,
    service,
)
from tests.controller.harness import PROJECT, wait_for, world

CP = cloud_provider_check()
MODERN = "registry.k8s.io/kube-proxy:v1.31.4"


def report(*, ready: bool = True, covered: bool = True) -> StatusReport:
    nodes = (node("a"), node("b"), node("c", taints=TO_BE_DELETED))
    pods = tuple(kube_proxy_pod(n.name, MODERN, ready=ready) for n in nodes)
    web = service("web")
    snapshot = cluster(services=(web,), nodes=nodes, pods=pods)
    world_ = cloud(
        pools=(pool_for(web, health_checks=(CP.self_link,) if covered else ()),), checks=(CP,)
    )
    return assess(snapshot, world_, config(), plan(snapshot, world_, config()))


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
            lambda: any(
                e.get("reason") == "HealthCheckCannotPass" for e in w.kube.objects("Event")
            ),
            timeout=15,
            what="a HealthCheckCannotPass Event",
        )
        assert app.metrics.registry.get_sample_value("lbhc_pools_failing_open") == 1
