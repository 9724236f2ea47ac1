"""A small PromQL evaluator for exactly the subset deploy/overlays/monitoring/prometheusrule.yaml
uses, so the alerts can be tested against recorded series without a Prometheus: instant vector
selectors with label matchers (= != =~ !~), range selectors, sum/max/min/count with `by` or
`without`, absent(), vector(), increase(), + - between vectors and scalars, comparison filters
(== != > < >= <=, with `bool`), and/or/unless with `on`/`ignoring`; and alerting rules' `for`
over a series of evaluation times. Anything else fails to parse rather than being guessed.

Semantics are Prometheus 3's (https://prometheus.io/docs/prometheus/latest/querying/basics/):
an instant selector takes a series' newest sample in (t - 5m, t], none when that sample is a
staleness marker (what Prometheus writes when a target disappears); a range selector [d] takes
(t - d, t]; increase() extrapolates as Prometheus' extrapolatedRate does; arithmetic and `bool`
comparisons drop the metric name, filter comparisons keep it; an alert is pending from the
first evaluation its expression returns a series and fires once it has been for `for`.
tests/test_monitoring_eval.py holds hand-computed cases for each of these."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

LOOKBACK = 300.0  # seconds: Prometheus' default --query.lookback-delta
STALE = "stale"  # a staleness marker in a recorded series

Labels = frozenset[tuple[str, str]]
Sample = tuple[float, float | str]  # (seconds, value or STALE)
Vector = dict[Labels, float]


def labels(**pairs: str) -> Labels:
    return frozenset(pairs.items())


def parse_duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return float(sum(int(n) * units[u] for n, u in parts))


@dataclass
class Series:
    """Recorded samples: every series by its labels (__name__ included)."""

    samples: dict[Labels, list[Sample]] = field(default_factory=dict)

    def add(
        self, name: str, values: Iterable[float | str | None], step: float = 60.0, **pairs: str
    ) -> Series:
        """One sample every `step` seconds from 0; None is a scrape that recorded nothing."""
        points = [(i * step, v) for i, v in enumerate(values) if v is not None]
        self.samples[labels(__name__=name, **pairs)] = points
        return self


# ---- parsing ---------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)(?![a-z])|(?P<dur>\[\d+[smhd]\])|(?P<str>\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<op>==|!=|>=|<=|=~|!~|[-+*/<>=(){},])|(?P<id>[a-zA-Z_:][a-zA-Z0-9_:]*))"
)
_AGGREGATIONS: dict[str, Callable[[list[float]], float]] = {
    "sum": sum,
    "max": max,
    "min": min,
    "count": len,
}
_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}
_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
}
_SET_OPS = ("or", "and", "unless")


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str

    def matches(self, value: str) -> bool:
        if self.op in ("=", "!="):
            return (value == self.value) == (self.op == "=")
        return bool(re.fullmatch(self.value, value)) == (self.op == "=~")


@dataclass(frozen=True)
class Selector:
    matchers: tuple[Matcher, ...]
    range: float | None = None


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Aggregate:
    op: str
    expr: Any
    by: tuple[str, ...] | None = None  # None: no grouping clause
    without: bool = False


@dataclass(frozen=True)
class Binary:
    op: str
    lhs: Any
    rhs: Any
    on: tuple[str, ...] | None = None
    ignoring: bool = False
    bool: bool = False


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(f"cannot parse {text[pos:]!r}")
            kind = m.lastgroup
            assert kind is not None
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def take(self, want: str | None = None) -> str:
        if self.i >= len(self.tokens):
            raise ValueError("unexpected end of expression")
        value = self.tokens[self.i][1]
        if want is not None and value != want:
            raise ValueError(f"expected {want!r}, got {value!r}")
        self.i += 1
        return value

    def parse(self) -> Any:
        expr = self.binary(0)
        if self.peek() is not None:
            raise ValueError(f"unexpected {self.peek()!r}")
        return expr

    # Precedence, lowest first (Prometheus: or < and/unless < comparisons < + -).
    LEVELS: tuple[tuple[str, ...], ...] = (
        ("or",),
        ("and", "unless"),
        tuple(_COMPARISONS),
        ("+", "-"),
    )

    def binary(self, level: int) -> Any:
        if level == len(self.LEVELS):
            return self.primary()
        lhs = self.binary(level + 1)
        while self.peek() in self.LEVELS[level]:
            op = self.take()
            is_bool = op in _COMPARISONS and self.peek() == "bool"
            if is_bool:
                self.take()
            on, ignoring = None, False
            if self.peek() in ("on", "ignoring"):
                ignoring = self.take() == "ignoring"
                on = self.label_list()
            lhs = Binary(op, lhs, self.binary(level + 1), on, ignoring, is_bool)
        return lhs

    def label_list(self) -> tuple[str, ...]:
        self.take("(")
        names: list[str] = []
        while self.peek() != ")":
            names.append(self.take())
            if self.peek() == ",":
                self.take()
        self.take(")")
        return tuple(names)

    def primary(self) -> Any:
        token = self.peek()
        kind = self.tokens[self.i][0] if token is not None else None
        if token == "(":
            self.take()
            expr = self.binary(0)
            self.take(")")
            return expr
        if kind == "num":
            return Number(float(self.take()))
        if token in _AGGREGATIONS:
            return self.aggregate()
        if token in ("absent", "vector", "increase"):
            func = self.take()
            self.take("(")
            arg = self.binary(0)
            self.take(")")
            return Call(func, (arg,))
        if kind == "id" or token == "{":
            return self.selector()
        raise ValueError(f"unsupported here: {token!r}")

    def aggregate(self) -> Aggregate:
        op = self.take()
        by, without = None, False
        if self.peek() in ("by", "without"):
            without = self.take() == "without"
            by = self.label_list()
        self.take("(")
        expr = self.binary(0)
        self.take(")")
        if by is None and self.peek() in ("by", "without"):
            without = self.take() == "without"
            by = self.label_list()
        return Aggregate(op, expr, by, without)

    def selector(self) -> Selector:
        matchers: list[Matcher] = []
        if self.peek() != "{":
            matchers.append(Matcher("__name__", "=", self.take()))
        if self.peek() == "{":
            self.take()
            while self.peek() != "}":
                name, op, raw = self.take(), self.take(), self.take()
                if op not in ("=", "!=", "=~", "!~") or not raw.startswith('"'):
                    raise ValueError(f"bad matcher {name}{op}{raw}")
                matchers.append(Matcher(name, op, raw[1:-1].encode().decode("unicode_escape")))
                if self.peek() == ",":
                    self.take()
            self.take("}")
        range_ = None
        if self.i < len(self.tokens) and self.tokens[self.i][0] == "dur":
            range_ = parse_duration(self.take()[1:-1])
        return Selector(tuple(matchers), range_)


def parse(expr: str) -> Any:
    return _Parser(expr).parse()


# ---- evaluation ------------------------------------------------------------------------------


def _without_name(ls: Labels) -> Labels:
    return frozenset(p for p in ls if p[0] != "__name__")


def _signature(ls: Labels, on: tuple[str, ...] | None, ignoring: bool) -> Labels:
    if on is None or ignoring:
        drop = set(on or ()) | {"__name__"}
        return frozenset(p for p in ls if p[0] not in drop)
    return frozenset(p for p in ls if p[0] in on)


def _matching(series: Series, selector: Selector) -> Iterable[tuple[Labels, list[Sample]]]:
    for ls, points in series.samples.items():
        values = dict(ls)
        if all(m.matches(values.get(m.name, "")) for m in selector.matchers):
            yield ls, points


def _instant(series: Series, selector: Selector, t: float) -> Vector:
    out: Vector = {}
    for ls, points in _matching(series, selector):
        seen = [v for ts, v in points if t - LOOKBACK < ts <= t]
        if seen and seen[-1] != STALE:
            out[ls] = float(seen[-1])
    return out


def _increase(series: Series, selector: Selector, t: float) -> Vector:
    """Prometheus' extrapolatedRate for a counter, not divided by the range."""
    assert selector.range is not None
    start, out = t - selector.range, {}
    for ls, points in _matching(series, selector):
        window = [(ts, float(v)) for ts, v in points if start < ts <= t and v != STALE]
        if len(window) < 2:
            continue
        (first_t, first_v), (last_t, last_v) = window[0], window[-1]
        delta = last_v - first_v + sum(a for (_, a), (_, b) in itertools.pairwise(window) if b < a)
        sampled = last_t - first_t
        to_start, to_end = first_t - start, t - last_t
        if delta > 0 and first_v >= 0:
            to_start = min(to_start, sampled * (first_v / delta))
        average = sampled / (len(window) - 1)
        interval = sampled
        interval += to_start if to_start < average * 1.1 else average / 2
        interval += to_end if to_end < average * 1.1 else average / 2
        out[_without_name(ls)] = delta * interval / sampled
    return out


