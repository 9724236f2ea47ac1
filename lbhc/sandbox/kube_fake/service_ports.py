"""The healthCheckNodePort the apiserver keeps on a Service of type LoadBalancer with
externalTrafficPolicy Local, where kube-proxy answers the load balancer's health checks:
allocated on create, or when an update makes the Service LoadBalancer + Local; kept across
updates that leave it so (a write that omits it keeps the stored one); cleared when the
Service stops being LoadBalancer + Local. After kubernetes pkg/registry/core/service/storage/
alloc.go (allocHealthCheckNodePort, updateHealthCheckNodePort), storage.go
(patchAllocatedValues), pkg/registry/core/service/strategy.go (dropTypeDependentFields) and
pkg/apis/core/validation/validation.go (validateServiceExternalTrafficPolicy,
validateServiceExternalTrafficFieldsUpdate).

The port comes from the NodePort range (--service-node-port-range, 30000-32767 by default),
shared with every Service's nodePorts. The apiserver's portallocator picks a free port at
random; the fake takes the lowest free one, so a sandbox is reproducible. Not modelled: the
nodePorts themselves (stored as given), externalTrafficPolicy defaulting."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .status import ApiError, FieldError, invalid

Object = dict[str, Any]
NODE_PORT_RANGE = range(30000, 32768)
_FIELD = "spec.healthCheckNodePort"


def needs_health_check(obj: Object | None) -> bool:
    """pkg/api/service/util.go NeedsHealthCheck: LoadBalancer with externalTrafficPolicy Local."""
    spec = _spec(obj)
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def admit(new: Object, old: Object | None, others: Iterable[Object]) -> None:
    """Set, keep or clear `new`'s spec.healthCheckNodePort as the apiserver does on a create
    (`old` None) or an update of `old`; `others` are the other stored Services (whose ports
    are taken). 422 for a value the Service may not have or may not change; 500 InternalError,
    as the apiserver words it, for a requested port that is taken or out of range."""
    spec = new.get("spec")
    if not isinstance(spec, dict):
        return
    needs, needed = needs_health_check(new), needs_health_check(old)
    stored = _port(old)
    if old is not None:
        if needed and not needs and _port(new) == stored:  # dropTypeDependentFields
            spec.pop("healthCheckNodePort", None)
        if needed and needs and not _port(new) and stored:  # patchAllocatedValues
            spec["healthCheckNodePort"] = stored
    port = _port(new)
    name = str((new.get("metadata") or {}).get("name") or "")
    if not needs:
        if port:
            detail = (
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is "
                "'Local'"
            )
            raise invalid("Service", "", name, [FieldError("Invalid", _FIELD, detail, port)])
        return
    if needed and stored:
        if port != stored:
            error = FieldError("Forbidden", _FIELD, "field is immutable")
            raise invalid("Service", "", name, [error])
        return
    # Needs one it does not hold yet: a create, or an update that made it LoadBalancer + Local
    # (or a Service seeded without one, which the apiserver would never store).
    taken = _node_ports(new) | {p for obj in others for p in (*_node_ports(obj), _port(obj))}
    if port:
        if port not in NODE_PORT_RANGE:
            reason = (
                "provided port is not in the valid range. The range of valid ports is "
                f"{NODE_PORT_RANGE.start}-{NODE_PORT_RANGE.stop - 1}"
            )
            raise _internal(f"failed to allocate requested HealthCheck NodePort {port}: {reason}")
        if port in taken:
            raise _internal(
                f"failed to allocate requested HealthCheck NodePort {port}: "
                "provided port is already allocated"
            )
        return
    free = next((p for p in NODE_PORT_RANGE if p not in taken), None)
    if free is None:
        raise _internal("failed to allocate a HealthCheck NodePort 0: range is full")
    spec["healthCheckNodePort"] = free


def _spec(obj: Object | None) -> Object:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _port(obj: Object | None) -> int:
    value = _spec(obj).get("healthCheckNodePort")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _node_ports(obj: Object) -> set[int]:
    ports = _spec(obj).get("ports")
    return {
        p["nodePort"]
        for p in (ports if isinstance(ports, list) else [])
        if isinstance(p, dict) and isinstance(p.get("nodePort"), int) and p["nodePort"]
    }


def _internal(message: str) -> ApiError:
    """apierrors.NewInternalError, which alloc.go wraps allocation failures in."""
    return ApiError(
        500,
        f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )
