"""Zonal network endpoint groups of type GCE_VM_IP, the NEGs GKE's internal passthrough load
balancers use as backends: get, list, insert, delete and aggregatedList (the endpoints and
their verbs are in network_endpoints). Endpoints are not a field of the resource (only `size`
is); the store keeps them by the group's id.

What the discovery document says and the fake does: for GCE_VM_IP `network` is required and
`defaultPort` "must not be specified"; a NEG "cannot be deleted if there are backend services
referencing it" (400 resourceInUseByAnotherResource naming the backend service).

Choices where the real API is not documented precisely:
- Only GCE_VM_IP is modelled: another networkEndpointType, or none (the real API defaults to
  GCE_VM_IP_PORT), is 400 invalid saying so, rather than a NEG that behaves unlike GCE's.
- `subnetwork` is checked to be a subnetwork URL in the NEG's region but not looked up (the
  fake has no subnetworks).
"""

from __future__ import annotations

from typing import Any

from .. import urls
from ..errors import invalid_value, required
from ..store import Store, zone_region
from ..validation import check_known_fields, check_name, opt_str
from . import aggregated, common, instance_groups, networks
from .common import Kind, Request, Response

KIND = Kind(
    collection="networkEndpointGroups",
    kind="compute#networkEndpointGroup",
    label="network_endpoint_group",
    fields=frozenset(
        {
            "creationTimestamp",
            "defaultPort",
            "description",
            "id",
            "kind",
            "name",
            "network",
            "networkEndpointType",
            "selfLink",
            "size",
            "subnetwork",
            "zone",
        }
    ),
)
AGGREGATED_KIND = "compute#networkEndpointGroupAggregatedList"
MODELLED_TYPE = "GCE_VM_IP"


def build(
    store: Store, project: str, zone: str, body: dict[str, Any], *, seeding: bool = False
) -> dict[str, Any]:
    """The validated fields of a new NEG; `seeding` lets the network be one not seeded."""
    check_known_fields(body, KIND.fields, "resource")
    kind = opt_str(body, "networkEndpointType", "resource.networkEndpointType") or "GCE_VM_IP_PORT"
    if kind != MODELLED_TYPE:
        why = f"The compute fake models only {MODELLED_TYPE} network endpoint groups."
        raise invalid_value("resource.networkEndpointType", kind, why)
    if body.get("defaultPort") is not None:
        why = f"Default port must not be specified for {MODELLED_TYPE} network endpoint groups."
        raise invalid_value("resource.defaultPort", body["defaultPort"], why)
    out: dict[str, Any] = {"networkEndpointType": kind, "size": 0}
    description = opt_str(body, "description", "resource.description")
    if description:
        out["description"] = description
    network = opt_str(body, "network", "resource.network")
    if not network:
        raise required("resource.network")
    if seeding:
        parsed = urls.parse_ref(
            network if "/" in network else f"global/networks/{network}", project
        )
        if parsed is None or parsed.collection != "networks":
            raise ValueError(f"not a network reference: {network!r}")
        out["network"] = parsed.url
    else:
        out["network"] = networks.resolve(store, project, network, "resource.network")
    subnetwork = opt_str(body, "subnetwork", "resource.subnetwork")
    if subnetwork:
        parsed = urls.parse_ref(subnetwork, project)
        region = f"regions/{zone_region(zone)}"
        if parsed is None or parsed.collection != "subnetworks" or parsed.scope != region:
            why = "Must be a subnetwork URL in the region of the network endpoint group."
            raise invalid_value("resource.subnetwork", subnetwork, why)
        out["subnetwork"] = parsed.url
    return out


def endpoints(store: Store, group: dict[str, Any]) -> list[dict[str, Any]]:
    """The live endpoint list of a NEG (NetworkEndpoint dicts), created on demand."""
    return store.members.setdefault(str(group["id"]), [])


def set_size(store: Store, group: dict[str, Any]) -> None:
    group["size"] = len(endpoints(store, group))


def _name(req: Request) -> str:
    return req.params["networkEndpointGroup"]


def require(req: Request) -> dict[str, Any]:
    return common.require(req.store, KIND, req.project, req.scope, _name(req))


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, _name(req))


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    name = check_name(req.json.get("name"))
    return common.insert(req, KIND, name, build(req.store, req.project, req.zone or "", req.json))


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, _name(req), instance_groups.backend_user)


def handle_aggregated_list(req: Request) -> Response:
    reported = aggregated.scopes(req, zones=True)
    return aggregated.handle(req, KIND.collection, AGGREGATED_KIND, reported)
