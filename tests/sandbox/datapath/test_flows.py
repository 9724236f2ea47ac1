"""DataPath over real connections: a forwarding rule's listener spreads new connections over
the pool's node backends, follows the pool (an instance removed: its flows reset), the nodes
(a VM gone: its flows dropped, clients time out) and health as the fake's own prober sees it
(new connections avoid UNHEALTHY members; established ones stay or move as configured), and
records every flow as it saw it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest

from lbhc.sandbox.datapath import DataPath, FlowRecord
from lbhc.sandbox.datapath.choice import HEALTHY, UNHEALTHY
from tests.sandbox.datapath.builders import (
    PROJECT,
    REGION,
    RULE,
    Answer,
    ask,
    backends,
    compute_fake,
    connect,
    data_path,
    instance_url,
    one_exchange,
    pool_url,
    probed,
    remove_instance,
    still_open,
)
from tests.waiting import wait_for

NODES = ("node-0", "node-1", "node-2")


def record(path: DataPath, client_port: int) -> FlowRecord | None:
    return next((f for f in path.flows() if f.client_port == client_port), None)


def states(path: DataPath, instance: str | None = None) -> set[str]:
    """The health states the data path sees now, of every member or of one."""
    frontend = path.frontend(RULE)
    if frontend is None:
        return set()
    return {s for m, s in frontend.health.items() if instance in (None, m)}


def ended(path: DataPath, client_port: int) -> FlowRecord:
    def done() -> FlowRecord | None:
        found = record(path, client_port)
        return found if found is not None and found.outcome != "open" else None

    return wait_for(done, what=f"the flow from port {client_port} ended")


def test_connections_spread_over_the_nodes_and_are_recorded() -> None:
    with backends(NODES) as nodes, data_path(compute_fake(NODES), nodes) as path:
        answered: dict[int, str] = {}
        for _ in range(60):
            with connect(path.address(RULE)) as sock:
                answered[sock.getsockname()[1]] = ask(sock).node
        assert Counter(answered.values()).keys() == set(NODES)
        for port, node in answered.items():
            flow = ended(path, port)
            assert (flow.rule, flow.node, flow.outcome) == (RULE, node, "completed")
            assert flow.instance == instance_url(node)
            assert flow.ended is not None and flow.ended >= flow.started


def test_a_long_lived_connection_stays_on_its_node() -> None:
    with (
        backends(NODES) as nodes,
        data_path(compute_fake(NODES), nodes) as path,
        connect(path.address(RULE)) as sock,
    ):
        answers = {ask(sock) for _ in range(10)}
        assert len(answers) == 1 and next(iter(answers)).node in NODES
        assert record(path, sock.getsockname()[1]) is not None


def test_an_empty_pool_drops_connections() -> None:
    with backends(NODES) as nodes, data_path(compute_fake(()), nodes) as path:
        with connect(path.address(RULE)) as sock:
            port = sock.getsockname()[1]
            assert ask(sock) == Answer(failure="timeout")
            assert still_open(sock)
        flow = ended(path, port)
        assert (flow.instance, flow.node, flow.outcome) == (None, None, "dropped")


def test_an_instance_removed_from_the_pool_resets_its_flows() -> None:
    fake = compute_fake(NODES)
    with backends(NODES) as nodes, data_path(fake, nodes) as path:
        with connect(path.address(RULE)) as sock:
            victim = ask(sock).node
            remove_instance(fake, victim)  # the service controller's node sync
            wait_for(lambda: not still_open(sock), what="the client reset")
            assert ask(sock) == Answer(failure="reset")
            assert ended(path, sock.getsockname()[1]).outcome == "reset"
        assert {one_exchange(path.address(RULE)).node for _ in range(20)} <= set(NODES) - {victim}


def test_a_vanished_member_drops_its_flows_and_new_ones_hashed_to_it() -> None:
    with backends(NODES) as nodes, data_path(compute_fake(NODES), nodes) as path:
        with connect(path.address(RULE)) as sock:
            victim = ask(sock).node
            nodes.vanish(victim)  # its VM is gone; still a member of the pool
            assert ask(sock) == Answer(failure="timeout")
            assert still_open(sock)
            port = sock.getsockname()[1]
        assert ended(path, port).outcome == "dropped"
        outcomes: dict[int, Answer] = {}
        for _ in range(9):
            with connect(path.address(RULE)) as new:
                outcomes[new.getsockname()[1]] = ask(new)
        for client_port, answer in outcomes.items():
            flow = ended(path, client_port)
            if flow.node == victim:
                assert (answer.failure, flow.outcome) == ("timeout", "dropped")
            else:
                assert (answer.node, flow.outcome) == (flow.node, "completed")


@dataclass(frozen=True)
class KeepCase:
    keep_established: bool
    established: str  # what the established flow gets once its instance is UNHEALTHY
    outcome: str


KEEP_CASES = [
    KeepCase(keep_established=True, established="answered", outcome="completed"),
    KeepCase(keep_established=False, established="reset", outcome="reset"),
]


@pytest.mark.parametrize("case", KEEP_CASES, ids=lambda c: f"keep={c.keep_established}")
def test_an_established_flow_whose_instance_turns_unhealthy(case: KeepCase) -> None:
    two = NODES[:2]
    fake = compute_fake(two, check=True)
    with (
        probed(fake, two) as health,
        backends(two) as nodes,
        data_path(fake, nodes, keep_established=case.keep_established) as path,
    ):
        wait_for(lambda: states(path) == {HEALTHY}, what="both instances HEALTHY")
        with connect(path.address(RULE)) as sock:
            node = ask(sock).node
            health[node].status = 503  # its /healthz fails: the prober marks it UNHEALTHY
            url = instance_url(node)
            wait_for(lambda: states(path, url) == {UNHEALTHY}, what=f"{node} UNHEALTHY")
            assert states(path) == {HEALTHY, UNHEALTHY}
            path.sync()  # a review after the change, for sure
            answer = ask(sock)
            if case.established == "answered":
                assert answer == Answer(node=node)
            else:
                assert answer == Answer(failure="reset")
            port = sock.getsockname()[1]
        # New connections go to the HEALTHY one only, whatever the parameter.
        (other,) = set(two) - {node}
        assert {one_exchange(path.address(RULE)).node for _ in range(10)} == {other}
        assert ended(path, port).outcome == case.outcome


def test_fail_open_when_no_instance_is_healthy() -> None:
    fake = compute_fake(NODES, check=True)
    with probed(fake, NODES) as health, backends(NODES) as nodes, data_path(fake, nodes) as path:
        for node in NODES:
            health[node].status = 503
        wait_for(lambda: states(path) == {UNHEALTHY}, what="every instance UNHEALTHY")
        answered = {one_exchange(path.address(RULE)).node for _ in range(30)}
        assert answered == set(NODES)


def test_listeners_follow_the_forwarding_rules() -> None:
    fake = compute_fake(NODES)
    with backends(NODES) as nodes, data_path(fake, nodes) as path:
        assert path.address("late") is None
        fake.add_forwarding_rule(
            PROJECT, REGION, "late", target=pool_url(), ip_address="203.0.113.99"
        )
        address = wait_for(lambda: path.address("late"), what="a listener for the new rule")
        with connect(address) as sock:
            assert ask(sock).node in NODES
            status, _, body = fake.handle(
                "DELETE", f"/compute/v1/projects/{PROJECT}/regions/{REGION}/forwardingRules/late"
            )
            assert status == 200, body
            wait_for(lambda: path.address("late") is None, what="the listener closed")
            assert ask(sock) == Answer(failure="timeout")  # its packets go nowhere now
            port = sock.getsockname()[1]
        assert ended(path, port).outcome == "dropped"
        assert one_exchange(path.address(RULE)).node in NODES
