"""Health checks, the non-legacy kind backend services take: global healthChecks and
regionHealthChecks (one collection, `healthChecks`, in the global or a regional scope), and
healthChecks.aggregatedList, which lists both. The legacy httpHealthChecks target pools take
are in health_checks.py.

A check has a `type` and the one protocol object that matches it (HTTP: httpHealthCheck, TCP:
tcpHealthCheck, ...), as the discovery document's HealthCheck.type says: "Exactly one of the
protocol-specific health check fields must be specified, which must match type field".
Intervals and thresholds default and range as the legacy checks' do, and timeoutSec may not
exceed checkIntervalSec. patch is a JSON merge patch (healthChecks.patch in the discovery
document: "uses the JSON merge patch format and processing rules"): objects merge, a null
removes a field; update replaces every user field.

Choices where the real API is not documented precisely:
- `type` is required (400 required `resource.type`) and so is its protocol object (400
  required `resource.<object>`); another protocol's object is 400 invalid. Nothing public we
  found says whether the real API infers either from the other.
- The protocol object's defaults are the discovery document's: port 80 (HTTP, TCP) or 443
  (HTTPS, HTTP2, SSL), portSpecification USE_FIXED_PORT, proxyHeader NONE, requestPath "/";
  a gRPC check has no default port, so it needs one (400 required). USE_SERVING_PORT takes no
  port (400 invalid if given) and shows none; USE_NAMED_PORT and portName are "Not
  supported." (the discovery document) and answered 400 invalid.
- A patch that changes `type` must null the old protocol object: merged, both objects are
  there, which is 400 invalid as on insert.
- Deleting a check a regional backend service uses is 400 resourceInUseByAnotherResource
  naming the backend service, as deleting a legacy check a pool uses is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import urls
from ..errors import invalid_value, not_found, required
from ..store import Store
from ..validation import check_known_fields, check_name, opt_int, opt_str
from . import aggregated, common, health_checks
from .common import Kind, Request, Response


@dataclass(frozen=True)
class Protocol:
    field: str  # the HealthCheck property holding the protocol's settings
    fields: frozenset[str]  # the properties of its schema (HTTPHealthCheck, ...)
    default_port: int | None


_HTTP = frozenset(
    {"host", "port", "portName", "portSpecification", "proxyHeader", "requestPath", "response"}
)
_TCP = frozenset({"port", "portName", "portSpecification", "proxyHeader", "request", "response"})
PROTOCOLS = {
    "HTTP": Protocol("httpHealthCheck", _HTTP, 80),
    "HTTPS": Protocol("httpsHealthCheck", _HTTP, 443),
    "HTTP2": Protocol("http2HealthCheck", _HTTP, 443),
    "TCP": Protocol("tcpHealthCheck", _TCP, 80),
    "SSL": Protocol("sslHealthCheck", _TCP, 443),
    "GRPC": Protocol(
        "grpcHealthCheck",
        frozenset({"grpcServiceName", "port", "portName", "portSpecification"}),
        None,
    ),
    "GRPC_WITH_TLS": Protocol(
        "grpcTlsHealthCheck", frozenset({"grpcServiceName", "port", "portSpecification"}), None
    ),
}
_PROTOCOL_FIELDS = frozenset(p.field for p in PROTOCOLS.values())

KIND = Kind(
    collection="healthChecks",
    kind="compute#healthCheck",
    label="health_check",
    fields=frozenset(
        {
            "checkIntervalSec",
            "creationTimestamp",
            "description",
            "healthyThreshold",
            "id",
            "kind",
            "logConfig",
            "name",
            "region",
            "selfLink",
            "timeoutSec",
            "type",
            "unhealthyThreshold",
        }
    )
    | _PROTOCOL_FIELDS,
)
AGGREGATED_KIND = "compute#healthChecksAggregatedList"

_PORT_SPECS = frozenset({"USE_FIXED_PORT", "USE_SERVING_PORT", "USE_NAMED_PORT"})
_PROXY_HEADERS = frozenset({"NONE", "PROXY_V1"})
_USER_FIELDS = KIND.fields - common.OUTPUT_ONLY - {"name", "region"}


def _protocol_settings(protocol: Protocol, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_value(where, value, "Expected an object.")
    check_known_fields(value, protocol.fields, where)
    if value.get("portName") is not None:
        raise invalid_value(f"{where}.portName", value["portName"], "Not supported.")
    spec = opt_str(value, "portSpecification", f"{where}.portSpecification") or "USE_FIXED_PORT"
    if spec not in _PORT_SPECS:
        raise invalid_value(f"{where}.portSpecification", spec, "Unknown port specification.")
    if spec == "USE_NAMED_PORT":
        raise invalid_value(f"{where}.portSpecification", spec, "Not supported.")
    port = opt_int(value, "port", f"{where}.port", 1, 65535)
    out: dict[str, Any] = {}
    if spec == "USE_FIXED_PORT":
        port = protocol.default_port if port is None else port
        if port is None:
            raise required(f"{where}.port")
        out["port"] = port
    elif port is not None:
        why = "A port cannot be specified with USE_SERVING_PORT."
        raise invalid_value(f"{where}.port", port, why)
    out["portSpecification"] = spec
    if "proxyHeader" in protocol.fields:
        header = opt_str(value, "proxyHeader", f"{where}.proxyHeader") or "NONE"
        if header not in _PROXY_HEADERS:
            raise invalid_value(f"{where}.proxyHeader", header, "Must be NONE or PROXY_V1.")
        out["proxyHeader"] = header
    if "requestPath" in protocol.fields:
        path = opt_str(value, "requestPath", f"{where}.requestPath") or "/"
        if not path.startswith("/"):
            raise invalid_value(f"{where}.requestPath", path, "Must start with '/'.")
        out["requestPath"] = path
    for key in ("host", "request", "response", "grpcServiceName"):
        if key in protocol.fields:
            text = opt_str(value, key, f"{where}.{key}")
            if text:  # the real API omits empty strings
                out[key] = text
    return out


def build(body: dict[str, Any]) -> dict[str, Any]:
    """The validated user fields of a check from a whole body (insert, update, merged patch)."""
    check_known_fields(body, KIND.fields, "resource")
    kind = opt_str(body, "type", "resource.type")
    if not kind:
        raise required("resource.type")
    protocol = PROTOCOLS.get(kind)
    if protocol is None:
        raise invalid_value("resource.type", kind, f"Must be one of {', '.join(PROTOCOLS)}.")
    for other in sorted(_PROTOCOL_FIELDS - {protocol.field}):
        if body.get(other) is not None:
            why = f"Must not be set for a health check of type {kind}."
            raise invalid_value(f"resource.{other}", body[other], why)
    if body.get(protocol.field) is None:
        raise required(f"resource.{protocol.field}")
    out: dict[str, Any] = {"type": kind}
    out[protocol.field] = _protocol_settings(
        protocol, body[protocol.field], f"resource.{protocol.field}"
    )
    description = opt_str(body, "description", "resource.description")
    if description:
        out["description"] = description
    out.update(health_checks.timing(body))  # the same rules as the legacy checks
    log = body.get("logConfig")
    if log is not None:
        if not isinstance(log, dict):
            raise invalid_value("resource.logConfig", log, "Expected an object.")
        check_known_fields(log, ("enable",), "resource.logConfig")
        enable = log.get("enable", False)
        if not isinstance(enable, bool):
            raise invalid_value("resource.logConfig.enable", enable, "Expected a boolean.")
        out["logConfig"] = {"enable": enable}
    return out


def user_fields(check: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in check.items() if k in _USER_FIELDS}


def seed(
    store: Store, project: str, scope: str, name: str, fields: dict[str, Any]
) -> dict[str, Any]:
    """A check as insert makes it; `type` may be left out when one protocol object is given."""
    body = dict(fields)
    if "type" not in body:
        given = [k for k, p in PROTOCOLS.items() if p.field in body]
        if len(given) == 1:
            body["type"] = given[0]
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"health check {project}/{scope}/{name} already exists")
    check = common.new_resource(store, KIND, project, scope, name, build(body))
    store.bucket(KIND.collection, project, scope)[name] = check
    return check


def resolve(store: Store, project: str, ref: str, field: str, region: str) -> str:
    """Canonical URL of an existing check, global or in `region`, given a URL or a partial path;
    another collection or region is 400 invalid, a missing check 404."""
    parsed = urls.parse_ref(ref, project)
    if parsed is None or parsed.collection != KIND.collection:
        raise invalid_value(field, ref, "Must be a URL to a healthChecks resource.")
    if parsed.scope not in ("global", f"regions/{region}"):
        raise invalid_value(field, ref, "Health check must be global or in the same region.")
    if store.get(KIND.collection, parsed.project, parsed.scope, parsed.name) is None:
        raise not_found(parsed.path)
    return parsed.url


def user_of(store: Store, project: str, check_url: str) -> str | None:
    """Path of the first regional backend service (any region) that uses the check."""
    return common.first_user(
        store, project, "backendServices", lambda s: check_url in s.get("healthChecks", [])
    )


def _name(req: Request) -> str:
    return req.params["healthCheck"]


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, _name(req))


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    name = check_name(req.json.get("name"))
    return common.insert(req, KIND, name, build(req.json))


def handle_update(req: Request) -> Response:
    body = req.json
    return common.replace(req, KIND, _name(req), "update", lambda _: build(body))


def handle_patch(req: Request) -> Response:
    body = req.json
    check_known_fields(body, KIND.fields, "resource")

    def rebuild(current: dict[str, Any]) -> dict[str, Any]:
        return build(common.merge_patch(user_fields(current), body))

    return common.replace(req, KIND, _name(req), "patch", rebuild)


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, _name(req), user_of)


def handle_aggregated_list(req: Request) -> Response:
    reported = aggregated.scopes(req, global_=True, regions=True)
    return aggregated.handle(req, KIND.collection, AGGREGATED_KIND, reported)
