"""One request to a resource path (lists, watches, objects, subresources), and the HTTP
details every request shares: Accept and Content-Type checks, JSON bodies, the RBAC verb."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from . import watch
from .events import present
from .faults import Faults
from .listing import list_body
from .routes import Route, Target
from .status import ApiError, not_found
from .store import Store, storage_key
from .validation import check_dry_run, decode_body
from .writes import Writer

_JSON_TYPES = {("application", "json"), ("application", "*"), ("*", "*")}
_ACCEPTED = "application/json"  # the apiserver also lists yaml and protobuf; the fake has neither
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
Result = tuple[int, dict[str, Any] | bytes | Iterator[bytes]]  # bytes: an encoded body


class ResourceHandler:
    def __init__(
        self, store: Store, faults: Faults, bookmark_interval: Callable[[], float]
    ) -> None:
        self._store = store
        self._faults = faults
        self._writer = Writer(store)
        self._bookmark_interval = bookmark_interval

    @property
    def writer(self) -> Writer:
        return self._writer

    def handle(
        self,
        method: str,
        route: Route,
        query: dict[str, str],
        headers: Mapping[str, str],
        body: bytes,
        stop: threading.Event | None,
        path: str = "",
        server: str = "",
    ) -> Result:
        """`path` and `server` (the front that took it) are for faults on watch streams."""
        resource = route.resource
        assert resource is not None  # resolve() sets it for LIST and GET
        namespace = route.namespace or ""
        if method == "GET" and route.target is Target.LIST:
            if query.get("watch", "") in watch.TRUE:
                request = watch.parse_watch(resource, route.namespace, query)
                stream = watch.stream(
                    self._store, self._faults, request, self._bookmark_interval, stop, path, server
                )
                return 200, stream
            return 200, list_body(self._store, self._faults, resource, route.namespace, query)
        if method == "GET":
            assert route.name is not None
            obj = self._store.current(resource.kind, storage_key(resource, namespace, route.name))
            if obj is None:
                raise not_found(resource.plural, route.name, resource.group)
            return 200, copy.deepcopy(present(resource, obj))
        if resource.view or method not in _VERBS:
            raise ApiError(405)
        dry_run = check_dry_run(query)
        if route.target is Target.LIST:
            if method != "POST" or (resource.namespaced and route.namespace is None):
                raise ApiError(405)  # no deletecollection; create needs a namespace
            check_json_body(headers)
            obj = decode_body(body, resource, route.namespace)
            return 201, self._writer.create(resource, obj, dry_run)
        assert route.name is not None
        if method == "PUT":
            check_json_body(headers)
            obj = decode_body(body, resource, route.namespace)
            result, created = self._writer.update(
                resource, obj, route.name, route.subresource, dry_run
            )
            return (201 if created else 200), result
        if method == "PATCH":
            content_type = header(headers, "Content-Type").split(";")[0].strip()
            patch = json_body(body)
            return 200, self._writer.patch(
                resource, namespace, route.name, content_type, patch, route.subresource, dry_run
            )
        if route.subresource:
            raise ApiError(405)
        options = json_body(body) if body.strip() else {}
        if not isinstance(options, dict):
            raise ApiError(400, "DeleteOptions must be a JSON object")
        return 200, self._writer.delete(resource, namespace, route.name, options, dry_run)


def verb_of(method: str, route: Route, query: Mapping[str, str]) -> str:
    """The RBAC verb a request needs, as a Forbidden message names it."""
    if method != "GET":
        return _VERBS.get(method, method.lower())
    if route.target is not Target.LIST:
        return "get"
    return "watch" if query.get("watch", "") in watch.TRUE else "list"


def header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), "")


def check_accept(headers: Mapping[str, str]) -> None:
    """406 unless plain JSON is acceptable. Ranges asking for a transformation (`as=Table`,
    aggregated discovery) are not served; clients list plain JSON after them as a fallback."""
    accept = header(headers, "Accept")
    if not accept:
        return
    for media_range in accept.split(","):
        media, *params = (part.strip() for part in media_range.split(";"))
        kind, _, subtype = media.partition("/")
        if (kind, subtype) in _JSON_TYPES and not any(p.startswith("as=") for p in params):
            return
    raise ApiError(406, f"only the following media types are accepted: {_ACCEPTED}")


def check_json_body(headers: Mapping[str, str]) -> None:
    content_type = header(headers, "Content-Type").split(";")[0].strip()
    if content_type not in ("", "application/json"):
        raise ApiError(
            415,
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json",
        )


def json_body(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise ApiError(400, f"the body of the request is not valid JSON: {exc}") from None
