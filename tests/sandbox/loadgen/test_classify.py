"""How a wire event becomes an outcome, as a table: the errors asyncio and the kernel raise,
and the answer lines a backend may send."""

from __future__ import annotations

import pytest

from lbhc.sandbox.loadgen.connection import BadAnswer, PeerClosed, classify, node_name


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (TimeoutError(), "timed-out"),
        (OSError(110, "Connection timed out"), "timed-out"),  # the kernel's ETIMEDOUT
        (ConnectionRefusedError(), "refused"),
        (OSError(111, "Connection refused"), "refused"),
        (ConnectionResetError(), "reset"),
        (OSError(104, "Connection reset by peer"), "reset"),
        (BrokenPipeError(), "reset"),  # a write after the peer's reset
        (ConnectionAbortedError(), "reset"),
        (PeerClosed(), "closed"),
        (BadAnswer(), "error"),
        (ValueError("Separator is not found, and chunk exceed the limit"), "error"),
        (OSError(24, "Too many open files"), "error"),
    ],
    ids=repr,
)
def test_each_wire_error_has_its_outcome(error: BaseException, outcome: str) -> None:
    assert classify(error) == outcome


@pytest.mark.parametrize(
    ("line", "node"),
    [(b"node-a\n", "node-a"), (b"gke-pool-1-abc.zone\r\n", "gke-pool-1-abc.zone")],
)
def test_an_answer_line_gives_the_node_name(line: bytes, node: str) -> None:
    assert node_name(line) == node


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"", PeerClosed),  # EOF before anything
        (b"node-a", PeerClosed),  # EOF before the newline
        (b"\n", BadAnswer),
        (b"two words\n", BadAnswer),
        (b"node\x00a\n", BadAnswer),
        (b"n\xc3\xb6de\n", BadAnswer),
    ],
)
def test_anything_else_is_not_an_answer(line: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        node_name(line)
