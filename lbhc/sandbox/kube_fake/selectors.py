"""labelSelector and fieldSelector, parsed and matched as the apiserver does.

Anything the fake cannot evaluate is a 400, never ignored: ignoring a selector would hand the
client more objects than it asked for, which the real apiserver never does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .resources import BOOL_FIELDS, Resource
from .status import ApiError, bad_request

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
_KEY = rf"(?:{_PREFIX}/)?{_NAME}"
_VALUE = rf"(?:{_NAME})?"
_EXISTS = re.compile(rf"\s*(?P<neg>!?)\s*(?P<key>{_KEY})\s*")
_EQUALITY = re.compile(rf"\s*(?P<key>{_KEY})\s*(?P<op>==|!=|=)\s*(?P<value>{_VALUE})\s*")
_SET = re.compile(rf"\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*")
_SUPPORTED = "key, !key, key=value, key==value, key!=value, key in (a,b), key notin (a,b)"


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "exists", "!exists", "=", "!=", "in", "notin"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        return not present or value not in self.values  # "!=" and "notin"


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(req.matches(labels) for req in self.requirements)


def parse_label_selector(text: str) -> LabelSelector:
    """Comma-separated requirements, ANDed; commas inside `in (...)` belong to the set."""
    requirements = [_requirement(part) for part in _split_top_level(text) if part.strip()]
    return LabelSelector(tuple(requirements))


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _requirement(part: str) -> Requirement:
    if match := _EQUALITY.fullmatch(part):
        op = "!=" if match["op"] == "!=" else "="
        return Requirement(_key(match["key"]), op, frozenset({_value(match["value"])}))
    if match := _SET.fullmatch(part):
        values = [v.strip() for v in match["values"].split(",")]
        if not any(values):
            raise bad_request(
                "unable to parse requirement: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
        return Requirement(_key(match["key"]), match["op"], frozenset(_value(v) for v in values))
    if match := _EXISTS.fullmatch(part):
        return Requirement(_key(match["key"]), "!exists" if match["neg"] else "exists")
    raise bad_request(
        f"unable to parse requirement: {part.strip()!r}: expected one of: {_SUPPORTED}"
    )


def _key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if len(name) > 63 or len(prefix) > 253:
        raise bad_request(f"unable to parse requirement: key {key!r} is too long")
    return key


def _value(value: str) -> str:
    if len(value) > 63 or not re.fullmatch(_VALUE, value):
        raise bad_request(f"unable to parse requirement: invalid label value {value!r}")
    return value


@dataclass(frozen=True)
class FieldTerm:
    field: str
    value: str
    negated: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, self.field) == self.value) != self.negated


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(term.matches(obj) for term in self.terms)


def parse_field_selector(text: str, resource: Resource) -> FieldSelector:
    terms: list[FieldTerm] = []
    for raw in text.split(","):
        if not raw.strip():
            continue
        for op in ("!=", "==", "="):  # longest first: "!=" and "==" contain "="
            field, found, value = raw.partition(op)
            if found:
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{raw}'")
        field = field.strip()
        if field not in resource.field_labels:
            raise _unsupported_field(field)
        terms.append(FieldTerm(resource.field_path(field), value.strip(), op == "!="))
    return FieldSelector(tuple(terms))


def _unsupported_field(field: str) -> ApiError:
    return bad_request(f"field label not supported: {field}")


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The selectable value of `path`: "" when absent, Go's "true"/"false" for booleans."""
    current: Any = obj
    for part in path.split("."):
        current = current.get(part) if isinstance(current, Mapping) else None
    if isinstance(current, bool) or (current is None and path in BOOL_FIELDS):
        return "true" if current else "false"
    return "" if current is None else str(current)
