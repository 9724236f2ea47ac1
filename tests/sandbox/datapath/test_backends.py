"""NodeBackends: a Service's NodePort on every node. A serving node answers every line with its
name, on short and long-lived connections; a node without a local endpoint (Local policy)
and a vanished node never answer and never close: clients time out."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lbhc.sandbox.datapath import NodeBackends
from tests.sandbox.datapath.builders import Answer, ask, connect, one_exchange, still_open

NODES = ("node-0", "node-1", "node-2")


def test_each_node_answers_with_its_name() -> None:
    with NodeBackends() as backends:
        for node in NODES:
            backends.add(node)
        for node in NODES:
            assert one_exchange(backends.address(node)) == Answer(node=node)
        assert {backends.answered(n) for n in NODES} == {1}


def test_a_long_lived_connection_is_answered_line_after_line() -> None:
    with NodeBackends() as backends:
        backends.add("node-0")
        with connect(backends.address("node-0")) as sock:
            assert [ask(sock) for _ in range(5)] == [Answer(node="node-0")] * 5
        assert backends.answered("node-0") == 5


def test_adding_a_node_twice_keeps_its_server() -> None:
    with NodeBackends() as backends:
        assert backends.add("node-0") == backends.add("node-0") == backends.address("node-0")
        assert backends.address("node-9") is None


@dataclass(frozen=True)
class PolicyCase:
    desc: str
    local_nodes: frozenset[str] | None  # None: Cluster
    answered: frozenset[str]


POLICY_CASES = [
    PolicyCase("Cluster: every node", None, frozenset(NODES)),
    PolicyCase("Local: the node with an endpoint", frozenset({"node-1"}), frozenset({"node-1"})),
    PolicyCase("Local without endpoints: none", frozenset(), frozenset()),
]


@pytest.mark.parametrize("case", POLICY_CASES, ids=lambda c: c.desc)
def test_who_answers_follows_the_traffic_policy(case: PolicyCase) -> None:
    local = case.local_nodes
    serves = None if local is None else local.__contains__
    with NodeBackends(serves) as backends:
        for node in NODES:
            backends.add(node)
        for node in NODES:
            with connect(backends.address(node)) as sock:
                answer = ask(sock)
                if node in case.answered:
                    assert answer == Answer(node=node)
                else:  # kube-proxy drops it: no answer, and the connection stays open
                    assert answer == Answer(failure="timeout")
                    assert still_open(sock)


def test_a_vanished_node_drops_open_and_new_connections_without_closing_them() -> None:
    with NodeBackends() as backends:
        backends.add("node-0")
        backends.add("node-1")
        with connect(backends.address("node-0")) as before:
            assert ask(before) == Answer(node="node-0")
            backends.vanish("node-0")
            assert backends.vanished("node-0")
            assert ask(before) == Answer(failure="timeout")
            assert still_open(before)
            with connect(backends.address("node-0")) as after:
                assert ask(after) == Answer(failure="timeout")
                assert still_open(after)
        assert one_exchange(backends.address("node-1")) == Answer(node="node-1")
        assert backends.answered("node-0") == 1


def test_a_closed_backends_refuses_more_nodes() -> None:
    backends = NodeBackends()
    address = backends.add("node-0")
    backends.close()
    backends.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        backends.add("node-1")
    with pytest.raises(ConnectionRefusedError):
        one_exchange(address)
