"""Regional backend services of passthrough load balancers (loadBalancingScheme EXTERNAL: a
backend service-based external passthrough Network Load Balancer; INTERNAL: an internal
passthrough one): get, list, insert, update, patch (a JSON merge patch), delete, and
backendServices.aggregatedList. getHealth is in backend_health.

What the discovery document says and the fake does (BackendService, Backend):
- at most one health check, and backends that are instance groups or zonal NEGs need one;
  a check USE_SERVING_PORT is "Not supported by backend services for pass-through load
  balancers"; port and portName are to be omitted for them; `network` "can only be specified
  when the load balancing scheme is set to INTERNAL" (without haPolicy, not modelled);
- a backend's `group` must be a fully-qualified URL ("Partial URLs are not supported");
- update needs the current fingerprint, else 412 conditionNotMet; every change makes a new one.

Choices where the real API is not documented precisely:
- Only EXTERNAL and INTERNAL with protocol TCP, UDP or UNSPECIFIED are modelled; another scheme
  or protocol is 400 invalid saying so. A scheme left out is EXTERNAL; a protocol left out is
  taken as HTTP (what we understand the real API stores then) and so refused too.
- An EXTERNAL service takes a regional check only (Google's overview of backend service-based
  external passthrough Network Load Balancers has them use regional checks, as ingress-gce's
  do); INTERNAL takes a global or a regional one, in its region.
- Backends are zonal instance groups or GCE_VM_IP NEGs in the service's region, not both kinds
  in one service (Google's backend services overview: one kind of backend per service), each
  group once; balancingMode defaults to CONNECTION, the only mode passthrough load balancers
  use, and another mode is 400 invalid.
- patch needs no fingerprint, but one given must be current (412 otherwise).
- Defaults shown: sessionAffinity NONE and timeoutSec 30 (the discovery document's), and
  connectionDraining.drainingTimeoutSec 0.
- Deleting a service a forwarding rule points at is 400 resourceInUseByAnotherResource naming
  the rule, as deleting a pool a rule points at is.
"""

from __future__ import annotations

from typing import Any

from .. import urls
from ..errors import condition_not_met, invalid_value, not_found, required
from ..store import Store, zone_region
from ..validation import check_known_fields, check_name, opt_int, opt_str, str_list
from . import aggregated, common, forwarding_rules, lb_health_checks, networks
from .common import Kind, Request, Response

KIND = Kind(
    collection="backendServices",
    kind="compute#backendService",
    label="backend_service",
    fields=frozenset(
        {
            "backends",
            "connectionDraining",
            "creationTimestamp",
            "description",
            "fingerprint",
            "healthChecks",
            "id",
            "kind",
            "loadBalancingScheme",
            "name",
            "network",
            "port",
            "portName",
            "protocol",
            "region",
            "selfLink",
            "sessionAffinity",
            "timeoutSec",
        }
    ),
)
AGGREGATED_KIND = "compute#backendServiceAggregatedList"
SCHEMES = frozenset({"EXTERNAL", "INTERNAL"})
PROTOCOLS = frozenset({"TCP", "UDP", "UNSPECIFIED"})
_AFFINITIES = frozenset(
    {"NONE", "CLIENT_IP", "CLIENT_IP_PROTO", "CLIENT_IP_PORT_PROTO", "CLIENT_IP_NO_DESTINATION"}
)
# Backend's properties the fake models; a body may name the others (BACKEND_SCHEMA_FIELDS, the
# discovery document's), but setting one is 400 invalid saying the fake does not model it.
BACKEND_FIELDS = frozenset({"balancingMode", "description", "failover", "group"})
BACKEND_SCHEMA_FIELDS = BACKEND_FIELDS | {
    "capacityScaler",
    "customMetrics",
    "maxConnections",
    "maxConnectionsPerEndpoint",
    "maxConnectionsPerInstance",
    "maxInFlightRequests",
    "maxInFlightRequestsPerEndpoint",
    "maxInFlightRequestsPerInstance",
    "maxRate",
    "maxRatePerEndpoint",
    "maxRatePerInstance",
    "maxUtilization",
    "orchestrationInfo",
    "preference",
    "trafficDuration",
}
_GROUP_COLLECTIONS = frozenset({"instanceGroups", "networkEndpointGroups"})
_STALE = "Supplied fingerprint does not match current fingerprint."
_USER_FIELDS = KIND.fields - common.OUTPUT_ONLY - {"name", "region", "fingerprint"}


