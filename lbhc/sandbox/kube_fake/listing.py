"""List responses: selectors, limit and consistent continue tokens, as the apiserver does.

A continue token is the apiserver's own format (base64url JSON of the version, the list's
resourceVersion and the key to resume after), so every page is read at the first page's
resourceVersion and a client that inspects tokens sees what it would see in a cluster.
"""

from __future__ import annotations

import base64
import binascii
import json
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

from .events import present
from .faults import Faults
from .resources import Resource
from .selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from .status import ApiError, bad_request
from .store import Object, Store, TooNew, TooOld

_TOKEN_VERSION = "meta.k8s.io/v1"
_EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)
_LATEST = -1  # the rv an expired list's fallback token carries: "read at the latest"


def encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": _TOKEN_VERSION, "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from None
    if not isinstance(data, dict) or data.get("v") != _TOKEN_VERSION:
        raise bad_request(
            "continue key is not valid: server does not recognize this encoded version"
        )
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv == 0:
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            f"(version {_TOKEN_VERSION})"
        )
    if not isinstance(start, str) or not start:
        raise bad_request(
            f"continue key is not valid: encoded start key empty (version {_TOKEN_VERSION})"
        )
    return rv, start


def list_body(
    store: Store,
    faults: Faults,
    resource: Resource,
    namespace: str | None,
    query: Mapping[str, str],
) -> bytes:
    """The list's JSON body: what json.dumps(..., separators=(",", ":")) of the list dict
    gives, with each item's encoding cached in the store."""
    labels = parse_label_selector(query.get("labelSelector", ""))
    fields = parse_field_selector(query.get("fieldSelector", ""), resource)
    limit = _limit(query.get("limit", ""))
    if (cap := faults.page_limit) is not None:  # the server may send fewer than asked
        limit = min(limit, cap) if limit else cap
    rv, start = _read_point(store, faults, query)
    try:
        entries = store.read(resource.kind, rv)
    except TooOld:
        raise ApiError(410, "The resourceVersion for the provided list is too old.") from None
    except TooNew:
        raise _too_large(rv, store.resource_version) from None
    prefix = f"{namespace}/" if namespace else ""
    # Keys relative to the listed scope, as the token's start key is.
    scoped = (
        [(k[len(prefix) :], obj) for k, obj in entries if k.startswith(prefix)]
        if prefix
        else entries
    )
    if start:  # keys are sorted bytewise: find the first at or after `start`
        first = bisect_left(scoped, start.encode(), key=lambda pair: pair[0].encode())
        scoped = scoped[first:]
    selected: list[tuple[str, Object]] = []
    filtered = not (labels.empty and fields.empty)
    last_index = len(scoped) - 1
    for index, (key, stored) in enumerate(scoped):
        if not filtered or _matches(labels, fields, present(resource, stored)):
            selected.append((key, stored))
        if limit and len(selected) == limit:
            last_index = index
            break
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    # Like etcd: more keys after the last one returned means a token, even if none of them
    # would match the selectors (the next page may then be empty).
    if last_index < len(scoped) - 1:
        metadata["continue"] = encode_continue(rv, scoped[last_index][0] + "\x00")
        if not filtered:  # etcd's count cannot apply selectors: omitted then
            metadata["remainingItemCount"] = len(scoped) - 1 - last_index
    head = {"kind": resource.list_kind, "apiVersion": resource.api_version, "metadata": metadata}
    # The body json.dumps would give for head + "items", built from each object's cached
    # encoding. Keys in `selected` are relative to the scope: the store's are full keys.
    items = store.encoded(
        resource.kind,
        [(prefix + key, obj) for key, obj in selected],
        resource.api_version,
        lambda obj: json.dumps(
            _item(resource, obj), separators=(",", ":"), check_circular=False
        ).encode(),
    )
    return b"".join((_dumps(head)[:-1], b',"items":[', b",".join(items), b"]}"))


def _matches(labels: LabelSelector, fields: FieldSelector, obj: Object) -> bool:
    return labels.matches(obj) and fields.matches(obj)


def _item(resource: Resource, stored: Object) -> Object:
    """A list item: the object as `resource` serves it, without kind and apiVersion."""
    return {k: v for k, v in present(resource, stored).items() if k not in ("kind", "apiVersion")}


def _dumps(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _limit(text: str) -> int:
    if not text:
        return 0
    try:
        return max(int(text), 0)
    except ValueError:
        raise bad_request(f'limit: invalid value "{text}": expected an integer') from None


def _read_point(store: Store, faults: Faults, query: Mapping[str, str]) -> tuple[int, str]:
    """The resourceVersion to read at and the key to start from ("" for the first page)."""
    token = query.get("continue", "")
    requested = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    current = store.resource_version
    if token:
        if requested or match:
            raise bad_request("specifying resource version is not allowed when using continue")
        rv, start = decode_continue(token)
        if faults.take_continue_expiry() or (rv != _LATEST and rv < store.compacted):
            raise ApiError(410, _EXPIRED_CONTINUE, continue_token=encode_continue(_LATEST, start))
        return (current if rv == _LATEST else rv), start
    if match not in ("", "Exact", "NotOlderThan"):
        raise bad_request(f'resourceVersionMatch: Unsupported value: "{match}"')
    if match and not requested:
        raise bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided")
    if requested in ("", "0"):
        if match == "Exact":
            raise bad_request('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"')
        return current, ""
    try:
        rv = int(requested)
    except ValueError:
        raise bad_request(f'invalid resource version "{requested}"') from None
    if rv > current:
        raise _too_large(rv, current)
    return (rv if match == "Exact" else current), ""


def _too_large(rv: int, current: int) -> ApiError:
    return ApiError(
        504,
        f"Too large resource version: {rv}, current: {current}",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ]
        },
        retry_after=1,
    )
