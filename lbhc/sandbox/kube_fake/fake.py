"""KubeFake: the stateful fake apiserver, independent of any transport.

`handle` turns one HTTP request into a response; KubeFakeServer puts it on a real socket.
The fake stores objects as given (no admission or defaulting), so a test seeds exactly what the
API would return, including objects older clusters wrote without defaulted fields.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .discovery import api_group_list_body, api_resource_list_body, api_versions_body, version_body
from .faults import Faults
from .journal import JournalEntry
from .listing import list_body
from .resources import resource_for_kind
from .routes import Route, Target, resolve
from .status import ApiError, forbidden, not_found
from .store import Object, Store

_JSON_TYPES = {("application", "json"), ("application", "*"), ("*", "*")}
_ACCEPTED = "application/json"  # the apiserver also lists yaml and protobuf; the fake has neither


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class KubeFake:
    """In-memory core/v1 Nodes, Services, Pods and Namespaces behind apiserver semantics."""

    def __init__(self, version: str = "v1.32.4") -> None:
        self._version = version_body(version)  # validates early
        self._store = Store()
        self._journal: list[JournalEntry] = []
        self._journal_lock = threading.Lock()
        self.faults = Faults()

    # -- seeding and inspection (deep copies both ways) ---------------------------------------

    def upsert(self, obj: Object) -> Object:
        """Create or replace `obj` (apiVersion v1, kind, metadata.name; namespace defaults to
        "default" for namespaced kinds). Returns the stored object."""
        return self._store.put(obj)

    def delete(self, kind: str, namespace: str | None, name: str) -> Object:
        """Remove an object; KeyError if absent. Returns it as last stored."""
        return self._store.remove(kind, namespace, name)

    def get(self, kind: str, namespace: str | None, name: str) -> Object | None:
        return self._store.get(kind, namespace, name)

    def objects(self, kind: str) -> list[Object]:
        """Every current object of `kind`, with kind and apiVersion, in the API's list order."""
        resource_for_kind(kind)
        return [copy.deepcopy(obj) for _, obj in self._store.read(kind)]

    @property
    def resource_version(self) -> str:
        return str(self._store.resource_version)

    def compact(self) -> int:
        """Forget history up to now: older continue tokens then expire naturally (410)."""
        return self._store.compact()

    @property
    def journal(self) -> list[JournalEntry]:
        with self._journal_lock:
            return list(self._journal)

    def clear_journal(self) -> None:
        with self._journal_lock:
            self._journal.clear()

    # -- HTTP ---------------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: Mapping[str, str]) -> Response:
        """One request: `target` is the request line's path with its query."""
        split = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        try:
            response = _json(200, self._dispatch(method, split.path, query, headers))
        except ApiError as err:
            response = _json(err.code, err.body(), err.headers())
        with self._journal_lock:
            self._journal.append(JournalEntry(method, split.path, query, response.status))
        return response

    def _dispatch(
        self, method: str, path: str, query: dict[str, str], headers: Mapping[str, str]
    ) -> dict[str, Any]:
        route = resolve(path)
        if failure := self.faults.take_failure(path):
            if failure.status == 403 and failure.message is None and route and route.resource:
                verb = "list" if route.target is Target.LIST else "get"
                raise forbidden(verb, route.resource.plural, route.namespace)
            # The apiserver's max-in-flight limiter asks clients to come back in a second.
            retry_after = 1 if failure.status == 429 else None
            raise ApiError(failure.status, failure.message, retry_after=retry_after)
        if route is None:
            raise ApiError(404)
        if method != "GET":
            raise ApiError(405)
        _check_accept(headers)
        if query.get("watch") not in (None, "", "false", "0"):
            raise ApiError(405, "watch is not served by this fake yet")
        if route.target is Target.VERSION:
            return self._version
        if route.target is Target.API:
            return api_versions_body(_header(headers, "Host") or "127.0.0.1")
        if route.target is Target.API_V1:
            return api_resource_list_body()
        if route.target is Target.APIS:
            return api_group_list_body()
        return self._resource(route, query)

    def _resource(self, route: Route, query: dict[str, str]) -> dict[str, Any]:
        resource = route.resource
        assert resource is not None  # resolve() sets it for LIST and GET
        if route.target is Target.LIST:
            return list_body(self._store, self.faults, resource, route.namespace, query)
        assert route.name is not None
        obj = self._store.get(resource.kind, route.namespace, route.name)
        if obj is None:
            raise not_found(resource.plural, route.name)
        return obj


def _header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), "")


def _check_accept(headers: Mapping[str, str]) -> None:
    """406 unless plain JSON is acceptable. Ranges asking for a transformation (`as=Table`,
    aggregated discovery) are not served; clients list plain JSON after them as a fallback."""
    accept = _header(headers, "Accept")
    if not accept:
        return
    for media_range in accept.split(","):
        media, *params = (part.strip() for part in media_range.split(";"))
        kind, _, subtype = media.partition("/")
        if (kind, subtype) in _JSON_TYPES and not any(p.startswith("as=") for p in params):
            return
    raise ApiError(406, f"only the following media types are accepted: {_ACCEPTED}")


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    payload = json.dumps(body, separators=(",", ":")).encode()
    return Response(status, payload, {"Content-Type": "application/json", **(headers or {})})
