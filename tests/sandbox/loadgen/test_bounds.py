"""The load generator's hard bounds: every LoadSpec field out of its range, and every target
outside 127.0.0.0/8, is refused with one ValueError naming the field (or target) and what is
allowed; and the report's arithmetic, on attempts written by hand."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import re

import pytest

from lbhc.sandbox.loadgen import Attempt, LoadGenerator, LoadReport, LoadSpec
from lbhc.sandbox.loadgen.connection import connect
from lbhc.sandbox.loadgen.targets import Target

NAN = float("nan")

# field, the range the message must state, values refused, edge values accepted.
SPEC_BOUNDS = [
    ("rate_per_sec", "0 <= rate_per_sec <= 200", [-1, 200.5, 1e9, NAN, True, "20"], [0, 200]),
    ("duration_sec", "0 < duration_sec <= 600", [0, -5, 600.1, math.inf, NAN, None], [0.01, 600]),
    ("long_lived", "0 <= long_lived <= 50", [-1, 51, 2.0, True, NAN], [0, 50]),
    ("ping_interval_sec", "0.05 <= ping_interval_sec <= 60", [0, 0.01, 61, NAN], [0.05, 60]),
    ("connect_timeout_sec", "0 < connect_timeout_sec <= 30", [0, -1, 31, NAN, "2"], [0.001, 30]),
    ("response_timeout_sec", "0 < response_timeout_sec <= 30", [0, 30.5, NAN], [0.001, 30]),
    ("max_in_flight", "1 <= max_in_flight <= 500", [0, 501, 10.0, False], [1, 500]),
]


@pytest.mark.parametrize(
    ("field", "allowed", "value"),
    [(f, allowed, v) for f, allowed, bad, _ in SPEC_BOUNDS for v in bad],
)
def test_a_spec_field_out_of_range_is_refused_naming_the_field_and_its_range(
    field: str, allowed: str, value: object
) -> None:
    with pytest.raises(ValueError) as raised:
        LoadSpec(**{field: value})  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith(f"LoadSpec.{field} must be ")
    assert allowed in message and message.endswith(f"got {value!r}")


@pytest.mark.parametrize(
    ("field", "value"), [(f, v) for f, _, _, good in SPEC_BOUNDS for v in good]
)
def test_the_edges_of_each_range_are_accepted(field: str, value: float) -> None:
    assert getattr(LoadSpec(**{field: value}), field) == value


def test_a_spec_asking_for_no_load_at_all_is_refused() -> None:
    with pytest.raises(ValueError, match="both 0: the spec asks for no load at all"):
        LoadSpec(rate_per_sec=0, long_lived=0)


def test_the_defaults_make_a_modest_demo_and_the_spec_is_frozen() -> None:
    spec = LoadSpec()
    assert (spec.rate_per_sec, spec.long_lived, spec.duration_sec) == (20.0, 3, 30.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.rate_per_sec = 100  # type: ignore[misc]


@pytest.mark.parametrize(
    ("rate", "duration", "planned"),
    [(20, 0.35, 7), (40, 1.0, 40), (3, 1.0, 3), (0.1, 600, 60), (7, 0.01, 1), (0, 5, 0)],
)
def test_planned_connections_are_the_slots_k_over_rate_before_the_duration(
    rate: float, duration: float, planned: int
) -> None:
    spec = LoadSpec(rate_per_sec=rate, duration_sec=duration, long_lived=1)
    assert spec.planned_per_target == planned
    assert all(k / rate < duration for k in range(planned))


NOT_LOOPBACK = [
    "10.0.0.1",
    "0.0.0.0",
    "192.168.1.10",
    "128.0.0.1",
    "126.255.255.255",
    "8.8.8.8",
    "localhost",
    "::1",
    "::ffff:127.0.0.1",
    "example.com",
    "",
    " 127.0.0.1",
    "127.1",
    "0177.0.0.1",
    None,
    2130706433,  # 127.0.0.1 as an integer: still not an address string
]


@pytest.mark.parametrize("host", NOT_LOOPBACK, ids=repr)
def test_a_target_outside_loopback_is_refused_before_any_socket(host: object) -> None:
    with pytest.raises(ValueError) as raised:
        LoadGenerator({"lb-a": (host, 8080)}, LoadSpec())  # type: ignore[dict-item]
    assert str(raised.value) == (
        f"target 'lb-a': host {host!r} is not a loopback IPv4 address (127.0.0.0/8); "
        "the load generator only connects to the sandbox's own listeners on this machine"
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.255.255.254"])
def test_any_address_within_127_0_0_0_8_is_accepted(host: str) -> None:
    LoadGenerator({"lb-a": (host, 8080)}, LoadSpec())  # not started: opens nothing


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ({}, "targets: expected 1 to 32 targets, got 0"),
        ({f"t{i}": ("127.0.0.1", 80) for i in range(33)}, "expected 1 to 32 targets, got 33"),
        ({"a": ("127.0.0.1", 0)}, "target 'a': port 0 is not within 1-65535"),
        ({"a": ("127.0.0.1", 65536)}, "port 65536 is not within"),
        ({"a": ("127.0.0.1", True)}, "port True is not within"),
        ({"a": ("127.0.0.1", "80")}, "port '80' is not within"),
        ({"a": ["127.0.0.1", 80]}, "target 'a': expected a (host, port) pair"),
        ({"a": ("127.0.0.1", 80, 1)}, "expected a (host, port) pair"),
        ({"": ("127.0.0.1", 80)}, "target name '': expected a non-empty string"),
    ],
)
def test_malformed_targets_are_refused(targets: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        LoadGenerator(targets, LoadSpec())  # type: ignore[arg-type]


def test_a_load_that_does_not_fit_its_bounds_over_all_targets_is_refused() -> None:
    targets = {f"t{i}": ("127.0.0.1", 1000 + i) for i in range(6)}
    with pytest.raises(ValueError, match=r"6 targets x LoadSpec.long_lived 20 = 120 long-lived"):
        LoadGenerator(targets, LoadSpec(long_lived=20, max_in_flight=100))
    with pytest.raises(ValueError, match=r"= 1200 new connections per second, more than 1000"):
        LoadGenerator(targets, LoadSpec(rate_per_sec=200))
    with pytest.raises(TypeError, match="expected a LoadSpec"):
        LoadGenerator(targets, {"rate_per_sec": 1})  # type: ignore[arg-type]


def test_the_one_place_that_opens_sockets_checks_loopback_again() -> None:
    """Even a Target forged past its own check cannot reach a socket."""
    target = Target("lb-a", "127.0.0.1", 9)
    object.__setattr__(target, "host", "10.1.2.3")
    with pytest.raises(ValueError, match=re.escape("'10.1.2.3' is not a loopback IPv4 address")):
        asyncio.run(connect(target, 1.0))


def test_the_report_counts_by_target_kind_and_outcome_and_says_it_in_json() -> None:
    spec = LoadSpec(rate_per_sec=2, duration_sec=1, long_lived=2)
    attempts = (
        Attempt("a", "short", 0.0, 0.1, "completed", "n1"),
        Attempt("a", "short", 0.5, 0.9, "timed-out"),
        Attempt("a", "short", 0.6, 0.6, "skipped"),
        Attempt("b", "short", 0.0, 0.0, "refused"),
        Attempt("b", "short", 0.5, 0.7, "stopped"),
        Attempt("a", "long", 0.0, 1.0, "completed", "n2"),
        Attempt("a", "long", 0.0, 0.4, "reset", "n1"),  # cut: it had answered
        Attempt("b", "long", 0.0, 0.2, "closed"),  # never answered: not cut
    )
    report = LoadReport(spec, ("a", "b"), 0.0, 1.0, attempts)
    assert (report.attempted, report.completed, report.failed) == (7, 2, 2)
    assert (report.cut, report.unestablished, report.skipped, report.stopped) == (1, 1, 1, 1)
    assert report.count(target="a", kind="short") == 3
    assert report.count(outcome="completed", kind="long") == 1
    counts = report.counts()
    assert counts["a"]["long"]["reset"] == 1 and counts["b"]["long"]["timed-out"] == 0
    assert report.nodes() == {"a": {"n1": 2, "n2": 1}, "b": {}}
    summary = json.loads(json.dumps(report.summary()))
    assert summary["by_target"] == counts and summary["spec"]["long_lived"] == 2
    totals = {k: summary[k] for k in ("attempted", "completed", "failed", "cut", "skipped")}
    assert totals == {"attempted": 7, "completed": 2, "failed": 2, "cut": 1, "skipped": 1}
