"""Create, update, patch and delete with the API's conventions, under the store's lock.

- create: 409 AlreadyExists; generateName; server-set uid, creationTimestamp,
  resourceVersion (and generation 1 for DaemonSets); status reset where the API resets it.
- update: a non-empty metadata.resourceVersion is a precondition (409 Conflict when stale);
  without one the update is unconditional. Server fields are kept from the stored object;
  with a status subresource, the main resource keeps the stored status and `/status` changes
  only the status. A no-op write changes nothing and sends no watch event, as with etcd.
- delete: with finalizers, sets deletionTimestamp (grace 0) and keeps the object; the update
  that removes the last finalizer then deletes it. Without, deletes at once. Pods are not
  graceful and Namespaces do not cascade: there is no kubelet or namespace controller.
- Services: create and update allocate, keep or clear spec.healthCheckNodePort as the
  apiserver's Service storage does (service_ports).
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Iterator
from typing import Any

from . import service_ports
from .patch import apply_patch
from .resources import Resource
from .status import ApiError, FieldError, already_exists, conflict, invalid, not_found
from .store import Object, Store, storage_key
from .validation import decode_object, validate

_INITIAL_STATUS: dict[str, Object] = {
    "Pod": {"phase": "Pending"},
    "Service": {"loadBalancer": {}},
    "DaemonSet": {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
}
_SERVER_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apiserver's: no vowels, no look-alikes


class Writer:
    def __init__(self, store: Store) -> None:
        self._store = store

    def create(self, resource: Resource, obj: Object, dry_run: bool = False) -> Object:
        """`obj` is decoded (apiVersion, kind, namespace set); it is consumed."""
        metadata = obj["metadata"]
        namespace = metadata.get("namespace") or ""
        with self._store.lock:
            if not metadata.get("name") and metadata.get("generateName"):
                metadata["name"] = self._generate_name(resource, namespace, metadata)
            validate(resource, obj)
            key = storage_key(resource, namespace, metadata["name"])
            if self._store.current(resource.kind, key) is not None:
                raise already_exists(resource.plural, metadata["name"], resource.group)
            if resource.kind == "Service":
                service_ports.admit(obj, None, self._others(resource, key))
            for field in (*_SERVER_FIELDS, "resourceVersion", "generation"):
                metadata.pop(field, None)
            metadata["uid"] = str(uuid.uuid4())
            metadata["creationTimestamp"] = self._store.now()
            if resource.kind == "DaemonSet":
                metadata["generation"] = 1
            if resource.clear_status_on_create:
                obj["status"] = copy.deepcopy(_INITIAL_STATUS.get(resource.kind, {}))
            if not dry_run:
                self._store.commit(resource.kind, key, obj)
            return copy.deepcopy(obj)

    def update(
        self,
        resource: Resource,
        obj: Object,
        name: str,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> tuple[Object, bool]:
        """PUT: (the object, whether it was created)."""
        metadata = obj["metadata"]
        if metadata.get("name") and metadata["name"] != name:
            raise ApiError(
                400,
                f"the name of the object ({metadata['name']}) does not match the name on the "
                f"URL ({name})",
            )
        namespace = metadata.get("namespace") or ""
        with self._store.lock:
            current = self._store.current(resource.kind, storage_key(resource, namespace, name))
            if current is None:
                if resource.create_on_update and subresource is None:
                    metadata["name"] = name
                    return self.create(resource, obj, dry_run), True
                raise not_found(resource.plural, name, resource.group)
            self._preconditions(resource, name, current, metadata)
            return self._replace(resource, current, obj, subresource, dry_run), False

    def patch(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        with self._store.lock:
            current = self._store.current(resource.kind, storage_key(resource, namespace, name))
            if current is None:
                raise not_found(resource.plural, name, resource.group)
            # A copy: the patch functions share untouched subtrees with their input.
            patched = apply_patch(resource.kind, copy.deepcopy(current), content_type, body)
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise ApiError(422, "the patched object is not an object with metadata")
            identity = (current["apiVersion"], current["kind"], name, namespace)
            meta = patched["metadata"]
            if (
                patched.get("apiVersion"),
                patched.get("kind"),
                meta.get("name"),
                meta.get("namespace", ""),
            ) != identity:
                raise ApiError(400, "a patch cannot change apiVersion, kind, name or namespace")
            decode_object(resource, patched, namespace or None)
            # A resourceVersion in the patch is a precondition; otherwise there is none.
            self._preconditions(resource, name, current, _patch_metadata(body))
            return self._replace(resource, current, patched, subresource, dry_run)

    def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        options: Object,
        dry_run: bool = False,
    ) -> Object:
        key = storage_key(resource, namespace, name)
        with self._store.lock:
            current = self._store.current(resource.kind, key)
            if current is None:
                raise not_found(resource.plural, name, resource.group)
            self._preconditions(resource, name, current, options.get("preconditions") or {})
            metadata = current["metadata"]
            if metadata.get("finalizers"):
                if metadata.get("deletionTimestamp"):
                    return copy.deepcopy(current)  # already terminating: nothing changes
                marked = copy.deepcopy(current)
                marked["metadata"]["deletionTimestamp"] = self._store.now()
                marked["metadata"]["deletionGracePeriodSeconds"] = 0
                if not dry_run:
                    self._store.commit(resource.kind, key, marked)
                return copy.deepcopy(marked)
            gone = copy.deepcopy(current)
            if not dry_run:
                self._store.commit(resource.kind, key, None)
                gone["metadata"]["resourceVersion"] = str(self._store.resource_version)
            return gone

    # -- shared -------------------------------------------------------------------------------

    def _replace(
        self,
        resource: Resource,
        current: Object,
        new: Object,
        subresource: str | None,
        dry_run: bool,
    ) -> Object:
        if subresource == "status":  # only the status changes
            status = new.get("status")
            new = copy.deepcopy(current)
            new["status"] = status
        else:
            for field in _SERVER_FIELDS:
                if field in current["metadata"]:
                    new["metadata"][field] = current["metadata"][field]
                else:
                    new["metadata"].pop(field, None)
            if resource.status_subresource:
                if "status" in current:
                    new["status"] = copy.deepcopy(current["status"])
                else:
                    new.pop("status", None)
            if resource.kind == "DaemonSet":
                bump = new.get("spec") != current.get("spec")
                generation = current["metadata"].get("generation", 1)
                new["metadata"]["generation"] = generation + 1 if bump else generation
        validate(resource, new)
        if resource.kind == "Service" and subresource != "status":
            key = storage_key(resource, current["metadata"].get("namespace") or "", new_name(new))
            service_ports.admit(new, current, self._others(resource, key))
        old_finalizers = current["metadata"].get("finalizers") or []
        new_finalizers = new["metadata"].get("finalizers") or []
        terminating = bool(current["metadata"].get("deletionTimestamp"))
        if terminating and not set(new_finalizers) <= set(old_finalizers):
            raise invalid(
                resource.kind,
                resource.group,
                current["metadata"]["name"],
                [
                    FieldError(
                        "Forbidden",
                        "metadata.finalizers",
                        "no new finalizers can be added if the object is being deleted",
                    )
                ],
            )
        new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        if new == current:
            return copy.deepcopy(current)  # a no-op: no new resourceVersion, no event
        key = storage_key(resource, current["metadata"].get("namespace") or "", new_name(new))
        if not dry_run:
            if terminating and not new_finalizers:
                self._store.commit(resource.kind, key, None)  # the last finalizer is gone
                new["metadata"]["resourceVersion"] = str(self._store.resource_version)
            else:
                self._store.commit(resource.kind, key, new)
        return copy.deepcopy(new)

    def _others(self, resource: Resource, key: str) -> Iterator[Object]:
        """Every stored object of `resource` but the one at `key`, read only if asked for."""
        yield from (obj for k, obj in self._store.read(resource.kind) if k != key)

    def _preconditions(
        self, resource: Resource, name: str, current: Object, wanted: Object
    ) -> None:
        metadata = current["metadata"]
        uid, rv = wanted.get("uid"), wanted.get("resourceVersion")
        if uid and uid != metadata.get("uid"):
            detail = f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            raise conflict(resource.plural, name, resource.group, detail + metadata.get("uid", ""))
        if rv and rv != metadata.get("resourceVersion"):
            raise conflict(resource.plural, name, resource.group)

    def _generate_name(self, resource: Resource, namespace: str, metadata: Object) -> str:
        for _ in range(8):
            suffix = "".join(random.choices(_GENERATE_ALPHABET, k=5))
            name = f"{metadata['generateName']}{suffix}"
            if self._store.current(resource.kind, storage_key(resource, namespace, name)) is None:
                return name
        raise already_exists(resource.plural, name, resource.group)


def new_name(obj: Object) -> str:
    return str(obj["metadata"]["name"])


def _patch_metadata(body: Any) -> Object:
    metadata = body.get("metadata") if isinstance(body, dict) else None
    return metadata if isinstance(metadata, dict) else {}