def _health_check(
    store: Store, project: str, region: str, scheme: str, body: dict[str, Any]
) -> list[str]:
    refs = str_list(body, "healthChecks", "resource.healthChecks")
    if not refs:
        raise required("resource.healthChecks")
    if len(refs) > 1:
        why = "A backend service can have at most one health check."
        raise invalid_value("resource.healthChecks", refs, why)
    where = "resource.healthChecks[0]"
    url = lb_health_checks.resolve(store, project, refs[0], where, region)
    parsed = urls.parse_ref(url, project)
    assert parsed is not None  # resolve made it
    if scheme == "EXTERNAL" and parsed.scope == "global":
        why = "An EXTERNAL regional backend service needs a regional health check."
        raise invalid_value(where, refs[0], why)
    check = store.get(parsed.collection, parsed.project, parsed.scope, parsed.name)
    assert check is not None  # resolve found it
    protocol = lb_health_checks.PROTOCOLS[check["type"]].field
    if check[protocol].get("portSpecification") == "USE_SERVING_PORT":
        why = "USE_SERVING_PORT is not supported by backend services of passthrough load balancers."
        raise invalid_value(where, refs[0], why)
    return [url]


def _backend(store: Store, project: str, region: str, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_value(where, value, "Expected an object.")
    check_known_fields(value, BACKEND_SCHEMA_FIELDS, where)
    for key in sorted(set(value) - BACKEND_FIELDS):
        if value[key] is not None:
            why = "The compute fake does not model this field for passthrough load balancers."
            raise invalid_value(f"{where}.{key}", value[key], why)
    ref = opt_str(value, "group", f"{where}.group")
    if not ref:
        raise required(f"{where}.group")
    if "://" not in ref:
        raise invalid_value(f"{where}.group", ref, "Partial URLs are not supported.")
    parsed = urls.parse_ref(ref, project)
    if parsed is None or parsed.collection not in _GROUP_COLLECTIONS:
        why = "Must be the URL of an instance group or a network endpoint group."
        raise invalid_value(f"{where}.group", ref, why)
    zone = parsed.scope.removeprefix("zones/")
    if not parsed.scope.startswith("zones/") or zone_region(zone) != region:
        why = "The group must be zonal, in a zone of the backend service's region."
        raise invalid_value(f"{where}.group", ref, why)
    if store.get(parsed.collection, parsed.project, parsed.scope, parsed.name) is None:
        raise not_found(parsed.path)
    mode = opt_str(value, "balancingMode", f"{where}.balancingMode") or "CONNECTION"
    if mode != "CONNECTION":
        why = "Passthrough load balancers support only the CONNECTION balancing mode."
        raise invalid_value(f"{where}.balancingMode", mode, why)
    out: dict[str, Any] = {"group": parsed.url, "balancingMode": mode}
    description = opt_str(value, "description", f"{where}.description")
    if description:
        out["description"] = description
    failover = value.get("failover")
    if failover is not None:
        if not isinstance(failover, bool):
            raise invalid_value(f"{where}.failover", failover, "Expected a boolean.")
        out["failover"] = failover
    return out


def _backends(store: Store, project: str, region: str, value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_value("resource.backends", value, "Expected a list.")
    backends = [
        _backend(store, project, region, entry, f"resource.backends[{i}]")
        for i, entry in enumerate(value)
    ]
    groups = [b["group"] for b in backends]
    for i, group in enumerate(groups):
        if group in groups[:i]:
            raise invalid_value(f"resource.backends[{i}].group", group, "Duplicate backend group.")
    if len({g.split("/")[-2] for g in groups}) > 1:
        why = "A backend service cannot mix instance group and network endpoint group backends."
        raise invalid_value("resource.backends", groups, why)
    return backends


def build(store: Store, project: str, region: str, body: dict[str, Any]) -> dict[str, Any]:
    """The validated user fields of a service from a whole body (insert, update, merged patch)."""
    check_known_fields(body, KIND.fields, "resource")
    for key in ("port", "portName"):
        if body.get(key) is not None:
            why = "Omit it for passthrough load balancers."
            raise invalid_value(f"resource.{key}", body[key], why)
    scheme = opt_str(body, "loadBalancingScheme", "resource.loadBalancingScheme") or "EXTERNAL"
    if scheme not in SCHEMES:
        why = "The compute fake models only the passthrough schemes EXTERNAL and INTERNAL."
        raise invalid_value("resource.loadBalancingScheme", scheme, why)
    protocol = opt_str(body, "protocol", "resource.protocol") or "HTTP"
    if protocol not in PROTOCOLS:
        why = "Passthrough load balancers take protocol TCP, UDP or UNSPECIFIED."
        raise invalid_value("resource.protocol", protocol, why)
    out: dict[str, Any] = {"loadBalancingScheme": scheme, "protocol": protocol}
    out["healthChecks"] = _health_check(store, project, region, scheme, body)
    backends = _backends(store, project, region, body.get("backends"))
    if backends:
        out["backends"] = backends
    affinity = opt_str(body, "sessionAffinity", "resource.sessionAffinity") or "NONE"
    if affinity not in _AFFINITIES or (
        affinity == "CLIENT_IP_NO_DESTINATION" and scheme != "INTERNAL"
    ):
        why = "Unsupported session affinity for this load balancer."
        raise invalid_value("resource.sessionAffinity", affinity, why)
    out["sessionAffinity"] = affinity
    out["timeoutSec"] = opt_int(body, "timeoutSec", "resource.timeoutSec", 1, 2**31 - 1) or 30
    draining = body.get("connectionDraining") or {}
    if not isinstance(draining, dict):
        raise invalid_value("resource.connectionDraining", draining, "Expected an object.")
    check_known_fields(draining, ("drainingTimeoutSec",), "resource.connectionDraining")
    where = "resource.connectionDraining.drainingTimeoutSec"
    seconds = opt_int(draining, "drainingTimeoutSec", where, 0, 3600) or 0
    out["connectionDraining"] = {"drainingTimeoutSec": seconds}
    description = opt_str(body, "description", "resource.description")
    if description:
        out["description"] = description
    network = opt_str(body, "network", "resource.network")
    if network:
        if scheme != "INTERNAL":
            why = "A network can only be specified for an INTERNAL backend service."
            raise invalid_value("resource.network", network, why)
        out["network"] = networks.resolve(store, project, network, "resource.network")
    return out


def seed(
    store: Store, project: str, region: str, name: str, fields: dict[str, Any]
) -> dict[str, Any]:
    scope = urls.scope_of(region)
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"backend service {project}/{region}/{name} already exists")
    built = build(store, project, region, fields)
    built["fingerprint"] = store.ids.fingerprint()
    service = common.new_resource(store, KIND, project, scope, name, built)
    store.bucket(KIND.collection, project, scope)[name] = service
    return service


def _name(req: Request) -> str:
    return req.params["backendService"]


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, _name(req))


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    name = check_name(req.json.get("name"))
    fields = build(req.store, req.project, req.region or "", req.json)
    fields["fingerprint"] = req.store.ids.fingerprint()
    return common.insert(req, KIND, name, fields)


