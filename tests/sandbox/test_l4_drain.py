"""A node going away, as ingress-gce's backend-service load balancers see it, over real
sockets: its Cluster NEGs drop the node once its verdict under the NEG filter flips (the NEG
controller resyncs on that), while the shared instance groups keep it until some node is
added, deleted or changes readiness (the instance group controller's triggers); meanwhile
getHealth of the RBS backend service reads it UNHEALTHY when kube-proxy fails /healthz for it.
kubernetes/ingress-gce pkg/utils/zonegetter (the filters), pkg/instancegroups/controller.go,
pkg/neg/controller.go; kube-proxy's /healthz, pkg/proxy/healthcheck/proxy_health.go."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node, node_name
from lbhc.sandbox.upstream.compute import INGRESS_GCE_USER_AGENT
from lbhc.sandbox.upstream.ingress_gce.nodes import OPERATION_LABEL
from lbhc.sandbox.upstream.nodes import TO_BE_DELETED_TAINT
from tests.sandbox import l4_reads as gce
from tests.waiting import wait_for

# web-0, legacy-1, then one load balancer of each backend-service kind.
SPEC = SandboxSpec(nodes=3, services=1, local_services=0)
RBS, ILB, ILB_V1 = "rbs-2", "ilb-3", "ilb-v1-4"
VICTIM = node_name(1)
MEMBERSHIP_VERBS = {
    "addInstances",
    "removeInstances",
    "attachNetworkEndpoints",
    "detachNetworkEndpoints",
}
HOLD = "example.com/vm"  # a finalizer holding a Node being deleted, as a VM's teardown would


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    options = SandboxOptions(spec=SPEC, time_scale=0.05, operation_latency=0.0)
    with Sandbox(options) as running:
        yield running


def settled(sandbox: Sandbox) -> None:
    """Two whole passes of the emulated controllers from now."""
    controller = sandbox.service_controller
    assert controller is not None
    start = controller.passes
    wait_for(lambda: controller.passes >= start + 2, what="two controller passes")


def held_by(sandbox: Sandbox, service: str) -> set[str]:
    (group,) = gce.groups(sandbox, service)
    return gce.members(sandbox, group)


def taint(sandbox: Sandbox) -> None:
    sandbox.kube.taint(VICTIM, TO_BE_DELETED_TAINT, "1700000000", "NoSchedule")


def label_drain(sandbox: Sandbox) -> None:
    sandbox.kube.patch("Node", None, VICTIM, {"metadata": {"labels": {OPERATION_LABEL: "drain"}}})


def begin_deletion(sandbox: Sandbox) -> None:
    sandbox.kube.patch("Node", None, VICTIM, {"metadata": {"finalizers": [HOLD]}})
    sandbox.kube.delete("Node", None, VICTIM)


@dataclass(frozen=True)
class Mark:
    name: str
    apply: Callable[[Sandbox], None]
    in_neg: bool  # still in the internal LB's Cluster NEG
    lb_health: str  # getHealth of the RBS backend service (shared instance group)
    in_group_after_node_added: bool


MARKS = [
    # ToBeDeletedByClusterAutoscaler: out of every candidate filter; kube-proxy fails it.
    Mark("autoscaler-taint", taint, False, "UNHEALTHY", False),
    # operation.gke.io/type=drain: out of the NEG filter only; kube-proxy ignores it.
    Mark("drain-label", label_drain, False, "HEALTHY", True),
    # A deletionTimestamp: no filter looks at it; kube-proxy fails it.
    Mark("being-deleted", begin_deletion, True, "UNHEALTHY", True),
]


@pytest.mark.parametrize("mark", MARKS, ids=[m.name for m in MARKS])
def test_a_marked_node_leaves_neg_and_group_as_ingress_gce_decides(
    sandbox: Sandbox, mark: Mark
) -> None:
    everyone = {node_name(i) for i in range(SPEC.nodes)}
    for service in (RBS, ILB, ILB_V1):
        assert held_by(sandbox, service) == everyone, service
    healthy = dict.fromkeys(everyone, "HEALTHY")
    wait_for(lambda: gce.health(sandbox, RBS) == healthy, 20, "every node HEALTHY in rbs-2")

    mark.apply(sandbox)
    wait_for(lambda: (VICTIM in held_by(sandbox, ILB)) is mark.in_neg, 10, "the NEG's verdict")
    settled(sandbox)
    assert (VICTIM in held_by(sandbox, ILB)) is mark.in_neg
    assert held_by(sandbox, RBS) == everyone  # no instance group sync yet
    wait_for(
        lambda: gce.health(sandbox, RBS).get(VICTIM) == mark.lb_health,
        20,
        f"{VICTIM} {mark.lb_health} in rbs-2's getHealth",
    )
    assert gce.health(sandbox, RBS) == {**healthy, VICTIM: mark.lb_health}

    sandbox.kube.upsert(node(SPEC, SPEC.nodes, "v1.31.4"))  # an instance group sync starts
    newcomer = node_name(SPEC.nodes)
    wait_for(lambda: newcomer in held_by(sandbox, RBS), 10, f"{newcomer} in the groups")
    assert (VICTIM in held_by(sandbox, RBS)) is mark.in_group_after_node_added
    # The cloud provider's internal LB shares the groups (SkipIGsManagement: it only links).
    assert held_by(sandbox, ILB_V1) == held_by(sandbox, RBS)
    controller = sandbox.service_controller
    assert controller is not None
    cut = [(c.node, c.pool) for c in controller.group_cuts]
    group = f"k8s-ig--{sandbox.cloud_provider_uid}"
    assert cut == ([] if mark.in_group_after_node_added else [(VICTIM, group)])
    backends = [
        e
        for e in sandbox.compute.mutating_requests()
        if "/instanceGroups/" in e.path or "/networkEndpointGroups/" in e.path
    ]
    assert {e.user_agent for e in backends} == {INGRESS_GCE_USER_AGENT}
    assert {e.path.rsplit("/", 1)[-1] for e in backends} <= MEMBERSHIP_VERBS
