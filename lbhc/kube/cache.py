"""The cluster as lbhc knows it: the latest projection of every object, and how much of the
cluster it can vouch for. The controller keeps it current with watches; a one-shot command
fills it from one list of each (KubeReader). Its snapshot is what the planner sees, assembled
here only, so `plan`, `status` and `run` cannot drift apart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from lbhc.kube.decode import Undecodable
from lbhc.kube.resources import Resource, undecodable_gap
from lbhc.model.cluster import ClusterSnapshot, DaemonSet, Node, Pod, Service

Obj = Node | Service | Pod | DaemonSet
# What the planner's view depends on: a problem in any of these is a gap.
PLANNING_RESOURCES = (Resource.NODES, Resource.SERVICES, Resource.KUBE_PROXY_PODS)


def object_key(obj: Obj) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


@dataclass
class _Store:
    objects: dict[str, Obj] = field(default_factory=dict)
    synced: bool = False  # a full list has been applied at least once
    problem: str = ""  # why the store cannot vouch for being current ("" when it can)
    # Objects the projections could not read: key -> problem. Each is a gap until a
    # readable version of it, or its deletion, arrives.
    undecodable: dict[str, str] = field(default_factory=dict)


class ClusterCache:
    """Thread-safe. A store is *fresh* when it has synced and its watch is connected and no
    relist is under way; anything else is a gap, and gaps withhold every removal."""

    def __init__(
        self, kube_system_uid: str | None = None, resources: Iterable[Resource] = tuple(Resource)
    ) -> None:
        self._lock = threading.Lock()
        self._stores = {resource: _Store() for resource in resources}
        self._kube_system_uid = kube_system_uid

    @property
    def kube_system_uid(self) -> str | None:
        return self._kube_system_uid

    def replace(
        self,
        resource: Resource,
        objects: Iterable[Obj],
        undecodable: Mapping[str, str] | None = None,
    ) -> bool:
        """A full list: the store becomes exactly these objects (and these undecodable
        ones). True if anything changed."""
        fresh = {object_key(o): o for o in objects}
        bad = dict(undecodable or {})
        with self._lock:
            store = self._stores[resource]
            changed = not store.synced or fresh != store.objects or bad != store.undecodable
            store.objects = fresh
            store.undecodable = bad
            store.synced = True
            store.problem = ""
            return changed

    def apply(self, resource: Resource, event_type: str, obj: Obj) -> bool:
        """One watch event. True only if something lbhc reads changed (a Node heartbeat,
        which bumps only resourceVersion and conditions, is not a change)."""
        key = object_key(obj)
        with self._lock:
            store = self._stores[resource]
            was_undecodable = store.undecodable.pop(key, None) is not None
            if event_type == "DELETED":
                return store.objects.pop(key, None) is not None or was_undecodable
            previous = store.objects.get(key)
            store.objects[key] = obj
            return was_undecodable or previous is None or previous != obj

    def mark_undecodable(self, resource: Resource, key: str, problem: str) -> bool:
        """An object event lbhc cannot read: whatever it held before is no longer current,
        so it is dropped and the store has a gap until the object is readable or gone."""
        with self._lock:
            store = self._stores[resource]
            dropped = store.objects.pop(key, None) is not None
            changed = store.undecodable.get(key) != problem
            store.undecodable[key] = problem
            return dropped or changed

    def forget(self, resource: Resource, key: str) -> bool:
        """The deletion of an object that could not be decoded."""
        with self._lock:
            store = self._stores[resource]
            gone = store.objects.pop(key, None) is not None
            return store.undecodable.pop(key, None) is not None or gone

    def mark_problem(self, resource: Resource, problem: str) -> None:
        with self._lock:
            self._stores[resource].problem = problem

    def mark_connected(self, resource: Resource) -> None:
        with self._lock:
            store = self._stores[resource]
            if store.synced:
                store.problem = ""

    def has_problem(self, resource: Resource) -> bool:
        with self._lock:
            return bool(self._stores[resource].problem)

    def synced(self) -> bool:
        """The planner's stores only: DaemonSets are optional (their RBAC may be absent)."""
        with self._lock:
            return all(s.synced for r, s in self._stores.items() if r in PLANNING_RESOURCES)

    def sizes(self) -> dict[str, int]:
        with self._lock:
            return {resource.value: len(s.objects) for resource, s in self._stores.items()}

    def gaps(self) -> tuple[str, ...]:
        """Why the planner's view is incomplete right now (empty when it is whole)."""
        with self._lock:
            return self._gaps()

    def _gaps(self) -> tuple[str, ...]:
        return tuple(
            f"{resource} {store.problem or 'not synced yet'}"
            for resource, store in self._stores.items()
            if (not store.synced or store.problem) and resource in PLANNING_RESOURCES
        ) + tuple(
            undecodable_gap(resource, [Undecodable(k, why) for k, why in store.undecodable.items()])
            for resource, store in self._stores.items()
            if store.undecodable and resource in PLANNING_RESOURCES
        )

    def any_node(self, predicate: Callable[[Node], bool]) -> bool:
        """Whether some cached node satisfies `predicate` (without a whole snapshot)."""
        with self._lock:
            nodes = tuple(self._stores[Resource.NODES].objects.values())
        return any(predicate(node) for node in nodes)  # type: ignore[arg-type]

    def snapshot(self) -> ClusterSnapshot:
        with self._lock:
            gaps = self._gaps()
            fresh = {
                r: s.synced and not s.problem and not s.undecodable for r, s in self._stores.items()
            }
            return ClusterSnapshot(
                nodes=tuple(self._stores[Resource.NODES].objects.values()),  # type: ignore[arg-type]
                services=tuple(self._stores[Resource.SERVICES].objects.values()),  # type: ignore[arg-type]
                kube_proxy_pods=tuple(self._stores[Resource.KUBE_PROXY_PODS].objects.values()),  # type: ignore[arg-type]
                kube_system_uid=self._kube_system_uid,
                gaps=gaps,
                versions_complete=fresh[Resource.NODES] and fresh[Resource.KUBE_PROXY_PODS],
                kube_proxy_daemonsets=tuple(self._objects(Resource.KUBE_PROXY_DAEMONSETS)),  # type: ignore[arg-type]
                observed_at=time.time(),
            )

    def _objects(self, resource: Resource) -> Iterable[Obj]:
        store = self._stores.get(resource)
        return store.objects.values() if store is not None else ()
