"""A multi-version object store with a change log: the fake's etcd and watch cache.

Every write bumps one global resourceVersion, appends a revision for its key and a Change to
the log, and wakes the watchers waiting on `changed`. A list can be read at any
resourceVersion not yet compacted away (that is what makes continue tokens consistent) and a
watch replays the log after its resourceVersion. History grows until `compact()` or, with a
`history_limit`, keeps the last N changes, as the apiserver's watch cache keeps a window.
"""

from __future__ import annotations

import copy
import threading
import uuid
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .resources import BY_KIND, Resource, resource_for_kind

Object = dict[str, Any]
_READ_CACHE = 8  # recent (kind, resourceVersion) reads kept for the next pages
_NO_ENCODINGS: dict[str, tuple[dict[str, Any], bytes]] = {}


@dataclass(frozen=True)
class Revision:
    rv: int
    obj: Object | None  # None: deleted at `rv`; stored objects are never mutated


@dataclass(frozen=True)
class Change:
    rv: int
    kind: str
    key: str
    obj: Object | None  # after the change (None: deleted); stored objects are never mutated
    prev: Object | None  # before the change (None: created)


class TooOld(Exception):
    """The requested resourceVersion has been compacted away."""


class TooNew(Exception):
    """The requested resourceVersion is ahead of the store."""


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def storage_key(resource: Resource, namespace: str, name: str) -> str:
    """The etcd key below the resource's prefix: `ns/name`, or `name` if cluster-scoped."""
    return f"{namespace}/{name}" if resource.namespaced else name


