"""A list+watch reflector per resource: list (paged), then watch from the list's
resourceVersion with bookmarks; resume from the last version seen after a dropped
connection; relist on 410 Gone; jittered backoff on errors. Objects are decoded from the raw
bytes straight into the planner's projections.

Written here rather than using kubernetes.watch, which never advances resourceVersion with
deserialize=False (so reconnects replay) and crashes on ERROR events (kubernetes-client/python
kubernetes/watch/watch.py).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from lbhc.controller.backoff import Backoff
from lbhc.kube.cache import ClusterCache, Obj
from lbhc.kube.client import (
    EXPIRED,
    KubeApi,
    describe_kube_error,
    list_all,
    status_of,
)
from lbhc.kube.decode import (
    DaemonSetList,
    NodeList,
    ObjectList,
    PodList,
    ServiceList,
    describe_validation_error,
    raw_object_key,
)
from lbhc.kube.resources import Resource, undecodable_gap
from lbhc.model.cluster import DaemonSet, Node, Pod, Service

log = logging.getLogger(__name__)

_LISTS: dict[Resource, type[ObjectList]] = {
    Resource.NODES: NodeList,
    Resource.SERVICES: ServiceList,
    Resource.KUBE_PROXY_PODS: PodList,
    Resource.KUBE_PROXY_DAEMONSETS: DaemonSetList,
}
_OBJECTS: dict[Resource, type[Obj]] = {
    Resource.NODES: Node,
    Resource.SERVICES: Service,
    Resource.KUBE_PROXY_PODS: Pod,
    Resource.KUBE_PROXY_DAEMONSETS: DaemonSet,
}


_VERY_SHORT_WATCH_SEC = 1.0


class WatchExpired(Exception):
    """The server no longer has the history to resume from: relist."""


def _typed_event(model: type[Obj]) -> type[BaseModel]:
    return type(
        f"{model.__name__}Event",
        (BaseModel,),
        {
            "__annotations__": {"type": str, "object": model},
            "model_config": {"frozen": True, "extra": "ignore"},
        },
    )


class Reflector:
    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        cache: ClusterCache,
        on_change: Callable[[str], None],
        *,
        watch_timeout_sec: int = 300,
        on_restart: Callable[[Resource, str], None] | None = None,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,  # tests step it to time a watch
    ) -> None:
        self.resource = resource
        self._clock = clock
        self._api = api
        self._cache = cache
        self._on_change = on_change
        self._on_restart = on_restart or (lambda resource, why: None)
        self._watch_timeout_sec = watch_timeout_sec
        self._backoff = backoff or Backoff()
        self._event_model = _typed_event(_OBJECTS[resource])
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(
            target=self._run, name=f"reflector-{resource.name.lower()}", daemon=True
        )
        self.resource_version = ""
        self._events_since_list = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread.ident is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                started = self._clock()
                if not self._watch() and self._clock() - started < _VERY_SHORT_WATCH_SEC:
                    # Ended at once without a single event (not even a bookmark): as
                    # client-go's "very short watch", wait before the next, or it is a
                    # hot loop against the API server.
                    self._stop.wait(self._backoff.next())
            except Exception as exc:
                if self._stop.is_set():
                    return
                expired = isinstance(exc, WatchExpired) or status_of(exc) == EXPIRED
                if expired:
                    self._restarted("expired (410): relisting")
                    need_list = True
                    if self._events_since_list > 0:
                        continue  # history moved on while we watched: relist at once
                    # Expired again right after a list: do not spin on full relists.
                else:
                    problem = f"watch failed: {describe_kube_error(exc)}"
                    self._cache.mark_problem(self.resource, problem)
                    self._restarted(problem)
                self._stop.wait(self._backoff.next())

    def _undecodable(self, kind: str, obj: dict[str, Any], problem: str) -> None:
        metadata = obj.get("metadata")
        version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
        if not isinstance(version, str) or not version:
            raise ValueError(f"undecodable {self.resource} {kind} event without a resourceVersion")
        self.resource_version = version
        key = raw_object_key(obj)
        if kind == "DELETED":
            changed = self._cache.forget(self.resource, key)
        else:
            log.warning(
                "%s %s could not be decoded (%s): a gap until fixed", self.resource, key, problem
            )
            changed = self._cache.mark_undecodable(self.resource, key, problem)
        if changed:
            self._on_change(f"{self.resource} {kind.lower()} {key} (undecodable)")

    def _restarted(self, why: str) -> None:
        log.warning("%s %s", self.resource, why)
        self._on_restart(self.resource, why)

    def _list(self) -> None:
        self._cache.mark_problem(self.resource, "relist in progress")
        listed = list_all(self._api, self.resource, _LISTS[self.resource])
        self.resource_version = listed.resource_version
        self._events_since_list = 0
        if listed.undecodable:
            log.warning("%s", undecodable_gap(self.resource, listed.undecodable))
        undecodable = {u.key: u.problem for u in listed.undecodable}
        changed = self._cache.replace(self.resource, listed.items, undecodable)
        # Even an unchanged relist ends a gap, which may unblock withheld removals.
        self._on_change(f"{self.resource} {'listed' if changed else 'relisted unchanged'}")

    def _watch(self) -> bool:
        """One watch until it ends; True if it delivered anything."""
        # Randomised like client-go, so many watches do not all reconnect at once.
        timeout = int(self._watch_timeout_sec * (1 + random.random()))
        self._stream = self._api.watch(self.resource, self.resource_version, timeout)
        delivered = False
        try:
            for line in self._stream:
                if self._stop.is_set():
                    return delivered
                self._handle(line)
                self._events_since_list += 1
                if not delivered:
                    # A watch that delivers is healthy: the next drop starts from the
                    # shortest wait, not one grown over earlier drops (each a blind spell).
                    delivered = True
                    self._backoff.reset()
                # Fresh again only once the stream has delivered something: an open
                # connection alone may still be about to replay what we missed, or to
                # answer 410 in-stream.
                if self._cache.has_problem(self.resource):
                    self._cache.mark_connected(self.resource)
                    self._on_change(f"{self.resource} watch resumed")
        finally:
            self._stream = None
        return delivered

    def _handle(self, line: bytes) -> None:
        try:
            event: Any = self._event_model.model_validate_json(line)
        except ValidationError as exc:
            self._handle_untyped(json.loads(line), exc)
            return
        obj: Obj = event.object
        self.resource_version = obj.metadata.resource_version or self.resource_version
        if event.type in ("ADDED", "MODIFIED", "DELETED") and self._cache.apply(
            self.resource, event.type, obj
        ):
            self._on_change(f"{self.resource} {event.type.lower()} {obj.metadata.name}")

    def _handle_untyped(self, event: dict[str, Any], exc: ValidationError) -> None:
        """BOOKMARK and ERROR events carry no object of the watched kind; an object event
        whose object the projections cannot read makes that object a gap, not the stream."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
            self._undecodable(kind, obj, describe_validation_error(exc))
            return
        if kind == "BOOKMARK":
            self.resource_version = obj.get("metadata", {}).get("resourceVersion", "")
            return
        if kind == "ERROR":
            if obj.get("code") == EXPIRED:
                raise WatchExpired(obj.get("message", ""))
            raise RuntimeError(f"watch error event: {obj.get('code')} {obj.get('message')}")
        raise ValueError(f"undecodable {self.resource} watch event of type {kind!r}")
