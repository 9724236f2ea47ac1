"""Which spec.loadBalancerClass leaves a Service's target pool to lbhc: none, or the legacy
external class (the cloud provider's own target-pool NetLB, kubernetes/cloud-provider-gcp
providers/gce/gce_annotations.go LegacyRegionalExternalLoadBalancerClass), or one configured
as lbhc's. The legacy internal class is an internal (backend-service) LB, and any other class
is another controller's. Each row is planned, assessed and checked by the scope guard."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lbhc.model.plan import Action, Kind
from lbhc.planner.planner import plan
from lbhc.planner.scope import expects_target_pool
from lbhc.planner.services import ineligibility
from lbhc.planner.status import LbhcCheckState
from tests.builders import (
    assessed,
    cloud,
    cluster,
    config,
    our_check,
    our_firewall,
    pool_for,
    service,
)

LEGACY_EXTERNAL = "networking.gke.io/l4-regional-external-legacy"
LEGACY_INTERNAL = "networking.gke.io/l4-regional-internal-legacy"
RBS = "networking.gke.io/l4-regional-external"
OURS = "example.com/lb"
INTERNAL = {"networking.gke.io/load-balancer-type": "Internal"}
RBS_ANNOTATED = {"cloud.google.com/l4-rbs": "enabled"}


@dataclass(frozen=True)
class Case:
    id: str
    lb_class: str | None
    eligible: bool
    target_pool: bool  # whether the cloud provider makes it one (the scope guard's view)
    annotations: dict[str, str] | None = None


CASES = [
    Case("no class: the cloud provider's target pool", None, True, True),
    Case("the legacy external class: the cloud provider's pool", LEGACY_EXTERNAL, True, True),
    Case(
        "the legacy external class wins over an Internal annotation",
        LEGACY_EXTERNAL,
        True,
        True,
        INTERNAL,
    ),
    Case(
        "the legacy external class wins over the l4-rbs annotation",
        LEGACY_EXTERNAL,
        True,
        True,
        RBS_ANNOTATED,
    ),
    Case("the legacy internal class: an internal LB, no pool", LEGACY_INTERNAL, False, False),
    Case("ingress-gce's backend-service class", RBS, False, False),
    Case("another controller's class", "example.com/other", False, False),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_which_classes_leave_the_pool_to_lbhc(case: Case) -> None:
    web = service("web", lb_class=case.lb_class, annotations=case.annotations)
    snapshot = cluster(services=(web,))
    world = cloud(check=our_check(), firewall=our_firewall(), pools=(pool_for(web),))
    cfg = config()

    assert (ineligibility(web, cfg) is None) is case.eligible
    attach = (Action.ATTACH, Kind.TARGET_POOL, pool_for(web).name)
    changes = {(c.action, c.kind, c.name) for c in plan(snapshot, world, cfg).changes}
    assert (attach in changes) is case.eligible
    (status,) = assessed(snapshot, world, cfg).services
    wanted = LbhcCheckState.PENDING if case.eligible else LbhcCheckState.NOT_APPLICABLE
    assert status.lbhc is wanted, status.reason
    if not case.eligible:
        assert f"loadBalancerClass {case.lb_class}" in status.reason
    assert expects_target_pool(web) is case.target_pool


def test_a_class_configured_as_lbhcs_is_eligible_the_legacy_internal_one_never() -> None:
    cfg = config(load_balancer_classes=(OURS,))
    assert ineligibility(service("web", lb_class=OURS), cfg) is None
    assert ineligibility(service("web", lb_class=LEGACY_INTERNAL), cfg) is not None
