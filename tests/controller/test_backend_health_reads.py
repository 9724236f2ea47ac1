"""GCE's own view of backend-service load balancers, read by the controller's verifier within
the same budget as target pools': the real GCE client against the Compute fake over HTTP.
One regionBackendServices.getHealth answers for a whole zonal group, so several nodes of one
zone cost one read; a node the group does not list is out of that load balancer; the marked
node's verdict is verified from what was read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from lbhc.controller.events import ObjectRef
from lbhc.controller.lb_verifier import LbVerifier, VerifierOptions
from lbhc.controller.metrics import Metrics
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cloud import instance_urls
from lbhc.model.cluster import ClusterSnapshot
from lbhc.planner.drain import DrainState
from lbhc.planner.status import StatusReport
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.builders import (
    MODERN_IMAGE,
    PROJECT,
    REGION,
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    kube_proxy_pod,
    node,
)
from tests.builders.backend import (
    SHARED_GROUP,
    SHARED_HC,
    ZONE,
    annotated,
    backend,
    backend_view,
    rule_to,
)

NODES = ("a", "b", "c", "m")  # m is marked for deletion
MARKED_AT = 1_000_000
RBS = annotated("rbs", "k8s2-rbs")
BACKEND = backend("k8s2-rbs", SHARED_HC, backends=(SHARED_GROUP,), draining_timeout_sec=30)


@dataclass
class Rig:
    fake: ComputeFake
    verifier: LbVerifier
    metrics: Metrics
    snapshot: ClusterSnapshot
    now: list[float]
    vms: dict[str, str] = field(default_factory=dict)

    def at(self, seconds: float) -> None:
        self.now[0] = MARKED_AT + seconds
        self.verifier.tick()

    def calls(self) -> int:
        return sum(1 for e in self.fake.journal if e.path.endswith("/getHealth"))

    def report(self, members: tuple[str, ...] = NODES) -> StatusReport:
        """The status pass with what the verifier read (`members`: the group as listed)."""
        view = backend_view((BACKEND,), {SHARED_GROUP: members})
        world = cloud(
            rules=(rule_to(BACKEND, "34.0.0.9"),), backends=view, lb_health=self.verifier.view()
        )
        return assessed(self.snapshot, world)


@contextmanager
def rig(in_group: tuple[str, ...] = NODES) -> Iterator[Rig]:
    """`in_group`: the nodes the shared instance group holds in the fake."""
    nodes = tuple(
        node(n, taints=TO_BE_DELETED, taint_value=str(MARKED_AT)) if n == "m" else node(n)
        for n in NODES
    )
    pods = tuple(kube_proxy_pod(n.name, image=MODERN_IMAGE) for n in nodes)
    snapshot = cluster(services=(RBS,), nodes=nodes, pods=pods)
    vms = instance_urls(nodes, PROJECT, REGION)
    fake = ComputeFake()
    for name in NODES:
        fake.add_instance(PROJECT, ZONE, name)
    group = fake.add_instance_group(
        PROJECT, ZONE, SHARED_GROUP.rsplit("/", 1)[-1], instances=[vms[n] for n in in_group]
    )
    check = fake.add_health_check(
        PROJECT,
        SHARED_HC.name,
        region=REGION,
        type="HTTP",
        httpHealthCheck={"port": 10256, "requestPath": "/healthz"},
        checkIntervalSec=8,
        timeoutSec=1,
        healthyThreshold=1,
        unhealthyThreshold=3,
    )
    fake.add_backend_service(
        PROJECT,
        REGION,
        BACKEND.name,
        protocol="TCP",
        healthChecks=[check["selfLink"]],
        backends=[{"group": group["selfLink"]}],
    )
    now = [float(MARKED_AT)]
    metrics = Metrics()
    with ComputeFakeServer(fake) as server:
        gce = GceClient(GceClientConfig(project=PROJECT, region=REGION, endpoint=server.url))
        r = Rig(fake, None, metrics, snapshot, now, vms)  # type: ignore[arg-type]
        r.verifier = LbVerifier(
            gce,
            metrics,
            lambda _e: None,
            ObjectRef("Lease", "lbhc", "lbhc-system"),
            lambda _w: None,
            VerifierOptions(30, sample_every=60),
            clock=lambda: now[0],
        )
        r.verifier.observe(r.report(), vms)
        yield r


def test_one_call_answers_for_every_node_read_in_the_group() -> None:
    """The marked node and three serving samples, one zone: one getHealth, one read spent."""
    with rig() as r:
        r.at(0)
        assert r.calls() == 1
        spent = r.metrics.registry.get_sample_value(
            "lbhc_lb_health_reads_total", {"purpose": "marked", "result": "ok"}
        )
        assert spent == 1
        read = {node for (_, node) in r.verifier.view().readings}
        assert read == set(NODES)


def test_the_marked_nodes_turn_to_unhealthy_verifies_its_drain() -> None:
    with rig() as r:
        r.at(0)
        before = r.report().nodes[-1].drain
        assert before.state is DrainState.DRAINING
        assert before.verified, before.evidence  # a member, its check's class healthy
        r.fake.set_instance_health(r.vms["m"], "UNHEALTHY")
        r.at(11)  # a marked node is read again every 10 s
        after = r.report().nodes[-1].drain
        assert after.verified, after.evidence
        assert "UNHEALTHY in backend service k8s2-rbs" in after.evidence


def test_a_node_the_group_no_longer_lists_is_out_of_that_load_balancer() -> None:
    with rig(in_group=("a", "b", "c")) as r:
        r.at(0)
        reading = r.verifier.view().newest_in(frozenset({"k8s2-rbs"}), "m")
        assert reading is not None and reading.state.value == "NOT_MEMBER"
        # The read list may lag the pass's group listing: GCE's answer takes it out.
        drain = r.report(members=NODES).nodes[-1].drain
        assert drain.state is DrainState.NOT_APPLICABLE, drain.reason
        assert [x.view.name for x in drain.taken_out] == ["k8s2-rbs"]
        assert "connection draining lets established connections run up to 30 s" in drain.reason


def test_serving_nodes_all_unhealthy_past_the_bound_fail_the_class_open() -> None:
    with rig() as r:
        for name in ("a", "b", "c"):
            r.fake.set_instance_health(r.vms[name], "UNHEALTHY")
        for t in (0, 11, 22, 33):
            r.at(t)
        classes = r.report().pool_classes
        (verdict,) = [v for v in classes if v.pool_class.lb.value == "backend service"]
        assert verdict.health.value == "failing-open", verdict.reason
        drain = r.report().nodes[-1].drain
        assert drain.state is DrainState.NOT_DRAINING, drain.reason
