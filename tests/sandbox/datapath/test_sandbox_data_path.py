"""The data path in the Sandbox (SandboxOptions.data_path): connections to every forwarding
rule the emulated cloud controllers made, target pools and backend services alike, reach the
nodes' NodePorts and spread over them; a Node deleted from the apiserver vanishes: its flow is
never answered again, and once the service controller's node sync cuts it from the pools, new
connections go to the other nodes only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lbhc.sandbox.datapath import SandboxDataPath
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node_name
from tests.sandbox.datapath.builders import Answer, ask, connect, one_exchange, still_open
from tests.waiting import wait_for

SPEC = SandboxSpec(nodes=3, services=1, local_services=0)  # web-0, legacy-1, rbs-2, ilb-3, ...
NODES = {node_name(i) for i in range(SPEC.nodes)}


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    options = SandboxOptions(
        spec=SPEC, time_scale=0.1, operation_latency=0.0, kube_proxy_port=0, data_path=True
    )
    with Sandbox(options) as started:
        yield started


def data_path(sandbox: Sandbox) -> SandboxDataPath:
    assert sandbox.data_path is not None, "SandboxOptions.data_path is on"
    return sandbox.data_path


def members(sandbox: Sandbox, pool: str) -> set[str]:
    """The names of the pool's instances."""
    found = sandbox.compute.target_pools(SPEC.project, SPEC.region)[pool].get("instances", [])
    return {url.rsplit("/", 1)[-1] for url in found}


def test_off_by_default() -> None:
    assert SandboxOptions().data_path is False
    assert Sandbox().data_path is None


def test_every_rule_spreads_connections_over_the_nodes(sandbox: Sandbox) -> None:
    path = data_path(sandbox)
    rules = path.path.addresses()
    kinds = {f.kind for name in rules if (f := path.path.frontend(name)) is not None}
    assert kinds == {"targetPool", "backendService"}
    assert len(rules) == SPEC.service_count
    listening = path.listening()  # the rules' listeners and every Service's NodePorts
    assert len(listening) == len(rules) + SPEC.service_count * SPEC.nodes
    assert {host for host, _ in listening} == {"127.0.0.1"}
    for name, address in rules.items():

        def reached(address: tuple[str, int] = address) -> bool:
            # Health settles in the first probe intervals; until then a member may be skipped.
            return {one_exchange(address).node for _ in range(30)} == NODES

        wait_for(reached, timeout=20, what=f"connections to rule {name} reaching every node")
    # Each ends when the data path reads the client's close: all of them, and none failed.
    wait_for(lambda: {f.outcome for f in path.flows()} == {"completed"}, what="flows completed")


def test_a_deleted_node_vanishes_and_is_cut(sandbox: Sandbox) -> None:
    path = data_path(sandbox)
    rule = sandbox.load_balancer_name(SPEC.namespace, "web-0")
    assert path.rule_names(f"{SPEC.namespace}/web-0") == [rule]
    with connect(path.address(rule)) as sock:
        victim = ask(sock).node
        assert victim in members(sandbox, rule)
        port = sock.getsockname()[1]
        sandbox.kube.delete("Node", None, victim)  # the autoscaler's delete, after its VM's
        backends = path.backends(f"{SPEC.namespace}/web-0")
        assert backends is not None
        wait_for(lambda: backends.vanished(victim), what=f"{victim} vanished")
        # Dropped while still a member (a timeout), reset once cut: never answered again.
        assert ask(sock).failure in ("timeout", "reset")
    wait_for(lambda: victim not in members(sandbox, rule), timeout=20, what=f"{victim} cut")
    answers = {one_exchange(path.address(rule)) for _ in range(20)}
    assert {a.node for a in answers} <= NODES - {victim}  # no failure either
    flow = wait_for(
        lambda: next(
            (f for f in path.flows() if f.client_port == port and f.outcome != "open"), None
        ),
        what="the victim's flow ended",
    )
    assert flow.node == victim and flow.outcome in ("dropped", "reset")


def endpoint_pod(name: str, node: str, ready: bool = True) -> dict[str, Any]:
    """A Pod a Service selecting app=<name> sends to, on `node`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{node}",
            "namespace": SPEC.namespace,
            "labels": {"app": name},
        },
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app:1"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_a_local_service_is_answered_only_where_it_has_a_ready_endpoint() -> None:
    spec = SandboxSpec(nodes=3, services=1, local_services=1, backend_service_lbs=False)
    options = SandboxOptions(
        spec=spec, time_scale=0.1, operation_latency=0.0, kube_proxy_port=0, data_path=True
    )
    with Sandbox(options) as sandbox:
        path = data_path(sandbox)
        service = f"{spec.namespace}/local-0"
        backends = path.backends(service)
        assert backends is not None
        serving, unready = node_name(1), node_name(2)
        sandbox.kube.upsert(endpoint_pod("local-0", serving))
        sandbox.kube.upsert(endpoint_pod("local-0", unready, ready=False))
        wait_for(
            lambda: one_exchange(backends.address(serving)).node == serving,
            what="the node with a ready endpoint answering",
        )
        for node in (node_name(0), unready):  # kube-proxy drops it there
            assert one_exchange(backends.address(node)).failure == "timeout"


def test_a_vm_deleted_before_its_node_drops_flows_until_the_cut_resets_them(
    sandbox: Sandbox,
) -> None:
    """The autoscaler's order: the VM goes first (its flows dropped while it is still a
    member), the Node object later (then the node sync cuts it, and the flow is reset)."""
    path = data_path(sandbox)
    rule = sandbox.load_balancer_name(SPEC.namespace, "web-0")
    with connect(path.address(rule)) as sock:
        victim = ask(sock).node
        path.vanish(victim)  # deleted through the cloud provider; its Node stays
        assert ask(sock) == Answer(failure="timeout")
        assert still_open(sock) and victim in members(sandbox, rule)
        sandbox.kube.delete("Node", None, victim)  # the lifecycle controller's next look
        wait_for(lambda: victim not in members(sandbox, rule), timeout=20, what=f"{victim} cut")
        wait_for(lambda: not still_open(sock), what="the flow reset once its instance was cut")
        assert ask(sock) == Answer(failure="reset")
        port = sock.getsockname()[1]
    flow = next(f for f in path.flows() if f.client_port == port)
    assert (flow.node, flow.outcome) == (victim, "reset")
