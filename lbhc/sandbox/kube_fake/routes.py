"""URL paths -> what they address. Only core/v1 paths for the served resources resolve."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .resources import BY_PLURAL, Resource


class Target(Enum):
    VERSION = "version"
    API = "api"
    API_V1 = "api/v1"
    APIS = "apis"
    LIST = "list"
    GET = "get"


@dataclass(frozen=True)
class Route:
    target: Target
    resource: Resource | None = None
    namespace: str | None = None  # None: all namespaces (lists) or cluster-scoped
    name: str | None = None


_FIXED = {
    "/version": Target.VERSION,
    "/api": Target.API,
    "/api/v1": Target.API_V1,
    "/apis": Target.APIS,
}


def resolve(path: str) -> Route | None:
    """The route for `path`, or None if the apiserver would answer 404 for the path itself."""
    path = path.rstrip("/") or "/"
    if path in _FIXED:
        return Route(_FIXED[path])
    parts = path.split("/")[1:]
    if parts[:2] != ["api", "v1"] or any(not part for part in parts):
        return None
    rest = parts[2:]
    if len(rest) in (1, 2) and (resource := BY_PLURAL.get(rest[0])):
        # /api/v1/pods lists across namespaces; /api/v1/pods/x is not a path.
        if len(rest) == 1:
            return Route(Target.LIST, resource)
        if not resource.namespaced:
            return Route(Target.GET, resource, name=rest[1])
        return None
    if len(rest) in (3, 4) and rest[0] == "namespaces":
        resource = BY_PLURAL.get(rest[2])
        if resource is None or not resource.namespaced:
            return None
        name = rest[3] if len(rest) == 4 else None
        return Route(Target.GET if name else Target.LIST, resource, rest[1], name)
    return None
