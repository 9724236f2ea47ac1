"""Partial responses: the `fields` system parameter and the `X-Goog-FieldMask` header.

Every Google API accepts a field selection and returns only those fields; lbhc uses it to list
target pools without their instance lists (5,000 URLs a pool at 5,000 nodes). The syntax is
the system parameter's: `a,b/c,items(name,healthChecks)`; `*` selects every field; a selection
applies to each element of an array. A field the resource does not have is a 400, as on the
real API, so a client cannot believe it asked for something that does not exist.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from . import routes
from .errors import ComputeError
from .resources import common, instance_groups, network_endpoints

# What every list response has besides its items (the discovery schema's *List properties).
LIST_FIELDS = frozenset({"kind", "id", "items", "nextPageToken", "selfLink", "warning"})


def _kinds() -> dict[str, common.Kind]:
    """The kind of resource each discovery resource serves: the KIND of the module whose
    handlers serve its routes (regionHealthChecks serve lb_health_checks' `healthChecks`).
    Derived, so a resource added to the route table is checked without another list here."""
    kinds: dict[str, common.Kind] = {}
    for route in routes.COMPUTE_ROUTES:
        kind = getattr(sys.modules[route.handler.__module__], "KIND", None)
        if isinstance(kind, common.Kind):
            kinds.setdefault(route.resource, kind)
    return kinds


KINDS = _kinds()
# The members' fields of the listings of a group's members (InstanceWithNamedPorts,
# NetworkEndpointWithHealthStatus), by the listing's kind.
MEMBER_LISTS = {
    instance_groups.LIST_INSTANCES_KIND: frozenset({"instance", "namedPorts", "status"}),
    network_endpoints.LIST_KIND: frozenset({"healths", "networkEndpoint"}),
}

Selection = dict[str, "Selection | None"]  # None: the whole field
_NAME = re.compile(r"[A-Za-z_*][A-Za-z0-9_]*")


def requested(query: Mapping[str, str], headers: Mapping[str, str]) -> str | None:
    """The mask a request carries (the query parameter wins, as the header is its alias),
    None for none or an empty one (every field); `headers` must have lower-case keys."""
    mask = query.get("fields") or headers.get("x-goog-fieldmask") or ""
    return mask if mask.strip() else None


def parse(mask: str) -> Selection:
    compact = re.sub(r"\s*([,()/])\s*", r"\1", mask.strip())  # spaces only around separators
    selection, rest = _parse_list(compact, mask)
    if rest:
        raise invalid_selection(mask)
    return selection


def apply(selection: Selection, value: Any) -> Any:
    if isinstance(value, list):
        return [apply(selection, item) for item in value]
    if not isinstance(value, dict):
        return value
    if "*" in selection and selection["*"] is None:
        return value
    out: dict[str, Any] = {}
    for key, sub in selection.items():
        names = value.keys() if key == "*" else ([key] if key in value else [])
        for name in names:
            out[name] = value[name] if sub is None else apply(sub, value[name])
    return out


def check(selection: Selection, payload: dict[str, Any], kind: common.Kind | None) -> None:
    """Reject fields the response's schema does not have: list fields at the top of a list,
    the resource's own fields at the top of a get and inside `items`; in an aggregated list,
    the scoped lists' fields and the resource's inside them; in a listing of a group's members,
    the member's fields inside `items`. Deeper levels and responses of unknown kind
    (operations, getHealth) are not checked."""
    members = MEMBER_LISTS.get(str(payload.get("kind")))
    if members is not None:
        _check_names(selection, LIST_FIELDS)
        _check_names(selection.get("items") or {}, members)
        return
    if kind is None:
        return
    if str(payload.get("kind")).endswith("AggregatedList"):
        _check_names(selection, LIST_FIELDS | {"unreachables"})
        for scoped in (selection.get("items") or {}).values():  # keyed by scope or "*"
            _check_names(scoped or {}, frozenset({kind.collection, "warning"}))
            _check_names((scoped or {}).get(kind.collection) or {}, kind.fields)
        return
    if payload.get("kind") == kind.list_kind:
        _check_names(selection, LIST_FIELDS)
        items = selection.get("items")
        if items is not None:
            _check_names(items, kind.fields)
    elif payload.get("kind") == kind.kind:
        _check_names(selection, kind.fields)


def invalid_selection(what: str) -> ComputeError:
    return ComputeError(400, "invalidParameter", f"Invalid field selection {what}")


def _check_names(selection: Selection, known: frozenset[str]) -> None:
    for name in selection:
        if name != "*" and name not in known:
            raise invalid_selection(name)


def _parse_list(text: str, whole: str) -> tuple[Selection, str]:
    selection: Selection = {}
    while True:
        path, text = _parse_path(text, whole)
        sub: Selection | None = None
        if text.startswith("("):
            sub, text = _parse_list(text[1:], whole)
            if not text.startswith(")"):
                raise invalid_selection(whole)
            text = text[1:]
        _merge(selection, path, sub)
        if not text.startswith(","):
            return selection, text
        text = text[1:]


def _parse_path(text: str, whole: str) -> tuple[list[str], str]:
    names: list[str] = []
    while True:
        match = _NAME.match(text)
        if match is None:
            raise invalid_selection(whole)
        names.append(match[0])
        text = text[match.end() :]
        if not text.startswith("/"):
            return names, text
        text = text[1:]


def _merge(selection: Selection, path: list[str], leaf: Selection | None) -> None:
    """`a/b` is `a(b)`; selecting a field whole wins over selecting part of it."""
    node = selection
    for name in path[:-1]:
        child = node.get(name, {})
        if child is None:
            return
        node[name] = child
        node = child
    last = path[-1]
    if leaf is None or node.get(last, {}) is None:
        node[last] = None
        return
    existing = node.setdefault(last, {})
    assert existing is not None
    for key, sub in leaf.items():
        _merge(existing, [key], sub)
