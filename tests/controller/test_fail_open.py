"""A check that cannot pass anywhere, as `lbhc status --lb-health` judges it: every serving
node UNHEALTHY in GCE's own view while kube-proxy is healthy (a firewall tag or network
mismatch, usually), so the pool fails open. The controller's judgement by class, within its
read budget: tests/controller/test_lb_verifier.py."""

from __future__ import annotations

import pytest

from lbhc.planner.fail_open import fail_open
from lbhc.planner.status import StatusReport
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
    kube_proxy_pod,
    node,
    pool_for,
    service,
)


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
