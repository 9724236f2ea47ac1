"""The controller lists the shared instance groups' members (a page per 500 nodes) only while a
node is leaving, the only time a backend service's membership is judged; and then a node
taken out of the group is out of that load balancer in the verdict."""

from __future__ import annotations

import time

from lbhc.planner.drain import DrainState
from lbhc.planner.status import StatusReport
from tests.builders import PROJECT, REGION
from tests.builders import kube as kube_builders
from tests.controller.harness import World, world
from tests.waiting import wait_for

ZONE = f"{REGION}-a"
TAINT = "ToBeDeletedByClusterAutoscaler"
BACKEND = "k8s2-abc-default-rbs"


def seed_rbs(w: World) -> None:
    """An ingress-gce RBS load balancer on the shared group, node-1 no longer in it."""
    fake = w.compute
    vms = {n: fake.add_instance(PROJECT, ZONE, n)["selfLink"] for n in ("node-0", "node-2")}
    group = fake.add_instance_group(PROJECT, ZONE, "k8s-ig--abc", instances=list(vms.values()))
    check = fake.add_health_check(
        PROJECT,
        "k8s2-abc-l4-shared-hc",
        region=REGION,
        type="HTTP",
        httpHealthCheck={"port": 10256, "requestPath": "/healthz"},
    )
    backend = fake.add_backend_service(
        PROJECT,
        REGION,
        BACKEND,
        protocol="TCP",
        healthChecks=[check["selfLink"]],
        backends=[{"group": group["selfLink"]}],
        connectionDraining={"drainingTimeoutSec": 30},
    )
    fake.add_forwarding_rule(
        PROJECT, REGION, "rbs", backend_service=backend["selfLink"], ip_address="34.0.0.9"
    )
    obj = kube_builders.service("rbs")
    obj["metadata"]["annotations"] = {
        "cloud.google.com/l4-rbs": "enabled",
        "service.kubernetes.io/backend-service": BACKEND,
    }
    w.kube.upsert(obj)


def member_reads(w: World) -> int:
    return sum(1 for e in w.compute.journal if e.path.endswith("/listInstances"))


def test_group_members_are_read_only_while_a_node_is_leaving() -> None:
    with world() as w:
        for i in range(3):
            w.kube.upsert(kube_builders.kube_proxy_pod(f"node-{i}", version="v1.31.4", ready=True))
        seed_rbs(w)
        app = w.start()

        def report() -> StatusReport | None:
            return app.controller.last_report if app.controller else None

        wait_for(lambda: report() is not None, what="a first pass")
        assert member_reads(w) == 0  # nobody leaving: nothing to judge membership for

        w.kube.taint("node-1", TAINT, str(int(time.time())), "NoSchedule")

        def node_1_out() -> bool:
            r = report()
            drain = next((n.drain for n in r.nodes if n.node == "node-1"), None) if r else None
            return drain is not None and [x.view.name for x in drain.taken_out] == [BACKEND]

        wait_for(node_1_out, what="node-1 out of the RBS load balancer in the verdict")
        assert member_reads(w) >= 1
        last = report()
        assert last is not None
        drain = next(n.drain for n in last.nodes if n.node == "node-1")
        assert drain.state is DrainState.NOT_APPLICABLE, drain.reason
        assert "not in its instance groups, as read" in drain.reason
