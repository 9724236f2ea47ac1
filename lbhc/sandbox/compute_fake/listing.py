"""List semantics: maxResults, opaque page tokens, orderBy and the `filter` subset.

The filter grammar supported is the common one (`FIELD eq|ne REGEX` and `FIELD =|!= VALUE`,
optionally parenthesised terms joined by whitespace or AND). Anything else is rejected with 400
rather than silently ignored, so a client cannot believe a filter applied when it did not.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import invalid_value

MAX_RESULTS = 500

Predicate = Callable[[dict[str, Any]], bool]
SortKey = tuple[str, ...]

_TERM = re.compile(
    r"""\s*\(?\s*
    (?P<field>[A-Za-z][A-Za-z0-9_]*)\s*
    (?P<op>\beq\b|\bne\b|!=|=)\s*
    (?:"(?P<dq>(?:[^"\\]|\\.)*)"|'(?P<sq>(?:[^'\\]|\\.)*)'|(?P<bare>[^\s()"']+))
    \s*\)?\s*""",
    re.VERBOSE,
)
_AND = re.compile(r"\s*\bAND\b\s*")


@dataclass(frozen=True)
class ListParams:
    max_results: int
    after: SortKey | None
    predicate: Predicate
    descending: bool
    order_field: str


def parse(query: Mapping[str, str]) -> ListParams:
    max_results = _max_results(query.get("maxResults"))
    after = _decode_token(query["pageToken"]) if query.get("pageToken") else None
    predicate = compile_filter(query.get("filter", ""))
    order_field, descending = _order_by(query.get("orderBy", ""))
    return ListParams(max_results, after, predicate, descending, order_field)


def paginate(
    items: Sequence[dict[str, Any]],
    params: ListParams,
    key: Callable[[dict[str, Any]], SortKey] | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Filter, sort and cut one page; returns (page, nextPageToken or None)."""

    def default_key(item: dict[str, Any]) -> SortKey:
        return (str(item.get(params.order_field, "")), str(item.get("name", "")))

    sort_key = key or default_key
    keyed = sorted(
        ((sort_key(item), item) for item in items if params.predicate(item)),
        key=lambda pair: pair[0],
        reverse=params.descending,
    )
    if params.after is not None:
        after = params.after
        keyed = [(k, v) for k, v in keyed if (k < after if params.descending else k > after)]
    page = keyed[: params.max_results]
    token = _encode_token(page[-1][0]) if len(keyed) > len(page) else None
    return [item for _, item in page], token


def compile_filter(expression: str) -> Predicate:
    expression = expression.strip()
    if not expression:
        return lambda item: True
    terms: list[Predicate] = []
    rest = expression
    while rest:
        match = _TERM.match(rest)
        if match is None or match[0].count("(") != match[0].count(")"):
            raise _unsupported(expression)
        terms.append(_term(match, expression))
        rest = rest[match.end() :]
        and_match = _AND.match(rest)
        if rest and and_match:
            rest = rest[and_match.end() :]
            if not rest:
                raise _unsupported(expression)
    return lambda item: all(term(item) for term in terms)


def _term(match: re.Match[str], expression: str) -> Predicate:
    field, op = match["field"], match["op"]
    raw = next(v for v in (match["dq"], match["sq"], match["bare"]) if v is not None)
    if op in ("eq", "ne"):
        try:
            pattern = re.compile(raw)
        except re.error:
            raise invalid_value("filter", expression, "Invalid regular expression.") from None

        def regex_term(item: dict[str, Any]) -> bool:
            value = item.get(field)
            hit = value is not None and pattern.fullmatch(_scalar(value)) is not None
            return hit if op == "eq" else not hit

        return regex_term
    literal = raw.replace('\\"', '"').replace("\\'", "'")

    def literal_term(item: dict[str, Any]) -> bool:
        value = item.get(field)
        hit = value is not None and _scalar(value) == literal
        return hit if op == "=" else not hit

    return literal_term


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _unsupported(expression: str) -> Exception:
    return invalid_value(
        "filter",
        expression,
        "The compute fake does not support this filter expression; supported: "
        'FIELD eq|ne "REGEX", FIELD = "VALUE", FIELD != "VALUE", terms joined by AND.',
    )


def _max_results(raw: str | None) -> int:
    if raw is None or raw == "":
        return MAX_RESULTS
    if not re.fullmatch(r"\d+", raw):
        raise invalid_value("maxResults", raw, "Must be an unsigned integer.")
    value = int(raw)
    if value > MAX_RESULTS:
        raise invalid_value("maxResults", raw, f"Must be less than or equal to {MAX_RESULTS}")
    return value or MAX_RESULTS


def _order_by(raw: str) -> tuple[str, bool]:
    parts = raw.split()
    if not parts:
        return "name", False
    if parts[0] in ("name", "creationTimestamp") and (
        len(parts) == 1 or (len(parts) == 2 and parts[1] in ("asc", "desc"))
    ):
        return parts[0], len(parts) == 2 and parts[1] == "desc"
    raise invalid_value(
        "orderBy", raw, "The compute fake supports orderBy name or creationTimestamp [desc]."
    )


def _encode_token(key: SortKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def _decode_token(token: str) -> SortKey:
    try:
        padded = token + "=" * (-len(token) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_value("pageToken", token, "Invalid page token.")
    return tuple(value)
