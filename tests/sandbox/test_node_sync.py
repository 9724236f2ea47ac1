"""The current profile's service controller cuts nodes from target pools as upstream does
(k8s.io/cloud-provider controllers/service/controller.go): a node tainted
ToBeDeletedByClusterAutoscaler or given a deletionTimestamp stays in every pool, since neither
starts a node sync, until a node is added or deleted or an exclusion label flips; then it is
removed from every pool with removeInstance, and the cut recorded. A node labelled out is
removed at once, the flip being a trigger itself; a new Service's pool leaves out a tainted
node from the start. Real HTTP through the Compute fake, as the cloud provider's writes go."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node, node_name
from lbhc.sandbox.upstream.compute import USER_AGENT
from lbhc.sandbox.upstream.nodes import EXCLUDE_BALANCERS_LABEL, TO_BE_DELETED_TAINT
from tests.builders import kube
from tests.waiting import wait_for

# web-0, web-1 (Cluster, the nodes check), legacy-2 (a pool without a check); no backend-service
# load balancers, whose instance groups and NEGs test_l4_node_sync follows.
SPEC = SandboxSpec(
    nodes=3, services=2, local_services=0, cloud_provider="current", backend_service_lbs=False
)
VICTIM, OTHER = node_name(1), node_name(2)
HOLD = "example.com/vm"  # a finalizer holding a Node being deleted, as a VM's teardown would


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxOptions(spec=SPEC, operation_latency=0.0)) as running:
        yield running


def members(sandbox: Sandbox) -> dict[str, set[str]]:
    """Each target pool's instances, by name."""
    pools = sandbox.compute.target_pools(SPEC.project, SPEC.region)
    return {
        name: {url.rsplit("/", 1)[-1] for url in pool.get("instances", [])}
        for name, pool in pools.items()
    }


def in_pools(sandbox: Sandbox, node_: str) -> set[str]:
    return {pool for pool, held in members(sandbox).items() if node_ in held}


def settled(sandbox: Sandbox) -> None:
    """Two whole passes of the service controller from now: the second began after any change
    made before this call, so what that change makes it do is done."""
    controller = sandbox.service_controller
    assert controller is not None
    start = controller.passes
    wait_for(lambda: controller.passes >= start + 2, what="two service controller passes")


def cuts(sandbox: Sandbox) -> list[tuple[str, str]]:
    assert sandbox.service_controller is not None
    return [(c.node, c.pool) for c in sandbox.service_controller.cuts]


# -- marks a node gets that do not start a node sync -------------------------------------------


def taint(sandbox: Sandbox, name: str) -> None:
    sandbox.kube.taint(name, TO_BE_DELETED_TAINT, str(int(time.time())), "NoSchedule")


def begin_deletion(sandbox: Sandbox, name: str) -> None:
    """The Node gets a deletionTimestamp; a finalizer keeps it in the API."""
    sandbox.kube.patch("Node", None, name, {"metadata": {"finalizers": [HOLD]}})
    sandbox.kube.delete("Node", None, name)


# -- changes that do ---------------------------------------------------------------------------


def add_node(sandbox: Sandbox) -> Callable[[set[str]], bool]:
    sandbox.kube.upsert(node(SPEC, SPEC.nodes, "v1.31.4"))
    return lambda held: node_name(SPEC.nodes) in held


def delete_node(sandbox: Sandbox) -> Callable[[set[str]], bool]:
    sandbox.kube.delete("Node", None, OTHER)
    return lambda held: OTHER not in held


def exclude_node(sandbox: Sandbox) -> Callable[[set[str]], bool]:
    unparsable = {"metadata": {"labels": {EXCLUDE_BALANCERS_LABEL: ""}}}
    sandbox.kube.patch("Node", None, OTHER, unparsable)
    return lambda held: OTHER not in held


