"""established_flow: what becomes of an established flow when its load balancer changes,
judged from a table: it stays while its instance is a member (and HEALTHY, unless flows stay
on unhealthy ones); otherwise it is re-hashed, and reset by the instance it lands on, or
dropped when that is nowhere or a node that cannot answer."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lbhc.sandbox.datapath.choice import HEALTHY, UNHEALTHY, Flow, choose_instance
from lbhc.sandbox.datapath.frontends import TARGET_POOL, Frontend
from lbhc.sandbox.datapath.rehash import established_flow

A, B = "instance-a", "instance-b"
H, U = HEALTHY, UNHEALTHY


def frontend(members: tuple[str, ...], health: dict[str, str]) -> Frontend:
    return Frontend(
        "rule",
        "203.0.113.10",
        80,
        "TCP",
        "pool-url",
        TARGET_POOL,
        "demo/web",
        members=members,
        health=health,
    )


def flow_on(instance: str, members: tuple[str, ...] = (A, B)) -> Flow:
    """A flow a new connection would have placed on `instance` while every member was
    HEALTHY."""
    health = dict.fromkeys(members, H)
    for port in range(40000, 41000):
        flow = Flow("127.0.0.1", port, "203.0.113.10", 80)
        if choose_instance(flow, members, health) == instance:
            return flow
    raise AssertionError(f"no flow lands on {instance}")


@dataclass(frozen=True)
class Case:
    desc: str
    members: tuple[str, ...]
    health: dict[str, str]
    keep_established: bool = True
    silent: frozenset[str] = field(default_factory=frozenset)  # instances whose node is gone
    rule_gone: bool = False
    verdict: str = "keep"


CASES = [
    Case("a healthy member keeps its flow", (A, B), {A: H, B: H}),
    Case("an unhealthy member keeps it when flows stay", (A, B), {A: U, B: H}),
    Case(
        "else it moves, and the other node resets it",
        (A, B),
        {A: U, B: H},
        keep_established=False,
        verdict="reset",
    ),
    Case("fail open hashes it back onto itself", (A,), {A: U}, keep_established=False),
    Case("a member removed: reset by the next one", (B,), {B: H}, verdict="reset"),
    Case("removed, and the next one unhealthy: still reset", (B,), {B: U}, verdict="reset"),
    Case("removed, nothing left: dropped", (), {}, verdict="drop"),
    Case(
        "removed, the next node gone too: dropped",
        (B,),
        {B: H},
        silent=frozenset({B}),
        verdict="drop",
    ),
    Case(
        "the forwarding rule deleted: dropped", (A, B), {A: H, B: H}, rule_gone=True, verdict="drop"
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.desc)
def test_what_becomes_of_an_established_flow(case: Case) -> None:
    verdict = established_flow(
        flow_on(A),
        A,
        None if case.rule_gone else frontend(case.members, case.health),
        keep_established=case.keep_established,
        answers=lambda instance: instance not in case.silent,
    )
    assert verdict == case.verdict
