"""tests/monitoring_eval.py against PromQL semantics computed by hand (Prometheus 3: lookback
and ranges are (t - d, t]), so the alert tests built on it test the alerts, not the evaluator.
Where promtool is on PATH, tests/test_alerts.py also checks the alerts' verdicts against it."""

from __future__ import annotations

import pytest

from tests.monitoring_eval import STALE, Series, evaluate, firing, labels, minutes, parse

# Series shared by the cases: one sample a minute from t=0.
S = (
    Series()
    .add("g", [1, 1, 1], pod="a", ns="x")
    .add("g", [0, 0, 5], pod="b", ns="x")
    .add("g", [2, 2, 2], pod="c", ns="y")
    .add("gone", [1, 1, STALE])  # the target disappeared at t=120
    .add("gap", [3, None, None])  # scrapes that recorded nothing
    .add("h", [7, 7, 7])
    .add("c_total", [1, 2, 3, 4, 5, 6])  # a counter, +1 a minute
    .add("reset_total", [5, 6, 1, 2])  # a counter that restarted at t=120
)
A, B, C = labels(pod="a", ns="x"), labels(pod="b", ns="x"), labels(pod="c", ns="y")


def named(name: str, ls: frozenset[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    return ls | {("__name__", name)}


# (what, expression, time in seconds, the value PromQL gives, worked out by hand)
CASES = [
    ("selector: every series", "g", 0, {named("g", A): 1, named("g", B): 0, named("g", C): 2}),
    ("matcher =", 'g{pod="a"}', 0, {named("g", A): 1}),
    ("matcher !=", 'g{ns!="x"}', 0, {named("g", C): 2}),
    ("matcher =~ is anchored", 'g{pod=~"a|c"}', 0, {named("g", A): 1, named("g", C): 2}),
    (
        "matcher =~ partial",
        'g{pod=~"."}',
        0,
        {named("g", A): 1, named("g", B): 0, named("g", C): 2},
    ),
    ("matcher !~", 'g{pod!~"a|b"}', 0, {named("g", C): 2}),
    ("no such series", "nothing", 0, {}),
    ("newest sample in lookback", 'g{pod="b"}', 120, {named("g", B): 5}),
    ("a staleness marker hides it", "gone", 120, {}),
    ("before the marker", "gone", 60, {named("gone", frozenset()): 1}),
    ("lookback: 4m59s after the sample", "gap", 299, {named("gap", frozenset()): 3}),
    ("lookback is left-open: 5m after", "gap", 300, {}),
    ("max", "max(g)", 120, {frozenset(): 5}),
    ("sum", "sum(g)", 0, {frozenset(): 3}),
    ("min", "min(g)", 0, {frozenset(): 0}),
    ("count", "count(g)", 0, {frozenset(): 3}),
    ("max by", "max by (ns) (g)", 0, {labels(ns="x"): 1, labels(ns="y"): 2}),
    ("max (..) by, trailing", "max(g) by (ns)", 120, {labels(ns="x"): 5, labels(ns="y"): 2}),
    ("sum without", "sum without (pod) (g)", 0, {labels(ns="x"): 1, labels(ns="y"): 2}),
    ("aggregating nothing is nothing", "max(nothing)", 0, {}),
    ("filter keeps value and name", "g > 0", 0, {named("g", A): 1, named("g", C): 2}),
    ("filter ==", "g == 1", 0, {named("g", A): 1}),
    ("filter, nothing passes", "max(g) > 9", 0, {}),
    ("bool keeps every series, drops the name", "g == bool 1", 0, {A: 1, B: 0, C: 0}),
    (
        "absent of nothing: matcher labels",
        'absent(nothing{job="j", x=~"y"})',
        0,
        {labels(job="j"): 1},
    ),
    ("absent of something", "absent(g)", 0, {}),
    ("absent of an expression: no labels", 'absent(nothing{job="j"} == 1)', 0, {frozenset(): 1}),
    ("absent after staleness", "absent(gone)", 120, {frozenset(): 1}),
    ("vector", "vector(0)", 0, {frozenset(): 0}),
    ("or: left wins", "max(g) or vector(0)", 0, {frozenset(): 2}),
    ("or: right fills in", "max(nothing) or vector(0)", 0, {frozenset(): 0}),
    ("or vector(0) == 0", "(max(nothing) or vector(0)) == 0", 0, {frozenset(): 0}),
    (
        "or keeps unmatched right",
        'g{pod="a"} or g{pod="b"}',
        0,
        {named("g", A): 1, named("g", B): 0},
    ),
    ("unless on(): anything on the right", "max(g) unless on() max(h)", 0, {}),
    ("unless on(): nothing on the right", "max(g) unless on() max(nothing)", 0, {frozenset(): 2}),
    ("unless matches all labels", 'g unless g{pod="a"}', 0, {named("g", B): 0, named("g", C): 2}),
    ("and", 'g and g{pod="c"}', 0, {named("g", C): 2}),
    ("precedence: > before unless", "max(g) > 0 unless on() max(h) > 9", 0, {frozenset(): 2}),
    ("vector - vector, one-to-one", "max(g) - max(h)", 0, {frozenset(): -5}),
    ("scalar + vector drops the name", "1 + h", 0, {frozenset(): 8}),
    # increase over (0, 300] at t=300: samples t=60..300 read 2..6, delta 4 over 240 s; the
    # gap to the range's start (60 s) is under 1.1 x the 60 s average and the counter would
    # reach 0 only 120 s before its first sample, so it extrapolates the full 60 s: 4 x 300/240.
    ("increase extrapolates", "increase(c_total[5m])", 300, {frozenset(): 5}),
    # (0, 180] at t=180: t=60..180 read 6, 1, 2: delta 2 - 6 + 6 (the reset) = 2 over 120 s;
    # the counter would reach 0 only 360 s before its first sample, so again the full 60 s gap
    # is extrapolated: 2 x 180/120.
    ("increase across a reset", "increase(reset_total[3m])", 180, {frozenset(): 3}),
    ("increase needs two samples", "increase(c_total[1m])", 300, {}),
    ("sum of increase", "sum(increase(c_total[5m])) > 4", 300, {frozenset(): 5}),
]


@pytest.mark.parametrize(("expr", "t", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_evaluator_matches_promql(expr: str, t: float, want: dict[object, float]) -> None:
    assert evaluate(expr, S, t) == pytest.approx(want)


@pytest.mark.parametrize(
    "expr",
    ["rate(c_total[5m])", "g * 2", "topk(1, g)", "g offset 5m", 'g{pod="a"', "max by (ns g)"],
)
def test_what_it_does_not_know_fails_to_parse(expr: str) -> None:
    with pytest.raises((ValueError, AssertionError)):
        evaluate(parse(expr), S, 0)


def rule(expr: str, for_: str) -> dict[str, object]:
    return {"alert": "A", "expr": expr, "for": for_, "labels": {"severity": "warning"}}


# (what, series, rule's `for`, minutes at which the alert fires, by hand)
ALERTS = [
    ("fires once true for `for`", Series().add("x", [1] * 8), "5m", [5, 6, 7]),
    ("for: 0 fires at once", Series().add("x", [0, 1, 1, 0, 0, 0, 0, 0]), "0m", [1, 2]),
    ("a gap in the condition starts over", Series().add("x", [1, 1, 1, 0, 1, 1, 1, 1]), "3m", [7]),
    ("never long enough", Series().add("x", [1, 1, 0, 1, 1, 0, 1, 1]), "3m", []),
]


@pytest.mark.parametrize(
    ("series", "for_", "want"), [a[1:] for a in ALERTS], ids=[a[0] for a in ALERTS]
)
def test_for_holds_an_alert_pending(series: Series, for_: str, want: list[int]) -> None:
    assert firing(rule("max(x) > 0", for_), series, minutes(7)) == [60.0 * m for m in want]
