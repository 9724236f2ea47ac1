"""Zonal unmanaged instance groups: get, list, insert, delete, aggregatedList and
listInstances (addInstances and removeInstances are in instance_group_members). A group's
members are not a field of the resource (InstanceGroup has only `size`); the store keeps them
by the group's id and listInstances pages through them.

What the discovery document says and the fake does: a group "must not belong to a backend
service" to be deleted (400 resourceInUseByAnotherResource naming the backend service, the
error a pool used by a rule gets); listInstances does not support orderBy and supports filter
"only for expressions that use `eq` (equal) or `ne` (not equal) operators", so either of the
others is 400 invalid; `instanceState` RUNNING lists only the members whose instance is
RUNNING.

Choices where the real API is not documented precisely:
- `network` (output only in the discovery document, though Terraform's instance group sets it
  on insert) is accepted on insert and must name an existing network; a group made without one
  takes the network of the first instance added to it.
- The fingerprint of a group without named ports is "42WmSpB8rSM=", the hash of an empty set
  the real API shows for empty fingerprinted fields (the forwarding rules' labelFingerprint).
- listInstances lists members in the order of their URLs; a member that was seeded without
  an instance (ComputeFake.add_instance_group takes bare URLs, as target pools do) is RUNNING.
  The answer has `kind`, `items` and `nextPageToken`, nothing else.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import listing, urls
from ..errors import invalid_value
from ..store import Store
from ..validation import check_known_fields, check_name, opt_int, opt_str
from . import aggregated, common, networks, target_pools
from .common import Kind, Request, Response

KIND = Kind(
    collection="instanceGroups",
    kind="compute#instanceGroup",
    label="instance_group",
    fields=frozenset(
        {
            "creationTimestamp",
            "description",
            "fingerprint",
            "id",
            "kind",
            "name",
            "namedPorts",
            "network",
            "selfLink",
            "size",
            "zone",
        }
    ),
)
AGGREGATED_KIND = "compute#instanceGroupAggregatedList"
LIST_INSTANCES_KIND = "compute#instanceGroupsListInstances"
EMPTY_FINGERPRINT = "42WmSpB8rSM="
_STATES = frozenset({"ALL", "RUNNING"})


def _named_ports(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_value("resource.namedPorts", value, "Expected a list.")
    ports: list[dict[str, Any]] = []
    for i, entry in enumerate(value):
        where = f"resource.namedPorts[{i}]"
        if not isinstance(entry, dict):
            raise invalid_value(where, entry, "Expected an object.")
        check_known_fields(entry, ("name", "port"), where)
        name = check_name(entry.get("name"), f"{where}.name")
        port = opt_int(entry, "port", f"{where}.port", 1, 65535)
        ports.append({"name": name, "port": port} if port is not None else {"name": name})
    return ports


def build(store: Store, project: str, body: dict[str, Any]) -> dict[str, Any]:
    check_known_fields(body, KIND.fields, "resource")
    out: dict[str, Any] = {"size": 0}
    description = opt_str(body, "description", "resource.description")
    if description:
        out["description"] = description
    ports = _named_ports(body.get("namedPorts"))
    if ports:
        out["namedPorts"] = ports
    out["fingerprint"] = store.ids.fingerprint() if ports else EMPTY_FINGERPRINT
    network = opt_str(body, "network", "resource.network")
    if network:
        out["network"] = networks.resolve(store, project, network, "resource.network")
    return out


def members(store: Store, group: dict[str, Any]) -> list[dict[str, Any]]:
    """The live member list of a group ({"instance": URL} each), created on demand."""
    return store.members.setdefault(str(group["id"]), [])


def set_size(store: Store, group: dict[str, Any]) -> None:
    group["size"] = len(members(store, group))


def instance_ref(project: str, zone: str, ref: str, field: str) -> str:
    """The canonical URL of a zonal instance reference (full or partial URL) in `zone`."""
    url = target_pools.resolve_instance(project, ref, field)
    if not url.startswith(urls.zone_url(project, zone) + "/"):
        raise invalid_value(field, ref, "Instance must be in the same zone as the group.")
    return url


def instance_of(store: Store, url: str) -> dict[str, Any] | None:
    """The seeded instance a canonical instance URL names, if any."""
    parsed = urls.parse_ref(url, "")
    if parsed is None:
        return None
    return store.get("instances", parsed.project, parsed.scope, parsed.name)


def seed(
    store: Store,
    project: str,
    zone: str,
    name: str,
    instances: list[str],
    fields: dict[str, Any],
) -> dict[str, Any]:
    """A group as a controller would have made and filled it: instance URLs must be in the
    group's zone but are not looked up (as a target pool's are not)."""
    scope = urls.zone_scope(zone)
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"instance group {project}/{zone}/{name} already exists")
    group = common.new_resource(store, KIND, project, scope, name, build(store, project, fields))
    listed = members(store, group)
    for i, ref in enumerate(instances):
        url = instance_ref(project, zone, ref, f"instances[{i}]")
        if {"instance": url} not in listed:
            listed.append({"instance": url})
    first = instance_of(store, listed[0]["instance"]) if listed else None
    if "network" not in group and first is not None:
        group["network"] = first["networkInterfaces"][0]["network"]
    set_size(store, group)
    store.bucket(KIND.collection, project, scope)[name] = group
    return group


def backend_user(store: Store, project: str, group_url: str) -> str | None:
    """Path of the first regional backend service (any region) with the group (an instance
    group or a NEG) as a backend."""

    def refers(service: dict[str, Any]) -> bool:
        return any(b.get("group") == group_url for b in service.get("backends", []))

    return common.first_user(store, project, "backendServices", refers)


def _name(req: Request) -> str:
    return req.params["instanceGroup"]


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, _name(req))


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    name = check_name(req.json.get("name"))
    return common.insert(req, KIND, name, build(req.store, req.project, req.json))


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, _name(req), backend_user)


def handle_aggregated_list(req: Request) -> Response:
    reported = aggregated.scopes(req, zones=True)
    return aggregated.handle(req, KIND.collection, AGGREGATED_KIND, reported)


def check_member_listing(query: dict[str, str]) -> listing.ListParams:
    """listing.parse, less what listInstances does not support."""
    if query.get("orderBy"):
        raise invalid_value("orderBy", query["orderBy"], "The orderBy parameter is not supported.")
    expression = query.get("filter", "")
    if "=" in expression:  # "=" or "!=" (a value holding "=" is refused too: none is expected)
        why = "Only the eq and ne operators are supported."
        raise invalid_value("filter", expression, why)
    return listing.parse(query)


def handle_list_instances(req: Request) -> Response:
    store = req.store
    group = common.require(store, KIND, req.project, req.scope, _name(req))
    check_known_fields(req.json, ("instanceState",), "resource")
    state = opt_str(req.json, "instanceState", "resource.instanceState") or "ALL"
    if state not in _STATES:
        raise invalid_value("resource.instanceState", state, "Must be ALL or RUNNING.")
    params = check_member_listing(req.query)
    items: list[dict[str, Any]] = []
    for member in members(store, group):
        vm = instance_of(store, member["instance"])
        status = str(vm.get("status", "RUNNING")) if vm is not None else "RUNNING"
        if state == "RUNNING" and status != "RUNNING":
            continue
        item: dict[str, Any] = {"instance": member["instance"], "status": status}
        if group.get("namedPorts"):
            item["namedPorts"] = copy.deepcopy(group["namedPorts"])
        items.append(item)
    return common.member_page(
        LIST_INSTANCES_KIND, items, params, lambda item: (str(item["instance"]),)
    )
