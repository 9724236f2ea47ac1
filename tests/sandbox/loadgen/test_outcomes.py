"""Each outcome classified right, over real sockets on 127.0.0.1: a backend per behaviour of
the data path (answers with its node, never answers, resets, closes, talks nonsense), a port
that refuses, a listener whose queue is full. Short connections and long-lived ones alike."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from lbhc.sandbox.loadgen import LoadGenerator, LoadReport, LoadSpec
from tests.sandbox.loadgen.servers import Address, full_backlog, line_server, refusing_port

TIMEOUT = 0.3
SLACK = 0.05  # a timer may fire a hair early against another clock's reading


@dataclass(frozen=True)
class Case:
    backend: str  # a LineServer mode, or "refused" / "full-backlog"
    outcome: str
    node: str | None = None
    waits_timeout: bool = False  # the attempt lasted at least a timeout


CASES = [
    Case("answer", "completed", node="node-a"),
    Case("silent", "timed-out", waits_timeout=True),
    Case("reset", "reset"),
    Case("close", "closed"),
    Case("garbage", "error"),
    Case("refused", "refused"),
    Case("full-backlog", "timed-out", waits_timeout=True),
]


@contextlib.contextmanager
def backend(kind: str) -> Iterator[Address]:
    if kind == "refused":
        with refusing_port() as address:
            yield address
    elif kind == "full-backlog":
        with full_backlog() as address:
            yield address
    else:
        with line_server(kind) as server:
            yield server.address


def run(address: Address, **spec: float) -> LoadReport:
    timeouts = {"connect_timeout_sec": TIMEOUT, "response_timeout_sec": TIMEOUT}
    return LoadGenerator({"lb": address}, LoadSpec(**{**timeouts, **spec})).run()  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.backend)
def test_a_short_connection_is_classified_by_what_the_backend_does(case: Case) -> None:
    with backend(case.backend) as address:
        report = run(address, rate_per_sec=10, duration_sec=0.3, long_lived=0)
    shorts = [a for a in report.attempts if a.kind == "short"]
    started = [a for a in shorts if a.outcome != "skipped"]
    assert len(shorts) == 3 and started, report.attempts  # slots at 0, 0.1 and 0.2 s
    assert {(a.outcome, a.node) for a in started} == {(case.outcome, case.node)}
    if case.waits_timeout:
        assert all(a.ended - a.started >= TIMEOUT - SLACK for a in started)
    assert report.completed == (len(started) if case.outcome == "completed" else 0)
    assert report.failed == (0 if case.outcome == "completed" else len(started))
    assert report.cut == 0


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.backend)
def test_a_long_lived_connection_is_classified_by_its_first_answer(case: Case) -> None:
    """Whatever breaks it before its first answer: counted once, not cut (it was never up),
    not reopened."""
    with backend(case.backend) as address:
        report = run(address, rate_per_sec=0, duration_sec=0.6, long_lived=2, ping_interval_sec=0.1)
    assert len(report.attempts) == 2
    assert {(a.kind, a.outcome, a.node) for a in report.attempts} == {
        ("long", case.outcome, case.node)
    }
    if case.outcome == "completed":  # it lasted the whole run
        assert all(a.ended >= report.started + 0.6 for a in report.attempts)
        assert (report.completed, report.unestablished) == (2, 0)
    else:
        assert (report.completed, report.unestablished) == (0, 2)
    assert (report.cut, report.failed) == (0, 0)
