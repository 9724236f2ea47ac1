"""KubeFake: the stateful fake apiserver, independent of any transport.

`handle` turns one HTTP request into a response; KubeFakeServer puts it on a real socket.
Seeding (`upsert`) stores objects as given (no admission or defaulting), so a test seeds
exactly what the API would return; the other helpers (`delete`, `patch`, `taint`) go through
the same code as HTTP writes, so watches see them as they would see kubectl's.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .discovery import (
    api_group_body,
    api_group_list_body,
    api_resource_list_body,
    api_versions_body,
    version_body,
)
from .events import from_core_event
from .faults import Faults
from .handlers import ResourceHandler, check_accept, header, verb_of
from .journal import JournalEntry
from .openapi import openapi_v3_document, openapi_v3_root
from .patch import PATCH_TYPES
from .resources import resource_for, resource_for_kind
from .routes import Route, Target, resolve
from .status import ApiError, forbidden
from .store import Object, Store
from .watch import TRUE


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterator[bytes] | None = None  # a watch: sent chunked instead of `body`
    drop: bool = False  # a fault: close the connection without answering at all


class KubeFake:
    """In-memory Kubernetes objects behind apiserver semantics.

    history_limit: keep only the last N changes for watches and consistent lists (None: all
    until compact()). bookmark_interval: seconds between watch BOOKMARK events.
    """

    def __init__(
        self,
        version: str = "v1.32.4",
        *,
        history_limit: int | None = None,
        bookmark_interval: float = 1.0,
    ) -> None:
        self._version = version_body(version)  # validates early
        self._store = Store(history_limit=history_limit)
        self.faults = Faults()
        self.faults.on_drop_watches(self._store.notify)
        self._resources = ResourceHandler(self._store, self.faults, lambda: self.bookmark_interval)
        self._writer = self._resources.writer
        self._journal: list[JournalEntry] = []
        self._journal_lock = threading.Lock()
        self.bookmark_interval = bookmark_interval

    # -- seeding and inspection (deep copies both ways) ---------------------------------------

    def upsert(self, obj: Object) -> Object:
        """Create or replace `obj` as given (apiVersion, kind, metadata.name; namespace
        defaults to "default" for namespaced kinds). A core/v1 Event is stored in its
        events.k8s.io/v1 form. Returns the stored object."""
        if not isinstance(obj, dict):
            raise ValueError("an object is a dict with apiVersion, kind and metadata")
        resource = resource_for(str(obj.get("apiVersion")), str(obj.get("kind")))
        return self._store.put(from_core_event(obj) if resource.view else obj)

    def delete(self, kind: str, namespace: str | None, name: str) -> Object:
        """Delete as the API does: with finalizers the object only gets a deletionTimestamp.
        KeyError if absent. Returns the object as the API's DELETE does."""
        resource = resource_for_kind(kind)
        return self._write(lambda: self._writer.delete(resource, namespace or "", name, {}))

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "merge",
    ) -> Object:
        """PATCH with patch_type "merge", "strategic" or "json". KeyError if absent;
        ApiError for what the API would refuse (409 on a stale metadata.resourceVersion)."""
        resource = resource_for_kind(kind)
        content_type = PATCH_TYPES[patch_type]
        return self._write(
            lambda: self._writer.patch(resource, namespace or "", name, content_type, patch)
        )

    def taint(self, node: str, key: str, value: str = "", effect: str = "NoSchedule") -> Object:
        """Add or replace the taint with `key` and `effect`, as `kubectl taint` does."""
        return self._set_taints(node, key, effect, {"key": key, "value": value, "effect": effect})

    def untaint(self, node: str, key: str, effect: str | None = None) -> Object:
        """Remove the taints with `key` (and `effect`, if given), as `kubectl taint key-`."""
        return self._set_taints(node, key, effect, None)

    def _set_taints(
        self, node: str, key: str, effect: str | None, taint: dict[str, str] | None
    ) -> Object:
        with self._store.lock:
            current = self._store.get("Node", None, node)
            if current is None:
                raise KeyError(f"Node {node!r} does not exist")
            taints = [
                t
                for t in (current.get("spec") or {}).get("taints") or []
                if t.get("key") != key or (effect is not None and t.get("effect") != effect)
            ]
            if taint is not None:
                taints.append({k: v for k, v in taint.items() if v})
            rv = current["metadata"]["resourceVersion"]
            patch = {"metadata": {"resourceVersion": rv}, "spec": {"taints": taints or None}}
            return self.patch("Node", None, node, patch, "strategic")

    def _write(self, write: Any) -> Object:
        try:
            result: Object = write()
        except ApiError as err:
            if err.code == 404:
                raise KeyError(err.message) from None
            raise
        return result

    def get(self, kind: str, namespace: str | None, name: str) -> Object | None:
        return self._store.get(kind, namespace, name)

    def objects(self, kind: str) -> list[Object]:
        """Every current object of `kind`, with kind and apiVersion, in the API's list order."""
        resource_for_kind(kind)
        return [copy.deepcopy(obj) for _, obj in self._store.read(kind)]

    def revisions(self, kind: str, namespace: str | None, name: str) -> list[tuple[str, Object]]:
        """(resourceVersion, object) for each version of one object still in history, oldest
        first; a deletion is left out. With the journal's resource_version, says what a client
        was shown (e.g. which holder a Lease named when a replica read it)."""
        return [(str(rv), obj) for rv, obj in self._store.revisions(kind, namespace, name)]

    @property
    def history_limit(self) -> int | None:
        """How many changes watches and continued lists can reach back (None: all until
        compact()); lower it to make a burst of writes outrun a slow watcher (410, relist)."""
        return self._store.history_limit

    @history_limit.setter
    def history_limit(self, changes: int | None) -> None:
        self._store.history_limit = changes

    @property
    def resource_version(self) -> str:
        return str(self._store.resource_version)

    def compact(self) -> int:
        """Forget history up to now: older continue tokens expire (410) and watches from an
        older resourceVersion get a 410 Expired ERROR event."""
        return self._store.compact()

    @property
    def journal(self) -> list[JournalEntry]:
        with self._journal_lock:
            return list(self._journal)

    def clear_journal(self) -> None:
        with self._journal_lock:
            self._journal.clear()

    # -- HTTP ---------------------------------------------------------------------------------

    def handle(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes = b"",
        stop: threading.Event | None = None,
        server: str = "",
    ) -> Response:
        """One request: `target` is the request line's path with its query. `stop` ends
        watch streams early (the server's shutdown); `server` names the front that took the
        request (faults may be narrowed to one)."""
        arrived = time.monotonic()
        split = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        version = ""
        try:
            response, version = self._answer(method, split.path, query, headers, body, stop, server)
        except ApiError as err:
            response = _json(err.code, err.body(), err.headers())
        entry = JournalEntry(
            method,
            split.path,
            query,
            response.status,
            header(headers, "User-Agent"),
            header(headers, "x-lbhc-client-id"),
            arrived,
            server,
            version,
        )
        with self._journal_lock:
            self._journal.append(entry)
        if delay := self.faults.take_delay(split.path, server, _is_watch(query)):
            (stop or threading.Event()).wait(delay)  # a server stopping cuts the wait short
        return response

    def _answer(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: Mapping[str, str],
        body: bytes,
        stop: threading.Event | None,
        server: str,
    ) -> tuple[Response, str]:
        """The response, and the resourceVersion of the one object it carries (if any)."""
        if outage := self.faults.outage(path, server):
            if outage.status is None:
                return Response(0, b"", drop=True), ""
            raise ApiError(outage.status)
        if (empty := self.faults.take_empty(path, server, _is_watch(query))) is not None:
            return Response(200, empty, {"Content-Type": "application/json"}), ""
        status, result = self._dispatch(method, path, query, headers, body, stop, server)
        if isinstance(result, dict):
            version = str((result.get("metadata") or {}).get("resourceVersion") or "")
            return _json(status, result), version
        if isinstance(result, bytes):  # a list, already encoded
            return Response(status, result, {"Content-Type": "application/json"}), ""
        return Response(status, b"", {"Content-Type": "application/json"}, result), ""

    def _dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: Mapping[str, str],
        body: bytes,
        stop: threading.Event | None,
        server: str = "",
    ) -> tuple[int, dict[str, Any] | bytes | Iterator[bytes]]:
        route = resolve(path)
        if failure := self.faults.take_failure(path, server, _is_watch(query)):
            if failure.status == 403 and failure.message is None and route and route.resource:
                resource = route.resource
                verb = verb_of(method, route, query)
                raise forbidden(verb, resource.plural, route.namespace, resource.group)
            # The apiserver's max-in-flight limiter asks clients to come back in a second.
            retry_after = 1 if failure.status == 429 else None
            raise ApiError(failure.status, failure.message, retry_after=retry_after)
        if route is None:
            raise ApiError(404)
        check_accept(headers)
        if route.resource is None:
            if method != "GET":
                raise ApiError(405)
            return 200, self._discovery(route, headers)
        return self._resources.handle(method, route, query, headers, body, stop, path, server)

    def _discovery(self, route: Route, headers: Mapping[str, str]) -> dict[str, Any]:
        if route.target is Target.VERSION:
            return self._version
        if route.target is Target.API:
            return api_versions_body(header(headers, "Host") or "127.0.0.1")
        if route.target is Target.API_V1:
            return api_resource_list_body(route.group_version)
        if route.target is Target.GROUP:
            return api_group_body(route.group_version)
        if route.target is Target.OPENAPI:
            if not route.group_version:
                return openapi_v3_root()
            document = openapi_v3_document(route.group_version, self._version["gitVersion"])
            if document is None:
                raise ApiError(404)
            return document
        return api_group_list_body()


def _is_watch(query: Mapping[str, str]) -> bool:
    return query.get("watch", "") in TRUE


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    payload = json.dumps(body, separators=(",", ":")).encode()
    return Response(status, payload, {"Content-Type": "application/json", **(headers or {})})
