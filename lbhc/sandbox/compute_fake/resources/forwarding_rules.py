"""Regional forwarding rules (read by lbhc; insert/delete exist for seeding and demos), and
forwardingRules.aggregatedList.

Two flavours: a target-pool rule (`target` must name an existing target pool in the same
region; loadBalancingScheme EXTERNAL) and a backend-service rule (`backendService`, a backend
service URL of the same region), EXTERNAL (a backend service-based external passthrough
Network Load Balancer) or INTERNAL (an internal passthrough one). Exactly one of the two; body
fields outside the supported subset are rejected.

What the discovery document says and the fake does (ForwardingRule): "The ports, portRange,
and allPorts fields are mutually exclusive"; `ports` (at most five) needs IPProtocol TCP, UDP
or SCTP and `allPorts` TCP, UDP, SCTP or L3_DEFAULT, which needs allPorts; neither applies to
a target-pool rule, and portRange does not apply to an internal passthrough one. An INTERNAL
rule is on a network (the default network when none is given) and gets an internal address.

Choices where the real API is not documented precisely:
- A backend-service rule's service is looked up when it exists (its scheme must then be the
  rule's, 400 invalid otherwise) but may be missing: the sandbox seeds the rules of Services
  another controller (ingress-gce) would own without their backend services, and the real
  answer for a missing one (surely 404) would refuse them.
- An INTERNAL rule needs `ports` or `allPorts` (400 required `resource.ports` otherwise);
  `subnetwork` is checked to be a subnetwork URL of the region but not looked up.
"""

from __future__ import annotations

import base64
import ipaddress
import random
from dataclasses import dataclass
from typing import Any

from .. import urls
from ..errors import invalid, invalid_value, not_found, required
from ..store import Store
from ..validation import check_known_fields, check_name, check_port_spec, opt_str, str_list
from . import aggregated, common, networks
from .common import Kind, Request, Response

KIND = Kind(
    collection="forwardingRules",
    kind="compute#forwardingRule",
    label="forwarding_rule",
    fields=frozenset(
        {
            "IPAddress",
            "IPProtocol",
            "allPorts",
            "backendService",
            "creationTimestamp",
            "description",
            "fingerprint",
            "id",
            "kind",
            "labelFingerprint",
            "loadBalancingScheme",
            "name",
            "network",
            "networkTier",
            "portRange",
            "ports",
            "region",
            "selfLink",
            "subnetwork",
            "target",
        }
    ),
)

AGGREGATED_KIND = "compute#forwardingRuleAggregatedList"
_PROTOCOLS = frozenset({"TCP", "UDP", "ESP", "AH", "SCTP", "ICMP", "L3_DEFAULT"})
_PORTED = frozenset({"TCP", "UDP", "SCTP"})
_SCHEMES = frozenset({"EXTERNAL", "INTERNAL"})
_EXCLUSIVE = "The ports, portRange, and allPorts fields are mutually exclusive."
# The fingerprint the real API reports for an empty label set.
_EMPTY_LABEL_FINGERPRINT = "42WmSpB8rSM="
_ONE_BACKEND = "Exactly one of 'target' or 'backendService' must be specified."


def _port_range(value: str, field: str) -> str:
    check_port_spec(value, field)
    return value if "-" in value else f"{value}-{value}"  # the API stores "80" as "80-80"


def _target(store: Store, project: str, region: str, target: str) -> dict[str, str]:
    parsed = urls.parse_ref(target, project)
    if parsed is None or parsed.collection != "targetPools":
        raise invalid_value("resource.target", target, "Must be a target pool URL.")
    if parsed.scope != f"regions/{region}":
        raise invalid_value("resource.target", target, "Target pool must be in the same region.")
    if store.get(parsed.collection, parsed.project, parsed.scope, parsed.name) is None:
        raise not_found(parsed.path)
    return {"target": parsed.url}


def _backend_service(
    store: Store, project: str, region: str, ref: str, scheme: str
) -> dict[str, str]:
    parsed = urls.parse_ref(ref, project)
    if parsed is None or parsed.collection != "backendServices":
        raise invalid_value("resource.backendService", ref, "Must be a backend service URL.")
    if parsed.scope != f"regions/{region}":
        raise invalid_value(
            "resource.backendService", ref, "Backend service must be in the same region."
        )
    service = store.get(parsed.collection, parsed.project, parsed.scope, parsed.name)
    if service is not None and service["loadBalancingScheme"] != scheme:
        why = f"The backend service's loadBalancingScheme is {service['loadBalancingScheme']}."
        raise invalid_value("resource.loadBalancingScheme", scheme, why)
    return {"backendService": parsed.url}


