"""A Service whose load balancer appears in GCE after lbhc's pass for it: the service
controller's status update (status.loadBalancer.ingress) is what tells lbhc to look again,
not the resync minutes later."""

from __future__ import annotations

from lbhc.model.cluster import Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.cloud_provider import publish_ingress
from tests.builders import kube as kube_builders
from tests.controller.harness import PROJECT, REGION, world
from tests.waiting import wait_for
from tests.worlds import make_load_balancer


def test_a_pool_created_after_the_pass_is_attached_on_the_status_update() -> None:
    with world() as w:
        obj = w.kube.upsert(kube_builders.service("late"))
        svc = Service.model_validate(obj)
        pool = target_pool_name(svc.metadata.uid)
        app = w.start(resync_period=3600.0)  # no resync can be what attaches it
        wait_for(
            lambda: app.controller is not None and app.controller.passes >= 1,
            what="a pass that saw the Service and no pool",
        )
        passes = app.controller.passes if app.controller else 0

        make_load_balancer(w.kube, w.compute, svc)
        assert not w.attached(pool)
        publish_ingress(w.kube, w.compute, PROJECT, REGION, svc)
        wait_for(lambda: w.attached(pool), timeout=10, what="attach after the status update")
        assert app.controller is not None and app.controller.passes > passes