@pytest.mark.parametrize("mark", [taint, begin_deletion], ids=["tainted", "being-deleted"])
@pytest.mark.parametrize(
    "trigger", [add_node, delete_node, exclude_node], ids=["node-added", "node-deleted", "label"]
)
def test_a_marked_node_stays_in_every_pool_until_the_next_node_sync_cuts_it(
    sandbox: Sandbox,
    mark: Callable[[Sandbox, str], None],
    trigger: Callable[[Sandbox], Callable[[set[str]], bool]],
) -> None:
    pools = set(members(sandbox))
    assert len(pools) == 3 and in_pools(sandbox, VICTIM) == pools
    mark(sandbox, VICTIM)
    settled(sandbox)
    assert in_pools(sandbox, VICTIM) == pools  # no node sync: still sent new connections
    assert cuts(sandbox) == [] and sandbox.compute.mutating_requests() == []

    before = time.time()
    done = trigger(sandbox)
    expected = {(VICTIM, pool) for pool in pools}
    wait_for(lambda: expected <= set(cuts(sandbox)), what=f"{VICTIM} cut from every pool")
    assert not in_pools(sandbox, VICTIM)
    wait_for(lambda: all(done(held) for held in members(sandbox).values()), what="the trigger")
    assert sandbox.service_controller is not None
    assert all(before <= c.at <= time.time() for c in sandbox.service_controller.cuts)
    writes = sandbox.compute.mutating_requests()
    assert {e.path.rsplit("/", 1)[-1] for e in writes} <= {"addInstance", "removeInstance"}
    assert all((e.user_agent, e.client_id, e.status) == (USER_AGENT, "", 200) for e in writes)


@pytest.mark.parametrize(
    ("value", "cut"),
    [
        ("true", True),
        ("1", True),
        ("", True),  # does not parse as a bool: excluded, as upstream reads it
        ("yes", True),
        ("false", False),
        ("False", False),
    ],
)
def test_an_exclusion_label_takes_effect_at_once(sandbox: Sandbox, value: str, cut: bool) -> None:
    pools = set(members(sandbox))
    labels = {EXCLUDE_BALANCERS_LABEL: value}
    sandbox.kube.patch("Node", None, VICTIM, {"metadata": {"labels": labels}})
    if cut:
        expected = sorted((VICTIM, pool) for pool in pools)
        wait_for(lambda: sorted(cuts(sandbox)) == expected, what=f"{VICTIM} cut at once")
        assert not in_pools(sandbox, VICTIM)
    else:
        settled(sandbox)
        assert in_pools(sandbox, VICTIM) == pools and cuts(sandbox) == []

    # The label gone: included again, which is a flip (and a sync) only if it was excluded.
    unlabel = {"metadata": {"labels": {EXCLUDE_BALANCERS_LABEL: None}}}
    sandbox.kube.patch("Node", None, VICTIM, unlabel)
    wait_for(lambda: in_pools(sandbox, VICTIM) == pools, what=f"{VICTIM} in every pool")


def test_an_untainted_node_comes_back_only_with_the_next_node_sync(sandbox: Sandbox) -> None:
    pools = set(members(sandbox))
    taint(sandbox, VICTIM)
    delete_node(sandbox)
    expected = {(VICTIM, pool) for pool in pools}
    wait_for(lambda: expected <= set(cuts(sandbox)), what=f"{VICTIM} cut")
    assert not in_pools(sandbox, VICTIM)
    sandbox.kube.untaint(VICTIM, TO_BE_DELETED_TAINT)
    settled(sandbox)
    assert in_pools(sandbox, VICTIM) == set()  # the untaint is no trigger either
    add_node(sandbox)
    wait_for(lambda: in_pools(sandbox, VICTIM) == pools, what=f"{VICTIM} added back")


def test_a_new_service_gets_a_pool_without_the_tainted_node(sandbox: Sandbox) -> None:
    taint(sandbox, VICTIM)
    settled(sandbox)
    service = kube.service("shop", kube.with_port(443, node_port=31443), namespace=SPEC.namespace)
    sandbox.kube.upsert(service)
    lb = sandbox.load_balancer_name(SPEC.namespace, "shop")
    wait_for(lambda: lb in members(sandbox), what="shop's pool")
    assert members(sandbox)[lb] == {node_name(0), node_name(2)}
    assert all(VICTIM in held for pool, held in members(sandbox).items() if pool != lb)
    assert cuts(sandbox) == []  # never in the new pool: nothing was cut
