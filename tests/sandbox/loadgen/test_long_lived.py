"""Long-lived connections record the node they were on, and a cut when it happens: a reset
or a close is seen while the connection idles between pings (not at the next ping), a
backend that goes silent at the next ping's response timeout. Each counts once."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from lbhc.sandbox.loadgen import LoadGenerator, LoadSpec
from tests.sandbox.loadgen.servers import LineServer, line_server
from tests.waiting import wait_for

PING = 1.5  # long, so that a cut seen well before it was seen while idling


@pytest.fixture
def server() -> Iterator[LineServer]:
    with line_server("answer", name="node-b") as s:
        yield s


@pytest.mark.parametrize(
    ("cut_by", "outcome"),
    [(LineServer.reset_all, "reset"), (LineServer.close_all, "closed")],
    ids=["reset", "close"],
)
def test_a_long_lived_connection_is_cut_when_the_server_breaks_it(
    server: LineServer, cut_by: Callable[[LineServer], float], outcome: str
) -> None:
    spec = LoadSpec(rate_per_sec=0, duration_sec=60, long_lived=3, ping_interval_sec=PING)
    with LoadGenerator({"lb": server.address}, spec) as generator:
        # A second ping goes out only after the first answer was read: the node is known.
        wait_for(lambda: sorted(server.answers()) == [2, 2, 2], timeout=10, what="2nd pings")
        cut_at = cut_by(server)
        wait_for(lambda: generator.snapshot().cut == 3, timeout=5, what="3 cuts")
    report = generator.snapshot()
    assert report.stopped_early and len(report.attempts) == 3  # counted once, not reopened
    for attempt in report.attempts:
        assert (attempt.kind, attempt.outcome, attempt.node) == ("long", outcome, "node-b")
        assert cut_at <= attempt.ended < cut_at + PING * 2 / 3
    assert (report.cut, report.completed, report.failed, report.unestablished) == (3, 0, 0, 0)
    assert server.accepted == 3


def test_a_backend_that_goes_silent_cuts_it_at_the_next_pings_timeout(
    server: LineServer,
) -> None:
    """As when the node's VM is deleted: no answer, no close."""
    ping, timeout = 0.2, 0.3
    spec = LoadSpec(
        rate_per_sec=0,
        duration_sec=60,
        long_lived=1,
        ping_interval_sec=ping,
        response_timeout_sec=timeout,
    )
    with LoadGenerator({"lb": server.address}, spec) as generator:
        wait_for(lambda: server.answers() == [2], timeout=10, what="a second answer")
        silent_at = time.monotonic()
        server.set_mode("silent")
        wait_for(lambda: generator.snapshot().cut == 1, timeout=5, what="the cut")
    (attempt,) = generator.snapshot().attempts
    assert (attempt.outcome, attempt.node) == ("timed-out", "node-b")
    # Cut after the backend went silent: at the next ping's timeout, give or take a loop turn.
    assert silent_at < attempt.ended < silent_at + ping + timeout + 2


def test_a_long_lived_connection_that_lasts_completes_on_the_node_it_was_on(
    server: LineServer,
) -> None:
    spec = LoadSpec(rate_per_sec=0, duration_sec=0.5, long_lived=2, ping_interval_sec=0.1)
    report = LoadGenerator({"lb": server.address}, spec).run()
    assert [(a.outcome, a.node) for a in report.attempts] == [("completed", "node-b")] * 2
    assert all(a.ended >= report.started + 0.5 for a in report.attempts)
    assert report.nodes() == {"lb": {"node-b": 2}}
    # Pinged at once, then every 0.1 s: several answers each over the half second.
    wait_for(lambda: server.answers() == [], timeout=5, what="both closed")