@dataclass(frozen=True)
class RuleSpec:
    """A rule's user fields, as insert takes them or the seed helper is given them."""

    target: str = ""
    backend_service: str = ""
    description: str = ""
    ip_address: str | None = None
    port_range: str | None = None
    ip_protocol: str = "TCP"
    scheme: str = "EXTERNAL"
    ports: tuple[str, ...] = ()
    all_ports: bool = False
    network: str = ""
    subnetwork: str = ""


def _ports(spec: RuleSpec, protocol: str) -> dict[str, Any]:
    given = [bool(spec.port_range), bool(spec.ports), spec.all_ports]
    if sum(given) > 1:
        raise invalid(_EXCLUSIVE)
    if (spec.ports or spec.all_ports) and spec.target:
        why = "ports and allPorts do not apply to a target pool forwarding rule."
        raise invalid_value("resource.ports" if spec.ports else "resource.allPorts", True, why)
    if protocol == "L3_DEFAULT" and not spec.all_ports:
        raise invalid_value("resource.IPProtocol", protocol, "L3_DEFAULT requires allPorts.")
    if spec.scheme == "INTERNAL":
        if spec.port_range:
            why = "portRange does not apply to an internal passthrough load balancer."
            raise invalid_value("resource.portRange", spec.port_range, why)
        if not spec.ports and not spec.all_ports:
            raise required("resource.ports")
    out: dict[str, Any] = {}
    if spec.ports:
        if protocol not in _PORTED:
            raise invalid_value("resource.ports", list(spec.ports), "Needs TCP, UDP or SCTP.")
        if len(spec.ports) > 5:
            raise invalid_value("resource.ports", list(spec.ports), "At most five ports.")
        for i, port in enumerate(spec.ports):
            check_port_spec(port, f"resource.ports[{i}]")
        out["ports"] = list(spec.ports)
    if spec.all_ports:
        if protocol not in _PORTED | {"L3_DEFAULT"}:
            why = "Needs TCP, UDP, SCTP or L3_DEFAULT."
            raise invalid_value("resource.allPorts", True, why)
        out["allPorts"] = True
    if spec.port_range:
        out["portRange"] = _port_range(spec.port_range, "resource.portRange")
    return out


def _network(
    store: Store, project: str, region: str, spec: RuleSpec, seeding: bool
) -> dict[str, str]:
    if spec.scheme != "INTERNAL":
        if spec.network or spec.subnetwork:
            field = "resource.network" if spec.network else "resource.subnetwork"
            why = "Only an INTERNAL forwarding rule is on a network."
            raise invalid_value(field, spec.network or spec.subnetwork, why)
        return {}
    ref = spec.network or "default"
    if seeding:
        parsed = urls.parse_ref(ref if "/" in ref else f"global/networks/{ref}", project)
        if parsed is None or parsed.collection != "networks":
            raise ValueError(f"not a network reference: {ref!r}")
        out = {"network": parsed.url}
    else:
        out = {"network": networks.resolve(store, project, ref, "resource.network")}
    if spec.subnetwork:
        parsed = urls.parse_ref(spec.subnetwork, project)
        if (
            parsed is None
            or parsed.collection != "subnetworks"
            or parsed.scope != f"regions/{region}"
        ):
            why = "Must be a subnetwork URL in the rule's region."
            raise invalid_value("resource.subnetwork", spec.subnetwork, why)
        out["subnetwork"] = parsed.url
    return out


