"""Framework-free dispatcher: (method, path, query, headers, body) -> (status, headers, body).

Both the real HTTP server and the `responses` mount feed requests through `handle`, so the two
transports behave identically.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from . import fieldmask, operations, routes
from .errors import ComputeError, invalid_value, not_found
from .journal import JournalEntry
from .resources.common import Request, Response
from .store import GCE_REGIONS, Store, zone_region
from .validation import check_request_id, parse_json_object

RESPONSE_HEADERS = {"Content-Type": "application/json; charset=UTF-8"}

Query = Mapping[str, str] | str | None


def handle(
    store: Store,
    method: str,
    path: str,
    query: Query = None,
    headers: Mapping[str, str] | None = None,
    body: bytes | str | None = b"",
) -> tuple[int, dict[str, str], bytes]:
    method = method.upper()
    path, params = _split(path, query)
    raw = body.encode() if isinstance(body, str) else (body or b"")
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    relative = unquote(path[len(routes.API_PREFIX) :]) if path.startswith(routes.API_PREFIX) else ""
    route, path_params, path_known = (
        routes.find(method, relative) if relative else (None, {}, False)
    )
    mutating = route.mutating if route else method in routes.MUTATING_METHODS
    arrived = store.clock()
    mask = fieldmask.requested(params, lowered)
    try:
        selection = fieldmask.parse(mask) if mask is not None else None
        status, payload = _serve(store, method, path, params, raw, route, path_params, path_known)
        lost = store.faults.check_response(method, path) if status < 400 else None
        if lost is not None:
            raise lost
        if selection is not None and status < 400:
            kind = fieldmask.KINDS.get(route.resource) if route else None
            fieldmask.check(selection, payload, kind)
            payload = fieldmask.apply(selection, payload)
    except ComputeError as exc:
        status, payload = exc.code, exc.body()
    except Exception as exc:  # a fake bug or a failing health_source: answer, don't drop the socket
        error = ComputeError(500, "backendError", f"Compute fake internal error: {exc!r}")
        status, payload = error.code, error.body()
    entry = JournalEntry(
        time=arrived,
        method=method,
        path=path,
        query=dict(params),
        body=_journal_body(raw),
        status=status,
        mutating=mutating,
        user_agent=lowered.get("user-agent", ""),
        client_id=lowered.get("x-lbhc-client-id", ""),
        field_mask=mask or "",
    )
    with store.lock:
        store.journal.append(entry)
    return status, dict(RESPONSE_HEADERS), json.dumps(payload).encode()


def _serve(
    store: Store,
    method: str,
    path: str,
    query: dict[str, str],
    raw: bytes,
    route: routes.Route | None,
    params: dict[str, str],
    path_known: bool,
) -> Response:
    mutating = route.mutating if route else method in routes.MUTATING_METHODS
    injected = store.faults.check_request(method, path, mutating)
    if injected is not None:
        raise injected
    extra = store.faults.extra_latency()
    if extra:
        time.sleep(extra)  # real time: it models network/server slowness, not op progress
    if route is None:
        if path_known:
            raise ComputeError(
                405, "httpMethodNotAllowed", f"HTTP method {method} is not supported by this URL"
            )
        raise ComputeError(
            404, "notFound", f"The requested URL {path} was not found on this server."
        )
    _check_scope(store, params)
    has_body = method in ("POST", "PUT", "PATCH") and route.method != "wait"
    request = Request(
        store=store,
        method=method,
        path=path,
        params=params,
        query=query,
        body=parse_json_object(raw) if has_body else None,
    )
    if route.self_locking:
        return route.handler(request)
    with store.lock:
        operations.advance(store)
        if route.mutating and query.get("requestId"):
            request_id = check_request_id(query["requestId"])
            earlier = store.request_ids.get((request.project, request_id))
            if earlier is not None:
                # Idempotent retry: the original operation, mutation not applied again.
                return 200, operations.render(store, earlier)
        return route.handler(request)


def _check_scope(store: Store, params: dict[str, str]) -> None:
    """A project that does not exist, or a region or zone GCE does not have, is refused before
    any resource is looked at, in the real API's words: 404 notFound "The resource 'projects/P'
    was not found" (e.g. hashicorp/terraform#4031, mantl/mantl#1002), 400 invalid "Invalid
    value for field 'region': 'R'. Unknown region." (googleapis/nodejs-compute#390,
    kelseyhightower/kubernetes-the-hard-way#164) and "Invalid value for field 'zone': 'Z'.
    Unknown zone." (inspec/inspec-gcp#301, a region given as the zone of instanceGroups.get)."""
    project = params.get("project")
    with store.lock:
        unknown = project is not None and bool(store.projects) and project not in store.projects
    if unknown:
        raise not_found(f"projects/{project}")
    region = params.get("region")
    if region is not None and region not in GCE_REGIONS:
        raise invalid_value("region", region, "Unknown region.")
    zone = params.get("zone")
    if zone is not None and zone_region(zone) is None:
        raise invalid_value("zone", zone, "Unknown zone.")


def _split(path: str, query: Query) -> tuple[str, dict[str, str]]:
    parts = urlsplit(path)
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    if isinstance(query, str):
        params.update(parse_qsl(query.lstrip("?"), keep_blank_values=True))
    elif query:
        params.update(query)
    return parts.path, params


def _journal_body(raw: bytes) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
