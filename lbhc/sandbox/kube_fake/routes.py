"""URL paths -> what they address: discovery documents, collections, objects, subresources."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .resources import BY_PATH, GROUP_VERSIONS, Resource


class Target(Enum):
    VERSION = "version"
    API = "api"
    API_V1 = "api/v1"  # any group-version's APIResourceList; core's is /api/v1
    APIS = "apis"
    GROUP = "apis/group"
    OPENAPI = "openapi/v3"  # the root, or a group-version's document (group_version: prefix)
    LIST = "list"
    GET = "get"  # one object, or its subresource


@dataclass(frozen=True)
class Route:
    target: Target
    resource: Resource | None = None
    namespace: str | None = None  # None: all namespaces (lists) or cluster-scoped
    name: str | None = None
    subresource: str | None = None  # "status"
    group_version: str = "v1"  # for API_V1 and GROUP ("apps" for a group)


_FIXED = {
    "/version": Route(Target.VERSION),
    "/api": Route(Target.API),
    "/apis": Route(Target.APIS),
}
_SUBRESOURCES = ("status",)


def resolve(path: str) -> Route | None:
    """The route for `path`, or None if the apiserver would answer 404 for the path itself."""
    path = path.rstrip("/") or "/"
    if path in _FIXED:
        return _FIXED[path]
    parts = path.split("/")[1:]
    if any(not part for part in parts):
        return None
    if parts[:2] == ["openapi", "v3"]:
        return Route(Target.OPENAPI, group_version="/".join(parts[2:]))
    if parts[:2] == ["api", "v1"]:
        group_version, rest = "v1", parts[2:]
    elif parts[0] == "apis" and len(parts) == 2:
        groups = {gv.partition("/")[0] for gv in GROUP_VERSIONS if "/" in gv}
        return Route(Target.GROUP, group_version=parts[1]) if parts[1] in groups else None
    elif parts[0] == "apis" and len(parts) >= 3:
        group_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    if group_version not in GROUP_VERSIONS:
        return None
    if not rest:
        return Route(Target.API_V1, group_version=group_version)
    return _resource_route(group_version, rest)


def _resource_route(group_version: str, rest: list[str]) -> Route | None:
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) == 3 and rest[2] in _SUBRESOURCES:
        pass  # /api/v1/namespaces/x/status: the Namespace's own subresource
    elif rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = BY_PATH.get((group_version, rest[0]))
    if resource is None or len(rest) > 3:
        return None
    if namespace is not None and not resource.namespaced:
        return None  # /api/v1/namespaces/default/nodes is not a path
    if len(rest) == 1:  # /api/v1/pods lists across namespaces
        return Route(Target.LIST, resource, namespace)
    if resource.namespaced and namespace is None:
        return None  # /api/v1/pods/x is not a path
    subresource = rest[2] if len(rest) == 3 else None
    if subresource is not None and (
        subresource not in _SUBRESOURCES or not resource.status_subresource
    ):
        return None
    return Route(Target.GET, resource, namespace, rest[1], subresource, group_version)