def _replace(req: Request, operation_type: str, *, need_fingerprint: bool) -> Response:
    store, body, region = req.store, req.json, req.region or ""
    check_known_fields(body, KIND.fields, "resource")
    supplied = opt_str(body, "fingerprint", "resource.fingerprint")
    if need_fingerprint and supplied is None:
        raise condition_not_met(_STALE)

    def rebuild(current: dict[str, Any]) -> dict[str, Any]:
        if supplied is not None and supplied != current.get("fingerprint"):
            raise condition_not_met(_STALE)
        base: dict[str, Any] = {}
        if operation_type == "patch":
            base = {k: v for k, v in current.items() if k in _USER_FIELDS}
        fields = build(store, req.project, region, common.merge_patch(base, body))
        return {**fields, "fingerprint": store.ids.fingerprint()}

    return common.replace(req, KIND, _name(req), operation_type, rebuild)


def handle_update(req: Request) -> Response:
    return _replace(req, "update", need_fingerprint=True)


def handle_patch(req: Request) -> Response:
    return _replace(req, "patch", need_fingerprint=False)


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, _name(req), forwarding_rules.rule_using)


def handle_aggregated_list(req: Request) -> Response:
    reported = aggregated.scopes(req, global_=True, regions=True)
    return aggregated.handle(req, KIND.collection, AGGREGATED_KIND, reported)
