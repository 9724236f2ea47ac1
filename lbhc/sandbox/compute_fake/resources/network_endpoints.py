"""The endpoints of a GCE_VM_IP network endpoint group: listNetworkEndpoints (paged) and
attachNetworkEndpoints / detachNetworkEndpoints, zonal operations whose effect lands at DONE,
checked again then.

An endpoint is a VM: `instance` (its name, or a URL in the NEG's zone, stored as the name, as
the real API lists it) and `ipAddress`, its primary internal IP, which the API fills in when
left out and which must be that IP when given; `port` "can not be set for network endpoints of
type GCE_VM_IP" (NetworkEndpoint in the discovery document). The instance must exist (the
discovery document: "a valid URL pointing to an existing instance": 404 notFound otherwise)
and be on the NEG's network (400 invalid otherwise).

Choices where the real API is not documented precisely:
- Attaching an endpoint that is attached already is accepted and ends DONE, the NEG unchanged
  (as the fake's targetPools.addInstance of a member does).
- Detaching an endpoint that is not attached is 400 invalid on
  `resource.networkEndpoints[i]`, the request refused whole (as the fake's
  targetPools.removeInstance of a non-member, whose real answer is known); an endpoint seeded
  for an instance that was never seeded can still be detached.
- listNetworkEndpoints lists endpoints by instance name then IP; it refuses orderBy, and
  healthStatus SHOW (the fake does not model per-endpoint health there: read it with
  regionBackendServices.getHealth), each 400 invalid saying so.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from .. import listing, urls
from ..errors import invalid_value, not_found, required
from ..store import Store
from ..validation import check_known_fields, check_name, opt_str, required_list
from . import common
from .common import Request, Response
from .network_endpoint_groups import KIND, MODELLED_TYPE, build, endpoints, require, set_size

LIST_KIND = "compute#networkEndpointGroupsListNetworkEndpoints"
# NetworkEndpoint's properties; the fake models instance and ipAddress.
ENDPOINT_FIELDS = frozenset(
    {"annotations", "clientDestinationPort", "fqdn", "instance", "ipAddress", "ipv6Address", "port"}
)
_NOT_MODELLED = ("annotations", "clientDestinationPort", "fqdn", "ipv6Address")
_NOT_ATTACHED = "Network endpoint is not attached to the network endpoint group."


def _instance_name(project: str, zone: str, ref: str, field: str) -> str:
    if "/" not in ref:
        return check_name(ref, field)
    parsed = urls.parse_ref(ref, project)
    if parsed is None or parsed.collection != "instances" or not parsed.scope.startswith("zones/"):
        raise invalid_value(field, ref, "Must be an instance name or a zonal instance URL.")
    if parsed.scope != urls.zone_scope(zone) or parsed.project != project:
        raise invalid_value(field, ref, "Instance must be in the zone of the group.")
    return parsed.name


def _zone(group: dict[str, Any]) -> str:
    return str(group["zone"]).rsplit("/", 1)[1]


def _instance(store: Store, project: str, group: dict[str, Any], name: str) -> dict[str, Any]:
    """The seeded instance `name` in the group's zone; 404 naming it if there is none."""
    scope = urls.zone_scope(_zone(group))
    vm = store.get("instances", project, scope, name)
    if vm is None:
        raise not_found(urls.resource_path(project, scope, "instances", name))
    return vm


def parse(
    store: Store,
    project: str,
    group: dict[str, Any],
    entry: Any,
    where: str,
    *,
    lookup: bool = True,
) -> dict[str, str]:
    """{"instance": name, "ipAddress": ip} of one NetworkEndpoint; with `lookup` the instance
    must exist on the group's network and the IP is its primary one (filled in if absent)."""
    if not isinstance(entry, dict):
        raise invalid_value(where, entry, "Expected an object.")
    check_known_fields(entry, ENDPOINT_FIELDS, where)
    if entry.get("port") is not None:
        why = "Port cannot be set for network endpoints of type GCE_VM_IP."
        raise invalid_value(f"{where}.port", entry["port"], why)
    for key in _NOT_MODELLED:
        if entry.get(key) is not None:
            why = "The compute fake does not model this field of GCE_VM_IP endpoints."
            raise invalid_value(f"{where}.{key}", entry[key], why)
    ref = entry.get("instance")
    if not isinstance(ref, str) or not ref:
        raise required(f"{where}.instance")
    name = _instance_name(project, _zone(group), ref, f"{where}.instance")
    ip = opt_str(entry, "ipAddress", f"{where}.ipAddress")
    if ip:
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise invalid_value(f"{where}.ipAddress", ip, "Must be an IPv4 address.") from None
    if not lookup:
        return {"instance": name, "ipAddress": ip} if ip else {"instance": name}
    nic = _instance(store, project, group, name)["networkInterfaces"][0]
    if nic["network"] != group["network"]:
        why = "Instance is not in the network of the network endpoint group."
        raise invalid_value(f"{where}.instance", ref, why)
    if ip and ip != nic["networkIP"]:
        why = "Must be the primary internal IP address of the instance."
        raise invalid_value(f"{where}.ipAddress", ip, why)
    return {"instance": name, "ipAddress": str(nic["networkIP"])}