class Store:
    def __init__(self, now: Callable[[], str] = utc_now, history_limit: int | None = None) -> None:
        if history_limit is not None and history_limit < 1:
            raise ValueError("history_limit must be >= 1 (or None: keep everything)")
        self.now = now
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # notified on every commit
        self._history_limit = history_limit
        self._rv = 0
        self._compacted = 0
        self._history: dict[str, dict[str, list[Revision]]] = {kind: {} for kind in BY_KIND}
        self._log: list[Change] = []
        self._log_start = 0  # changes before this index are compacted away
        self._reads: dict[tuple[str, int], list[tuple[str, Object]]] = {}
        # (kind, key) -> form -> (current object, its encoding in that form): a list's items
        # serialised once per version. Only current objects are kept; a commit drops the key.
        self._encoded: dict[tuple[str, str], dict[str, tuple[Object, bytes]]] = {}

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    @property
    def history_limit(self) -> int | None:
        with self.lock:
            return self._history_limit

    @history_limit.setter
    def history_limit(self, changes: int | None) -> None:
        if changes is not None and changes < 1:
            raise ValueError("history_limit must be >= 1 (or None: keep everything)")
        with self.lock:
            self._history_limit = changes

    @property
    def compacted(self) -> int:
        with self.lock:
            return self._compacted

    # -- writes ---------------------------------------------------------------------------------

    def commit(self, kind: str, key: str, obj: Object | None) -> Object | None:
        """Store `obj` (None: delete) at the next resourceVersion, which it gets in its
        metadata. The caller hands over `obj` and must not mutate it afterwards."""
        with self.lock:
            self._rv += 1
            if obj is not None:
                obj["metadata"]["resourceVersion"] = str(self._rv)
            revisions = self._history[kind].setdefault(key, [])
            prev = revisions[-1].obj if revisions else None
            self._encoded.pop((kind, key), None)
            revisions.append(Revision(self._rv, obj))
            self._log.append(Change(self._rv, kind, key, obj, prev))
            if self._history_limit and len(self._log) - self._log_start > self._history_limit:
                self._compact_to(self._log[len(self._log) - self._history_limit - 1].rv)
            self.changed.notify_all()
            return obj

    def put(self, obj: Object) -> Object:
        """Create or replace as seeding does: fills uid and creationTimestamp (kept from the
        stored object on replace) and always sets a fresh resourceVersion."""
        resource, namespace, name = _identity(obj)
        stored = copy.deepcopy(obj)
        metadata: dict[str, Any] = stored["metadata"]
        key = storage_key(resource, namespace, name)
        with self.lock:
            previous = self.current(resource.kind, key)
            old_meta = previous["metadata"] if previous else {}
            if resource.namespaced:
                metadata["namespace"] = namespace
            metadata.setdefault("uid", old_meta.get("uid") or str(uuid.uuid4()))
            metadata.setdefault(
                "creationTimestamp", old_meta.get("creationTimestamp") or self.now()
            )
            self.commit(resource.kind, key, stored)
            return copy.deepcopy(stored)

    def notify(self) -> None:
        """Wake every watcher, e.g. to notice a fault."""
        with self.lock:
            self.changed.notify_all()

    # -- reads ----------------------------------------------------------------------------------

    def current(self, kind: str, key: str) -> Object | None:
        """The stored object (not a copy: never mutate it)."""
        with self.lock:
            revisions = self._history[kind].get(key)
            return revisions[-1].obj if revisions else None

    def get(self, kind: str, namespace: str | None, name: str) -> Object | None:
        resource = resource_for_kind(kind)
        return copy.deepcopy(self.current(kind, storage_key(resource, namespace or "", name)))

    def revisions(self, kind: str, namespace: str | None, name: str) -> list[tuple[int, Object]]:
        """Deep copies of one object's kept versions, oldest first (deletions left out)."""
        resource = resource_for_kind(kind)
        with self.lock:
            kept = self._history[kind].get(storage_key(resource, namespace or "", name), [])
            return [(r.rv, copy.deepcopy(r.obj)) for r in kept if r.obj is not None]

    def read(self, kind: str, rv: int | None = None) -> list[tuple[str, Object]]:
        """(key, object) at resourceVersion `rv` (default: now), sorted by key as etcd
        returns them. The list and objects are shared: copy before changing or handing out."""
        with self.lock:
            rv = self._rv if rv is None else rv
            if rv < self._compacted:
                raise TooOld(rv)
            if rv > self._rv:
                raise TooNew(rv)
            # What a kind held at a version never changes: a paged list reads it once.
            if (cached := self._reads.get((kind, rv))) is not None:
                return cached
            found: list[tuple[str, Object]] = []
            for key, revisions in self._history[kind].items():
                if revisions[-1].rv <= rv:  # the common case: reading now
                    obj = revisions[-1].obj
                else:
                    index = bisect_right(revisions, rv, key=lambda revision: revision.rv)
                    obj = revisions[index - 1].obj if index else None
                if obj is not None:
                    found.append((key, obj))
        found.sort(key=lambda pair: pair[0].encode())  # etcd orders keys bytewise
        with self.lock:
            self._reads[(kind, rv)] = found
            while len(self._reads) > _READ_CACHE:
                del self._reads[next(iter(self._reads))]
        return found

    def encoded(
        self,
        kind: str,
        entries: Sequence[tuple[str, Object]],
        form: str,
        encode: Callable[[Object], bytes],
    ) -> list[bytes]:
        """`encode(obj)` for each (key, object) read from `kind`, cached per object version
        and `form` (the caller's name for what `encode` produces). Encodings of current
        objects are kept until the next commit to their key; older versions (a continued list
        read at an earlier resourceVersion) are encoded each time, never kept."""
        found: list[bytes] = []
        misses: list[tuple[int, str, Object]] = []
        with self.lock:
            for key, obj in entries:
                cached = self._encoded.get((kind, key), _NO_ENCODINGS).get(form)
                if cached is not None and cached[0] is obj:
                    found.append(cached[1])
                else:
                    misses.append((len(found), key, obj))
                    found.append(b"")
        if not misses:
            return found
        for index, _, obj in misses:  # outside the lock: writers need not wait for this
            found[index] = encode(obj)
        with self.lock:
            history = self._history[kind]
            for index, key, obj in misses:
                revisions = history.get(key)
                if revisions and revisions[-1].obj is obj:  # still current: worth keeping
                    self._encoded.setdefault((kind, key), {})[form] = (obj, found[index])
        return found

    def changes_since(self, rv: int) -> list[Change]:
        """Every change after `rv`, oldest first; TooOld if some were compacted away."""
        with self.lock:
            if rv < self._compacted:
                raise TooOld(rv)
            if rv > self._rv:
                raise TooNew(rv)
            start = bisect_right(self._log, rv, lo=self._log_start, key=lambda c: c.rv)
            return self._log[start:]

    # -- compaction -----------------------------------------------------------------------------

    def compact(self, rv: int | None = None) -> int:
        """Forget history before `rv` (default: now), as etcd's periodic compaction does."""
        with self.lock:
            self._compact_to(self._rv if rv is None else min(rv, self._rv))
            self._trim_revisions()
            return self._compacted

    def _compact_to(self, target: int) -> None:
        if target <= self._compacted:
            return
        self._compacted = target
        self._log_start = bisect_right(self._log, target, lo=self._log_start, key=lambda c: c.rv)
        # Physically drop the log prefix (and older revisions) in batches: amortised O(1).
        if self._log_start > max(len(self._log) // 2, 1024):
            self._trim_revisions()

    def _trim_revisions(self) -> None:
        del self._log[: self._log_start]
        self._log_start = 0
        target = self._compacted
        for revisions_by_key in self._history.values():
            for key in list(revisions_by_key):
                revisions = revisions_by_key[key]
                keep = max(bisect_right(revisions, target, key=lambda r: r.rv) - 1, 0)
                del revisions[:keep]
                if len(revisions) == 1 and revisions[0].obj is None:
                    del revisions_by_key[key]


def _identity(obj: Object) -> tuple[Resource, str, str]:
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        raise ValueError("an object is a dict with apiVersion, kind and metadata")
    resource = resource_for_kind(str(obj.get("kind")))
    if obj.get("apiVersion") != resource.api_version:
        raise ValueError(
            f"{resource.kind} apiVersion must be {resource.api_version!r}, "
            f"got {obj.get('apiVersion')!r}"
        )
    name = obj["metadata"].get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{resource.kind} needs metadata.name")
    namespace = obj["metadata"].get("namespace") or ""
    if resource.namespaced:
        return resource, namespace or "default", name
    if namespace:
        raise ValueError(f"{resource.kind} is cluster-scoped; drop metadata.namespace")
    return resource, "", name
