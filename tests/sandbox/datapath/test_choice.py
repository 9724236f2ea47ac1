"""choose_instance: where a passthrough network load balancer sends a new connection, judged
from tables: HEALTHY members only, all of them when none is (fail open), nowhere when there is
no member; the same flow always to the same member; flows spread; affinities hash less."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from lbhc.sandbox.datapath.choice import HEALTHY, UNHEALTHY, Flow, choose_instance

A, B, C = "instance-a", "instance-b", "instance-c"
H, U = HEALTHY, UNHEALTHY


def flow(client_port: int = 40000, client_ip: str = "127.0.0.1", rule_port: int = 80) -> Flow:
    return Flow(client_ip, client_port, "203.0.113.10", rule_port)


def flows(count: int = 600) -> list[Flow]:
    return [flow(40000 + i) for i in range(count)]


@dataclass(frozen=True)
class Case:
    desc: str
    members: tuple[str, ...]
    health: dict[str, str] = field(default_factory=dict)
    # The members new connections may go to; each of them must get some of `flows()`.
    reach: frozenset[str] = frozenset()


CASES = [
    Case("all healthy: every member", (A, B, C), {A: H, B: H, C: H}, frozenset({A, B, C})),
    Case("healthy ones only", (A, B, C), {A: U, B: H, C: H}, frozenset({B, C})),
    Case("the one healthy member takes all", (A, B, C), {A: U, B: H, C: U}, frozenset({B})),
    Case("none healthy: fail open to all", (A, B, C), {A: U, B: U, C: U}, frozenset({A, B, C})),
    Case("no health known counts as unhealthy", (A, B), {A: H}, frozenset({A})),
    Case("no health at all: fail open", (A, B), {}, frozenset({A, B})),
    Case("empty pool: nowhere", (), {A: H}, frozenset()),
    Case("a member listed twice counts once", (A, A, B), {A: U, B: H}, frozenset({B})),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.desc)
def test_where_new_connections_go(case: Case) -> None:
    chosen = Counter(choose_instance(f, case.members, case.health) for f in flows())
    if not case.reach:
        assert chosen == Counter({None: len(flows())})
        return
    assert set(chosen) == case.reach
    # Spread: each reachable member gets at least half its even share.
    assert min(chosen.values()) >= len(flows()) / len(case.reach) / 2


def test_the_same_flow_goes_to_the_same_member_whatever_the_members_order() -> None:
    health = {A: H, B: H, C: H}
    for f in flows(50):
        first = choose_instance(f, (A, B, C), health)
        assert choose_instance(f, (A, B, C), health) == first
        assert choose_instance(f, (C, A, B), health) == first


def test_a_member_leaving_moves_only_its_own_flows() -> None:
    """Only the flows of the member gone are re-hashed; the others keep theirs."""
    health = {A: H, B: H, C: H}
    before = {f: choose_instance(f, (A, B, C), health) for f in flows()}
    after = {f: choose_instance(f, (A, C), health) for f in flows()}
    moved = {f for f in before if before[f] != after[f]}
    assert moved == {f for f in before if before[f] == B}


def test_a_member_turning_unhealthy_moves_only_its_own_flows() -> None:
    before = {f: choose_instance(f, (A, B, C), {A: H, B: H, C: H}) for f in flows()}
    after = {f: choose_instance(f, (A, B, C), {A: H, B: U, C: H}) for f in flows()}
    assert {f for f in before if before[f] != after[f]} == {f for f in before if before[f] == B}


@dataclass(frozen=True)
class AffinityCase:
    affinity: str
    # Does the member depend on the client's port? On the rule's port?
    by_client_port: bool
    by_rule_port: bool


AFFINITY_CASES = [
    AffinityCase("NONE", by_client_port=True, by_rule_port=True),
    AffinityCase("CLIENT_IP_PORT_PROTO", by_client_port=True, by_rule_port=True),
    AffinityCase("CLIENT_IP_PROTO", by_client_port=False, by_rule_port=False),
    AffinityCase("CLIENT_IP", by_client_port=False, by_rule_port=False),
    AffinityCase("CLIENT_IP_NO_DESTINATION", by_client_port=False, by_rule_port=False),
]


@pytest.mark.parametrize("case", AFFINITY_CASES, ids=lambda c: c.affinity)
def test_session_affinity_hashes_its_tuple(case: AffinityCase) -> None:
    members, health = (A, B, C), {A: H, B: H, C: H}
    by_port = {
        choose_instance(flow(p), members, health, case.affinity) for p in range(40000, 40100)
    }
    by_rule = {
        choose_instance(flow(40000, rule_port=p), members, health, case.affinity)
        for p in range(80, 180)
    }
    assert (len(by_port) > 1) is case.by_client_port
    assert (len(by_rule) > 1) is case.by_rule_port


def test_client_ip_affinity_spreads_clients() -> None:
    members, health = (A, B, C), {A: H, B: H, C: H}
    chosen = {
        choose_instance(flow(client_ip=f"198.51.100.{i}"), members, health, "CLIENT_IP")
        for i in range(1, 100)
    }
    assert chosen == {A, B, C}


def test_an_affinity_a_passthrough_load_balancer_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="GENERATED_COOKIE"):
        choose_instance(flow(), (A,), {A: H}, "GENERATED_COOKIE")