def _absent_labels(arg: Any) -> Labels:
    """absent() keeps the equality matchers of a plain selector, nothing otherwise."""
    if isinstance(arg, Selector):
        return frozenset(
            (m.name, m.value) for m in arg.matchers if m.op == "=" and m.name != "__name__"
        )
    return frozenset()


def _aggregate(node: Aggregate, vector: Vector) -> Vector:
    groups: dict[Labels, list[float]] = {}
    for ls, value in vector.items():
        if node.by is None:
            key: Labels = frozenset()
        elif node.without:
            key = frozenset(p for p in ls if p[0] not in node.by and p[0] != "__name__")
        else:
            key = frozenset(p for p in ls if p[0] in node.by)
        groups.setdefault(key, []).append(value)
    return {key: float(_AGGREGATIONS[node.op](values)) for key, values in groups.items()}


def _binary(node: Binary, lhs: Vector | float, rhs: Vector | float) -> Vector | float:
    if node.op in _SET_OPS:
        assert isinstance(lhs, dict) and isinstance(rhs, dict), "set operators take vectors"
        right = {_signature(ls, node.on, node.ignoring) for ls in rhs}
        if node.op == "and":
            return {
                ls: v for ls, v in lhs.items() if _signature(ls, node.on, node.ignoring) in right
            }
        kept = {
            ls: v for ls, v in lhs.items() if _signature(ls, node.on, node.ignoring) not in right
        }
        if node.op == "unless":
            return kept
        left = {_signature(ls, node.on, node.ignoring) for ls in lhs}
        extra = {
            ls: v for ls, v in rhs.items() if _signature(ls, node.on, node.ignoring) not in left
        }
        return {**lhs, **extra}
    compare = _COMPARISONS.get(node.op)
    if isinstance(lhs, float) and isinstance(rhs, float):
        if compare is None:
            return _ARITHMETIC[node.op](lhs, rhs)
        assert node.bool, "a comparison of two scalars needs bool"
        return float(compare(lhs, rhs))
    pairs: list[tuple[Labels, float, float]] = []
    if isinstance(lhs, dict) and isinstance(rhs, dict):
        by_sig = {_signature(ls, node.on, node.ignoring): v for ls, v in rhs.items()}
        for ls, v in lhs.items():
            sig = _signature(ls, node.on, node.ignoring)
            if sig in by_sig:  # the result keeps the left side's labels, less any `on` drops
                pairs.append((sig if node.on is not None else ls, v, by_sig[sig]))
    elif isinstance(lhs, dict):
        pairs = [(ls, v, float(rhs)) for ls, v in lhs.items()]  # type: ignore[arg-type]
    else:
        assert isinstance(rhs, dict)
        pairs = [(ls, float(lhs), v) for ls, v in rhs.items()]
    out: Vector = {}
    for ls, a, b in pairs:
        if compare is None:
            out[_without_name(ls)] = _ARITHMETIC[node.op](a, b)
        elif node.bool:
            out[_without_name(ls)] = float(compare(a, b))
        elif compare(a, b):
            out[ls] = a if isinstance(lhs, dict) else b
    return out