def _matches(attached: dict[str, Any], wanted: dict[str, str]) -> bool:
    return attached["instance"] == wanted["instance"] and wanted.get("ipAddress") in (
        None,
        attached["ipAddress"],
    )


def handle_attach_network_endpoints(req: Request) -> Response:
    store, group = req.store, require(req)
    entries = required_list(req.json, "networkEndpoints")
    wanted = [parse(store, req.project, group, entry, where) for where, entry in entries]

    def apply() -> None:
        live = require(req)
        listed = endpoints(store, live)
        for endpoint in wanted:
            if endpoint not in listed:  # attached already: unchanged
                listed.append(dict(endpoint))
        set_size(store, live)

    return common.submit(req, "attachNetworkEndpoints", group["selfLink"], group["id"], apply)


def _check_attached(
    store: Store, project: str, group: dict[str, Any], wanted: list[dict[str, str]]
) -> None:
    """Every endpoint is attached; else 404 for an instance that does not exist, 400 invalid
    for one that does."""
    listed = endpoints(store, group)
    for i, endpoint in enumerate(wanted):
        if not any(_matches(attached, endpoint) for attached in listed):
            _instance(store, project, group, endpoint["instance"])  # 404 if it does not exist
            raise invalid_value(f"resource.networkEndpoints[{i}]", endpoint, _NOT_ATTACHED)


def handle_detach_network_endpoints(req: Request) -> Response:
    store, group = req.store, require(req)
    entries = required_list(req.json, "networkEndpoints")
    wanted = [
        parse(store, req.project, group, entry, where, lookup=False) for where, entry in entries
    ]
    _check_attached(store, req.project, group, wanted)

    def apply() -> None:
        live = require(req)
        _check_attached(store, req.project, live, wanted)
        kept = [e for e in endpoints(store, live) if not any(_matches(e, w) for w in wanted)]
        store.members[str(live["id"])] = kept
        set_size(store, live)

    return common.submit(req, "detachNetworkEndpoints", group["selfLink"], group["id"], apply)


def handle_list_network_endpoints(req: Request) -> Response:
    group = require(req)
    check_known_fields(req.json, ("healthStatus",), "resource")
    shown = opt_str(req.json, "healthStatus", "resource.healthStatus") or "SKIP"
    if shown not in ("SHOW", "SKIP"):
        raise invalid_value("resource.healthStatus", shown, "Must be SHOW or SKIP.")
    if shown == "SHOW":
        why = "The compute fake does not model endpoint health here; use getHealth."
        raise invalid_value("resource.healthStatus", shown, why)
    if req.query.get("orderBy"):
        why = "The compute fake does not support orderBy for network endpoints."
        raise invalid_value("orderBy", req.query["orderBy"], why)
    params = listing.parse(req.query)
    items = [{"networkEndpoint": dict(e)} for e in endpoints(req.store, group)]

    def key(item: dict[str, Any]) -> tuple[str, ...]:
        endpoint = item["networkEndpoint"]
        return (str(endpoint["instance"]), str(endpoint["ipAddress"]))

    return common.member_page(LIST_KIND, items, params, key)


def seed(
    store: Store,
    project: str,
    zone: str,
    name: str,
    entries: list[dict[str, str]],
    fields: dict[str, Any],
) -> dict[str, Any]:
    """A GCE_VM_IP NEG holding `entries` (NetworkEndpoint dicts: instance, and ipAddress unless
    the instance was seeded, whose primary IP it must then be)."""
    scope = urls.zone_scope(zone)
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"network endpoint group {project}/{zone}/{name} already exists")
    body = {"networkEndpointType": MODELLED_TYPE, "network": "default", **fields}
    built = build(store, project, zone, body, seeding=True)
    group = common.new_resource(store, KIND, project, scope, name, built)
    listed = endpoints(store, group)
    for i, entry in enumerate(entries):
        where = f"endpoints[{i}]"
        ref = entry.get("instance")
        vm_name = _instance_name(project, zone, ref, where) if isinstance(ref, str) else ""
        seeded = store.get("instances", project, scope, vm_name)
        endpoint = parse(store, project, group, entry, where, lookup=seeded is not None)
        if "ipAddress" not in endpoint:
            raise ValueError(f"{where}: an instance that was not seeded needs its ipAddress")
        if endpoint not in listed:
            listed.append(endpoint)
    set_size(store, group)
    store.bucket(KIND.collection, project, scope)[name] = group
    return group
