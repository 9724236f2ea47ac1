"""Shared handler plumbing: the request object, resource kinds and the generic CRUD verbs.

Validation happens synchronously at request time (the real API's 4xx answers); the effect of a
mutation is a closure run when its operation reaches DONE, which re-validates against the state
of that moment and turns a failure into an operation error.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import listing, operations, urls
from ..errors import already_exists, in_use, invalid_value, not_found
from ..store import Store

Response = tuple[int, dict[str, Any]]
Effect = Callable[[], None]
# used_by(store, project, url): the path of a resource that refers to the one at `url`, if any
# (what makes deleting it 400 resourceInUseByAnotherResource).
UsedBy = Callable[[Store, str, str], str | None]

# Output-only fields: the real API accepts them in request bodies and ignores them.
OUTPUT_ONLY = frozenset({"kind", "id", "creationTimestamp", "selfLink", "selfLinkWithId"})


@dataclass
class Request:
    store: Store
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    body: dict[str, Any] | None

    @property
    def project(self) -> str:
        return self.params["project"]

    @property
    def region(self) -> str | None:
        return self.params.get("region")

    @property
    def zone(self) -> str | None:
        return self.params.get("zone")

    @property
    def scope(self) -> str:
        if self.zone is not None:
            return urls.zone_scope(self.zone)
        return urls.scope_of(self.region)

    @property
    def json(self) -> dict[str, Any]:
        return self.body if self.body is not None else {}


@dataclass(frozen=True)
class Kind:
    collection: str  # URL collection, e.g. "httpHealthChecks"
    kind: str  # e.g. "compute#httpHealthCheck"
    label: str  # snake-case name used in "is already being used by" messages
    fields: frozenset[str]  # body fields accepted (the discovery schema's properties)

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


def require(store: Store, kind: Kind, project: str, scope: str, name: str) -> dict[str, Any]:
    found = store.get(kind.collection, project, scope, name)
    if found is None:
        raise not_found(urls.resource_path(project, scope, kind.collection, name))
    return found


def get(req: Request, kind: Kind, name: str) -> Response:
    return 200, copy.deepcopy(require(req.store, kind, req.project, req.scope, name))


def list_collection(req: Request, kind: Kind) -> Response:
    params = listing.parse(req.query)
    items = req.store.items(kind.collection, req.project, req.scope)
    page, token = listing.paginate(items, params)
    body: dict[str, Any] = {
        "kind": kind.list_kind,
        "id": f"projects/{req.project}/{req.scope}/{kind.collection}",
        "selfLink": urls.collection_url(req.project, req.scope, kind.collection),
    }
    if page:
        body["items"] = copy.deepcopy(page)
    if token:
        body["nextPageToken"] = token
    return 200, body


def member_page(
    kind: str,
    items: list[dict[str, Any]],
    params: listing.ListParams,
    key: Callable[[dict[str, Any]], listing.SortKey],
) -> Response:
    """A page of a group's members (listInstances, listNetworkEndpoints): `kind`, `items` and
    `nextPageToken`, nothing else."""
    page, token = listing.paginate(items, params, key=key)
    body: dict[str, Any] = {"kind": kind}
    if page:
        body["items"] = page
    if token:
        body["nextPageToken"] = token
    return 200, body


def merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7396 JSON merge patch, what the real API's patch methods apply ("uses the JSON merge
    patch format and processing rules", the discovery document): objects merge key by key, a
    null removes the key, anything else (lists included) replaces it."""
    merged = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict):
            base = merged.get(key)
            merged[key] = merge_patch(base if isinstance(base, dict) else {}, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def check_body_name(req: Request, name: str) -> None:
    """PUT/PATCH bodies may repeat the name but cannot rename the resource."""
    given = req.json.get("name")
    if given is not None and given != name:
        raise invalid_value("resource.name", given, "Resource name cannot be changed.")


def new_resource(
    store: Store, kind: Kind, project: str, scope: str, name: str, fields: dict[str, Any]
) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "kind": kind.kind,
        "id": store.ids.new_id(),
        "creationTimestamp": store.times.rfc3339(),
        "name": name,
    }
    if scope.startswith("regions/"):
        region = scope.split("/", 1)[1]
        store.regions.add(region)  # the aggregated list reports every region in use
        resource["region"] = urls.region_url(project, region)
    elif scope.startswith("zones/"):
        zone = scope.split("/", 1)[1]
        store.zones.add(zone)  # the aggregated list reports every zone in use
        resource["zone"] = urls.zone_url(project, zone)
    resource.update(fields)
    resource["selfLink"] = urls.resource_url(project, scope, kind.collection, name)
    return resource