def evaluate(expr: Any, series: Series, t: float) -> Vector | float:
    """The expression's value at time t (seconds): a vector, or a scalar for a number."""
    if isinstance(expr, str):
        expr = parse(expr)
    if isinstance(expr, Number):
        return expr.value
    if isinstance(expr, Selector):
        if expr.range is not None:
            raise ValueError("a range vector is only an argument of increase()")
        return _instant(series, expr, t)
    if isinstance(expr, Call):
        (arg,) = expr.args
        if expr.func == "increase":
            if not isinstance(arg, Selector) or arg.range is None:
                raise ValueError("increase() takes a range selector")
            return _increase(series, arg, t)
        value = evaluate(arg, series, t)
        if expr.func == "vector":
            assert isinstance(value, float)
            return {frozenset(): value}
        assert isinstance(value, dict)
        return {} if value else {_absent_labels(arg): 1.0}
    if isinstance(expr, Aggregate):
        inner = evaluate(expr.expr, series, t)
        assert isinstance(inner, dict)
        return _aggregate(expr, inner)
    assert isinstance(expr, Binary)
    return _binary(expr, evaluate(expr.lhs, series, t), evaluate(expr.rhs, series, t))


# ---- alerting rules --------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    labels: Labels  # the series' labels less __name__, then the rule's
    firing: bool


def run_alert(
    rule: Mapping[str, Any], series: Series, times: Iterable[float]
) -> dict[float, list[Alert]]:
    """The rule's alerts after each evaluation at `times` (ascending): pending from the first
    evaluation its expression returns a series, firing once it has been so for `for`; gone,
    and pending again from scratch, at an evaluation that returns nothing for it."""
    expr = parse(rule["expr"])
    hold = parse_duration(str(rule.get("for", "0s")))
    active: dict[Labels, float] = {}
    out: dict[float, list[Alert]] = {}
    for t in times:
        value = evaluate(expr, series, t)
        if not isinstance(value, dict):
            raise ValueError(f"{rule['alert']}: an alert needs a vector, got {value}")
        current = {_without_name(ls) | frozenset(rule.get("labels", {}).items()) for ls in value}
        active = {ls: active.get(ls, t) for ls in current}
        out[t] = [Alert(ls, t - since >= hold) for ls, since in sorted(active.items(), key=str)]
    return out


def firing(rule: Mapping[str, Any], series: Series, times: Iterable[float]) -> list[float]:
    """The evaluation times at which the rule has a firing alert."""
    return [
        t for t, alerts in run_alert(rule, series, times).items() if any(a.firing for a in alerts)
    ]


def minutes(last: int, first: int = 0) -> list[float]:
    """Evaluation times every minute (Prometheus' default evaluation_interval), in seconds."""
    return [60.0 * m for m in range(first, last + 1)]
