"""Regional forwarding rules (read by lbhc; insert/delete exist for seeding and demos).

Two flavours: a target-pool rule (`target` must name an existing target pool in the same
region) and a backend-service rule, as ingress-gce makes for RBS Services (`backendService`
must be a backend service URL of the same region; the fake has no backend services, so it is
not looked up). Exactly one of the two; body fields outside the supported subset are rejected.
"""

from __future__ import annotations

import base64
import ipaddress
import random
from typing import Any

from .. import urls
from ..errors import invalid, invalid_value, not_found, required
from ..store import Store
from ..validation import check_known_fields, check_name, check_port_spec, opt_str
from . import common
from .common import Kind, Request, Response

KIND = Kind(
    collection="forwardingRules",
    kind="compute#forwardingRule",
    label="forwarding_rule",
    fields=frozenset(
        {
            "IPAddress",
            "IPProtocol",
            "backendService",
            "creationTimestamp",
            "description",
            "id",
            "kind",
            "loadBalancingScheme",
            "name",
            "networkTier",
            "portRange",
            "region",
            "selfLink",
            "target",
        }
    ),
)

_PROTOCOLS = frozenset({"TCP", "UDP", "ESP", "AH", "SCTP", "ICMP", "L3_DEFAULT"})
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


def _backend_service(project: str, region: str, ref: str) -> dict[str, str]:
    parsed = urls.parse_ref(ref, project)
    if parsed is None or parsed.collection != "backendServices":
        raise invalid_value("resource.backendService", ref, "Must be a backend service URL.")
    if parsed.scope != f"regions/{region}":
        raise invalid_value(
            "resource.backendService", ref, "Backend service must be in the same region."
        )
    return {"backendService": parsed.url}


def _fields(
    store: Store,
    project: str,
    region: str,
    *,
    target: str,
    backend_service: str = "",
    description: str,
    ip_address: str | None,
    port_range: str | None,
    ip_protocol: str,
) -> dict[str, Any]:
    if bool(target) == bool(backend_service):
        raise invalid(_ONE_BACKEND)
    if target:
        backend = _target(store, project, region, target)
    else:
        backend = _backend_service(project, region, backend_service)
    protocol = ip_protocol.upper()
    if protocol not in _PROTOCOLS:
        raise invalid_value("resource.IPProtocol", ip_protocol, "Unsupported protocol.")
    rng = random.Random(f"{project}/{region}/{target or backend_service}")
    if ip_address is None:
        ip_address = f"34.{rng.randrange(1, 255)}.{rng.randrange(0, 255)}.{rng.randrange(1, 255)}"
    try:
        ipaddress.ip_address(ip_address)
    except ValueError:
        raise invalid_value("resource.IPAddress", ip_address, "Must be an IP address.") from None
    fields: dict[str, Any] = {
        "IPAddress": ip_address,
        "IPProtocol": protocol,
        **backend,
        "loadBalancingScheme": "EXTERNAL",
        "networkTier": "PREMIUM",
        "labelFingerprint": _EMPTY_LABEL_FINGERPRINT,
        "fingerprint": base64.b64encode(rng.randbytes(8)).decode(),
    }
    if description:
        fields["description"] = description
    if port_range:
        fields["portRange"] = _port_range(port_range, "resource.portRange")
    return fields


def seed(
    store: Store,
    project: str,
    region: str,
    name: str,
    *,
    target: str,
    backend_service: str = "",
    description: str,
    ip_address: str,
    port_range: str,
    ip_protocol: str,
) -> dict[str, Any]:
    scope = urls.scope_of(region)
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"forwarding rule {project}/{region}/{name} already exists")
    fields = _fields(
        store,
        project,
        region,
        target=target,
        backend_service=backend_service,
        description=description,
        ip_address=ip_address,
        port_range=port_range,
        ip_protocol=ip_protocol,
    )
    rule = common.new_resource(store, KIND, project, scope, name, fields)
    store.bucket(KIND.collection, project, scope)[name] = rule
    return rule


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, req.params["forwardingRule"])


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    body = req.json
    check_known_fields(body, KIND.fields, "resource")
    name = check_name(body.get("name"))
    target = opt_str(body, "target", "resource.target") or ""
    backend_service = opt_str(body, "backendService", "resource.backendService") or ""
    if not target and not backend_service:
        raise required("resource.target")
    region = req.region or ""
    fields = _fields(
        req.store,
        req.project,
        region,
        target=target,
        backend_service=backend_service,
        description=opt_str(body, "description", "resource.description") or "",
        ip_address=opt_str(body, "IPAddress", "resource.IPAddress"),
        port_range=opt_str(body, "portRange", "resource.portRange"),
        ip_protocol=opt_str(body, "IPProtocol", "resource.IPProtocol") or "TCP",
    )
    scheme = opt_str(body, "loadBalancingScheme", "resource.loadBalancingScheme")
    if scheme not in (None, "EXTERNAL"):
        raise invalid_value("resource.loadBalancingScheme", scheme, "Only EXTERNAL is modelled.")
    tier = opt_str(body, "networkTier", "resource.networkTier")
    if tier is not None:
        if tier not in ("PREMIUM", "STANDARD"):
            raise invalid_value("resource.networkTier", tier, "Must be PREMIUM or STANDARD.")
        fields["networkTier"] = tier
    return common.insert(req, KIND, name, fields)


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, req.params["forwardingRule"])