def _fields(
    store: Store, project: str, region: str, spec: RuleSpec, *, seeding: bool = False
) -> dict[str, Any]:
    if bool(spec.target) == bool(spec.backend_service):
        raise invalid(_ONE_BACKEND)
    if spec.scheme not in _SCHEMES:
        why = "The compute fake models only the passthrough schemes EXTERNAL and INTERNAL."
        raise invalid_value("resource.loadBalancingScheme", spec.scheme, why)
    if spec.target:
        if spec.scheme != "EXTERNAL":
            why = "A target pool forwarding rule must be EXTERNAL."
            raise invalid_value("resource.loadBalancingScheme", spec.scheme, why)
        backend = _target(store, project, region, spec.target)
    else:
        backend = _backend_service(store, project, region, spec.backend_service, spec.scheme)
    protocol = spec.ip_protocol.upper()
    if protocol not in _PROTOCOLS:
        raise invalid_value("resource.IPProtocol", spec.ip_protocol, "Unsupported protocol.")
    ported = _ports(spec, protocol)
    on_network = _network(store, project, region, spec, seeding)
    rng = random.Random(f"{project}/{region}/{spec.target or spec.backend_service}")
    ip_address = spec.ip_address
    if ip_address is None:
        first = 10 if spec.scheme == "INTERNAL" else 34
        ip_address = (
            f"{first}.{rng.randrange(1, 255)}.{rng.randrange(0, 255)}.{rng.randrange(1, 255)}"
        )
    try:
        ipaddress.ip_address(ip_address)
    except ValueError:
        raise invalid_value("resource.IPAddress", ip_address, "Must be an IP address.") from None
    fields: dict[str, Any] = {
        "IPAddress": ip_address,
        "IPProtocol": protocol,
        **backend,
        "loadBalancingScheme": spec.scheme,
        "networkTier": "PREMIUM",
        "labelFingerprint": _EMPTY_LABEL_FINGERPRINT,
        "fingerprint": base64.b64encode(rng.randbytes(8)).decode(),
        **ported,
        **on_network,
    }
    if spec.description:
        fields["description"] = spec.description
    return fields


def seed(store: Store, project: str, region: str, name: str, spec: RuleSpec) -> dict[str, Any]:
    """A rule as a controller would have made it; its network, if INTERNAL, is not looked up."""
    scope = urls.scope_of(region)
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"forwarding rule {project}/{region}/{name} already exists")
    fields = _fields(store, project, region, spec, seeding=True)
    rule = common.new_resource(store, KIND, project, scope, name, fields)
    store.bucket(KIND.collection, project, scope)[name] = rule
    return rule


def _points_at(rule: dict[str, Any], url: str) -> bool:
    return url in (rule.get("target"), rule.get("backendService"))


def pointing_at(store: Store, project: str, scope: str, url: str) -> list[dict[str, Any]]:
    """The rules of a region whose target pool or backend service is `url`, by name."""
    rules = store.items(KIND.collection, project, scope)
    return sorted((r for r in rules if _points_at(r, url)), key=lambda r: str(r["name"]))


def rule_using(store: Store, project: str, url: str) -> str | None:
    """Path of the first rule pointing at a target pool or backend service (common.UsedBy)."""
    return common.first_user(store, project, KIND.collection, lambda r: _points_at(r, url))


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, req.params["forwardingRule"])


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def _all_ports(body: dict[str, Any]) -> bool:
    value = body.get("allPorts", False)
    if not isinstance(value, bool):
        raise invalid_value("resource.allPorts", value, "Expected a boolean.")
    return value


def handle_insert(req: Request) -> Response:
    body = req.json
    check_known_fields(body, KIND.fields, "resource")
    name = check_name(body.get("name"))
    target = opt_str(body, "target", "resource.target") or ""
    backend_service = opt_str(body, "backendService", "resource.backendService") or ""
    if not target and not backend_service:
        raise required("resource.target")
    spec = RuleSpec(
        target=target,
        backend_service=backend_service,
        description=opt_str(body, "description", "resource.description") or "",
        ip_address=opt_str(body, "IPAddress", "resource.IPAddress"),
        port_range=opt_str(body, "portRange", "resource.portRange"),
        ip_protocol=opt_str(body, "IPProtocol", "resource.IPProtocol") or "TCP",
        scheme=opt_str(body, "loadBalancingScheme", "resource.loadBalancingScheme") or "EXTERNAL",
        ports=tuple(str_list(body, "ports", "resource.ports")),
        all_ports=_all_ports(body),
        network=opt_str(body, "network", "resource.network") or "",
        subnetwork=opt_str(body, "subnetwork", "resource.subnetwork") or "",
    )
    fields = _fields(req.store, req.project, req.region or "", spec)
    tier = opt_str(body, "networkTier", "resource.networkTier")
    if tier is not None:
        if tier not in ("PREMIUM", "STANDARD"):
            raise invalid_value("resource.networkTier", tier, "Must be PREMIUM or STANDARD.")
        fields["networkTier"] = tier
    return common.insert(req, KIND, name, fields)


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, req.params["forwardingRule"])


def handle_aggregated_list(req: Request) -> Response:
    reported = aggregated.scopes(req, regions=True)
    return aggregated.handle(req, KIND.collection, AGGREGATED_KIND, reported)