def insert(req: Request, kind: Kind, name: str, fields: dict[str, Any]) -> Response:
    store, project, scope = req.store, req.project, req.scope
    if store.taken(kind.collection, project, scope, name):
        raise already_exists(urls.resource_path(project, scope, kind.collection, name))
    resource = new_resource(store, kind, project, scope, name, fields)
    reservation = (kind.collection, project, scope, name)
    store.reserved.add(reservation)

    def apply() -> None:
        store.reserved.discard(reservation)
        store.bucket(kind.collection, project, scope)[name] = resource

    def release() -> None:
        store.reserved.discard(reservation)

    return submit(req, "insert", resource["selfLink"], resource["id"], apply, release)


def replace(
    req: Request,
    kind: Kind,
    name: str,
    operation_type: str,
    rebuild: Callable[[dict[str, Any]], dict[str, Any]],
) -> Response:
    """update/patch: `rebuild(current)` returns the new user fields (raises on invalid input)."""
    store, project, scope = req.store, req.project, req.scope
    check_body_name(req, name)
    current = require(store, kind, project, scope, name)
    rebuild(current)  # validate now: bad input is a synchronous 400

    def apply() -> None:
        live = require(store, kind, project, scope, name)
        server_fields = ("kind", "id", "creationTimestamp", "name", "region")
        kept: dict[str, Any] = {k: live[k] for k in server_fields if k in live}
        updated = {**kept, **rebuild(live), "selfLink": live["selfLink"]}
        store.bucket(kind.collection, project, scope)[name] = updated

    return submit(req, operation_type, current["selfLink"], current["id"], apply)


def first_user(
    store: Store, project: str, collection: str, refers: Callable[[dict[str, Any]], bool]
) -> str | None:
    """Path of the first resource of `collection` in the project, any scope, for which
    `refers(resource)` holds: by scope, then name, as a list would show them."""
    users = sorted(
        (scope, str(resource["name"]))
        for scope, resource in store.scoped(collection, project)
        if refers(resource)
    )
    return urls.resource_path(project, users[0][0], collection, users[0][1]) if users else None


def delete(req: Request, kind: Kind, name: str, used_by: UsedBy | None = None) -> Response:
    """Delete, refused 400 resourceInUseByAnotherResource while `used_by` names a user: at
    once, or when the operation lands if the store's in_use_delete_mode is "operation"."""
    store, project, scope = req.store, req.project, req.scope
    current = require(store, kind, project, scope, name)
    path = urls.resource_path(project, scope, kind.collection, name)

    def check_unused() -> None:
        user = used_by(store, project, urls.CANONICAL_BASE + path) if used_by else None
        if user is not None:
            raise in_use(kind.label, path, user)

    if store.in_use_delete_mode == "http":
        check_unused()

    def apply() -> None:
        require(store, kind, project, scope, name)
        check_unused()
        del store.bucket(kind.collection, project, scope)[name]

    return submit(req, "delete", current["selfLink"], current["id"], apply)


def submit(
    req: Request,
    operation_type: str,
    target_link: str,
    target_id: str,
    apply: Effect | None,
    release: Effect | None = None,
) -> Response:
    """Create the operation, remember its requestId, and complete it at once if due."""
    store = req.store
    op = operations.create(
        store,
        project=req.project,
        scope=req.scope,
        operation_type=operation_type,
        target_link=target_link,
        target_id=target_id,
        apply=apply,
        release=release,
    )
    request_id = req.query.get("requestId")
    if request_id:
        store.request_ids[(req.project, request_id)] = op
    operations.advance(store)
    return 200, operations.render(store, op)
