"""A multi-version object store: the fake's etcd.

Every write bumps one global resourceVersion counter and appends a revision, so a list can be
read at any resourceVersion not yet compacted away. That is what makes continue tokens
consistent (every page is read at the first page's resourceVersion, as with etcd) and is the
history a watch will replay from. History grows until `compact()`, as etcd's does between
compactions.
"""

from __future__ import annotations

import copy
import threading
import uuid
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .resources import RESOURCES, Resource, resource_for_kind

Object = dict[str, Any]


@dataclass(frozen=True)
class Revision:
    rv: int
    obj: Object | None  # None: deleted at `rv`; stored objects are never mutated


class TooOld(Exception):
    """The requested resourceVersion has been compacted away."""


class TooNew(Exception):
    """The requested resourceVersion is ahead of the store."""


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_key(resource: Resource, namespace: str, name: str) -> str:
    """The etcd key below the resource's prefix: `ns/name`, or `name` if cluster-scoped."""
    return f"{namespace}/{name}" if resource.namespaced else name


class Store:
    def __init__(self, now: Callable[[], str] = _utc_now) -> None:
        self._now = now
        self._lock = threading.RLock()
        self._rv = 0
        self._compacted = 0
        self._history: dict[str, dict[str, list[Revision]]] = {r.kind: {} for r in RESOURCES}

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    @property
    def compacted(self) -> int:
        with self._lock:
            return self._compacted

    def put(self, obj: Object) -> Object:
        """Create or replace; fills uid and creationTimestamp (kept from the stored object on
        replace) and always sets a fresh resourceVersion."""
        resource, namespace, name = _identity(obj)
        stored = copy.deepcopy(obj)
        metadata: dict[str, Any] = stored["metadata"]
        key = object_key(resource, namespace, name)
        with self._lock:
            previous = self._current(resource.kind, key)
            old_meta = previous["metadata"] if previous else {}
            if resource.namespaced:
                metadata["namespace"] = namespace
            metadata.setdefault("uid", old_meta.get("uid") or str(uuid.uuid4()))
            metadata.setdefault(
                "creationTimestamp", old_meta.get("creationTimestamp") or self._now()
            )
            self._rv += 1
            metadata["resourceVersion"] = str(self._rv)
            self._history[resource.kind].setdefault(key, []).append(Revision(self._rv, stored))
            return copy.deepcopy(stored)

    def remove(self, kind: str, namespace: str | None, name: str) -> Object:
        resource = resource_for_kind(kind)
        key = object_key(resource, namespace or "", name)
        with self._lock:
            previous = self._current(kind, key)
            if previous is None:
                raise KeyError(f"{kind} {key!r} does not exist")
            self._rv += 1
            self._history[kind][key].append(Revision(self._rv, None))
            gone = copy.deepcopy(previous)
            gone["metadata"]["resourceVersion"] = str(self._rv)  # as a DELETED event shows it
            return gone

    def get(self, kind: str, namespace: str | None, name: str) -> Object | None:
        resource = resource_for_kind(kind)
        with self._lock:
            return copy.deepcopy(self._current(kind, object_key(resource, namespace or "", name)))

    def read(self, kind: str, rv: int | None = None) -> list[tuple[str, Object]]:
        """(key, object) at resourceVersion `rv` (default: now), sorted by key as etcd
        returns them. The objects are the stored ones: copy before handing them out."""
        with self._lock:
            rv = self._rv if rv is None else rv
            if rv < self._compacted:
                raise TooOld(rv)
            if rv > self._rv:
                raise TooNew(rv)
            found: list[tuple[str, Object]] = []
            for key, revisions in self._history[kind].items():
                index = bisect_right(revisions, rv, key=lambda revision: revision.rv)
                if index and (obj := revisions[index - 1].obj) is not None:
                    found.append((key, obj))
        found.sort(key=lambda pair: pair[0].encode())  # etcd orders keys bytewise
        return found

    def compact(self, rv: int | None = None) -> int:
        """Forget history before `rv` (default: now), as etcd's periodic compaction does."""
        with self._lock:
            target = self._rv if rv is None else min(rv, self._rv)
            if target <= self._compacted:
                return self._compacted
            for revisions_by_key in self._history.values():
                for key in list(revisions_by_key):
                    revisions = revisions_by_key[key]
                    keep = max(bisect_right(revisions, target, key=lambda r: r.rv) - 1, 0)
                    del revisions[:keep]
                    if len(revisions) == 1 and revisions[0].obj is None:
                        del revisions_by_key[key]
            self._compacted = target
            return target

    def _current(self, kind: str, key: str) -> Object | None:
        revisions = self._history[kind].get(key)
        return revisions[-1].obj if revisions else None


def _identity(obj: Object) -> tuple[Resource, str, str]:
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        raise ValueError("an object is a dict with apiVersion, kind and metadata")
    if obj.get("apiVersion") != "v1":
        raise ValueError(f"apiVersion must be 'v1', got {obj.get('apiVersion')!r}")
    resource = resource_for_kind(str(obj.get("kind")))
    name = obj["metadata"].get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{resource.kind} needs metadata.name")
    namespace = obj["metadata"].get("namespace") or ""
    if resource.namespaced:
        return resource, namespace or "default", name
    if namespace:
        raise ValueError(f"{resource.kind} is cluster-scoped; drop metadata.namespace")
    return resource, "", name
