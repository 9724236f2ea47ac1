"""The route table, as data: (discovery resource, discovery method, HTTP method, path, handler).

Paths are the discovery document's `flatPath`s, relative to `/compute/v1/`; a conformance test
checks every row against the discovery document shipped with google-api-python-client.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import NamedTuple

from .resources import (
    backend_health,
    backend_services,
    firewalls,
    forwarding_rules,
    health_checks,
    instance_group_members,
    instance_groups,
    instances,
    lb_health_checks,
    network_endpoint_groups,
    network_endpoints,
    networks,
    operations_api,
    target_pool_members,
    target_pools,
)
from .resources.common import Request, Response

API_PREFIX = "/compute/v1/"
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# POST methods that only read.
_READ_ONLY_POSTS = frozenset({"getHealth", "wait", "listInstances", "listNetworkEndpoints"})
# Handlers that manage the store lock themselves (they block or call out).
_SELF_LOCKING = frozenset({"getHealth", "wait"})

Handler = Callable[[Request], Response]


class Route(NamedTuple):
    resource: str
    method: str
    http_method: str
    template: str
    handler: Handler

    @property
    def mutating(self) -> bool:
        return self.http_method in MUTATING_METHODS and self.method not in _READ_ONLY_POSTS

    @property
    def self_locking(self) -> bool:
        return self.method in _SELF_LOCKING

    def match(self, relative_path: str) -> dict[str, str] | None:
        found = _pattern(self.template).fullmatch(relative_path)
        return None if found is None else found.groupdict()


@cache
def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[A-Za-z]+\})", template)
    regex = "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(regex)


# The standard verbs: (HTTP method, whether the path names one resource). Other verbs are
# POSTs to `<collection>/{name}/<verb>`, served by the module's handle_<verb in snake case>.
_STANDARD = {
    "get": ("GET", True),
    "list": ("GET", False),
    "insert": ("POST", False),
    "update": ("PUT", True),
    "patch": ("PATCH", True),
    "delete": ("DELETE", True),
}


def _rows(resource: str, path: str, param: str, module: ModuleType, *verbs: str) -> list[Route]:
    """One row per verb of a discovery resource whose collection is at `path`."""
    rows: list[Route] = []
    for verb in verbs:
        handler = getattr(module, "handle_" + re.sub(r"(?<!^)(?=[A-Z])", "_", verb).lower())
        http_method, on_item = _STANDARD.get(verb, ("POST", True))
        template = f"{path}/{{{param}}}" if on_item else path
        if verb not in _STANDARD:
            template += f"/{verb}"
        rows.append(Route(resource, verb, http_method, template, handler))
    return rows


_P = "projects/{project}"
_HC = f"{_P}/global/httpHealthChecks"
_FW = f"{_P}/global/firewalls"
_TP = f"{_P}/regions/{{region}}/targetPools"
_FR = f"{_P}/regions/{{region}}/forwardingRules"
_VM = f"{_P}/zones/{{zone}}/instances/{{instance}}"
_CRUD = ("get", "list", "insert", "update", "patch", "delete")

COMPUTE_ROUTES: tuple[Route, ...] = (
    Route("httpHealthChecks", "get", "GET", f"{_HC}/{{httpHealthCheck}}", health_checks.handle_get),
    Route("httpHealthChecks", "list", "GET", _HC, health_checks.handle_list),
    Route("httpHealthChecks", "insert", "POST", _HC, health_checks.handle_insert),
    Route(
        "httpHealthChecks",
        "update",
        "PUT",
        f"{_HC}/{{httpHealthCheck}}",
        health_checks.handle_update,
    ),
    Route(
        "httpHealthChecks",
        "patch",
        "PATCH",
        f"{_HC}/{{httpHealthCheck}}",
        health_checks.handle_patch,
    ),
    Route(
        "httpHealthChecks",
        "delete",
        "DELETE",
        f"{_HC}/{{httpHealthCheck}}",
        health_checks.handle_delete,
    ),
    Route("firewalls", "get", "GET", f"{_FW}/{{firewall}}", firewalls.handle_get),
    Route("firewalls", "list", "GET", _FW, firewalls.handle_list),
    Route("firewalls", "insert", "POST", _FW, firewalls.handle_insert),
    Route("firewalls", "update", "PUT", f"{_FW}/{{firewall}}", firewalls.handle_update),
    Route("firewalls", "patch", "PATCH", f"{_FW}/{{firewall}}", firewalls.handle_patch),
    Route("firewalls", "delete", "DELETE", f"{_FW}/{{firewall}}", firewalls.handle_delete),
    Route("networks", "get", "GET", f"{_P}/global/networks/{{network}}", networks.handle_get),
    Route("networks", "list", "GET", f"{_P}/global/networks", networks.handle_list),
    Route(
        "networks",
        "getEffectiveFirewalls",
        "GET",
        f"{_P}/global/networks/{{network}}/getEffectiveFirewalls",
        networks.handle_get_effective_firewalls,
    ),
    Route("targetPools", "get", "GET", f"{_TP}/{{targetPool}}", target_pools.handle_get),
    Route("targetPools", "list", "GET", _TP, target_pools.handle_list),
    Route("targetPools", "insert", "POST", _TP, target_pools.handle_insert),
    Route("targetPools", "delete", "DELETE", f"{_TP}/{{targetPool}}", target_pools.handle_delete),
    Route(
        "targetPools",
        "addHealthCheck",
        "POST",
        f"{_TP}/{{targetPool}}/addHealthCheck",
        target_pools.handle_add_health_check,
    ),
    Route(
        "targetPools",
        "removeHealthCheck",
        "POST",
        f"{_TP}/{{targetPool}}/removeHealthCheck",
        target_pools.handle_remove_health_check,
    ),
    Route(
        "targetPools",
        "addInstance",
        "POST",
        f"{_TP}/{{targetPool}}/addInstance",
        target_pool_members.handle_add_instance,
    ),
    Route(
        "targetPools",
        "removeInstance",
        "POST",
        f"{_TP}/{{targetPool}}/removeInstance",
        target_pool_members.handle_remove_instance,
    ),
    Route(
        "targetPools",
        "getHealth",
        "POST",
        f"{_TP}/{{targetPool}}/getHealth",
        target_pools.handle_get_health,
    ),
    Route(
        "targetPools",
        "aggregatedList",
        "GET",
        f"{_P}/aggregated/targetPools",
        target_pools.handle_aggregated_list,
    ),
    Route(
        "forwardingRules", "get", "GET", f"{_FR}/{{forwardingRule}}", forwarding_rules.handle_get
    ),
    Route("forwardingRules", "list", "GET", _FR, forwarding_rules.handle_list),
    Route("forwardingRules", "insert", "POST", _FR, forwarding_rules.handle_insert),
    Route(
        "forwardingRules",
        "delete",
        "DELETE",
        f"{_FR}/{{forwardingRule}}",
        forwarding_rules.handle_delete,
    ),
    Route(
        "forwardingRules",
        "aggregatedList",
        "GET",
        f"{_P}/aggregated/forwardingRules",
        forwarding_rules.handle_aggregated_list,
    ),
    Route(
        "globalOperations",
        "get",
        "GET",
        f"{_P}/global/operations/{{operation}}",
        operations_api.handle_get,
    ),
    Route(
        "globalOperations",
        "wait",
        "POST",
        f"{_P}/global/operations/{{operation}}/wait",
        operations_api.handle_wait,
    ),
    Route(
        "regionOperations",
        "get",
        "GET",
        f"{_P}/regions/{{region}}/operations/{{operation}}",
        operations_api.handle_get,
    ),
    Route(
        "regionOperations",
        "wait",
        "POST",
        f"{_P}/regions/{{region}}/operations/{{operation}}/wait",
        operations_api.handle_wait,
    ),
    Route("instances", "get", "GET", _VM, instances.handle_get),
    Route("instances", "setMetadata", "POST", f"{_VM}/setMetadata", instances.handle_set_metadata),
    Route(
        "zoneOperations",
        "get",
        "GET",
        f"{_P}/zones/{{zone}}/operations/{{operation}}",
        operations_api.handle_get,
    ),
    Route(
        "zoneOperations",
        "wait",
        "POST",
        f"{_P}/zones/{{zone}}/operations/{{operation}}/wait",
        operations_api.handle_wait,
    ),
)


# Backend-service load balancers (external and internal passthrough): their checks, backend
# services, instance groups and network endpoint groups.
COMPUTE_ROUTES += (
    *_rows("healthChecks", f"{_P}/global/healthChecks", "healthCheck", lb_health_checks, *_CRUD),
    Route(
        "healthChecks",
        "aggregatedList",
        "GET",
        f"{_P}/aggregated/healthChecks",
        lb_health_checks.handle_aggregated_list,
    ),
    *_rows(
        "regionHealthChecks",
        f"{_P}/regions/{{region}}/healthChecks",
        "healthCheck",
        lb_health_checks,
        *_CRUD,
    ),
    *_rows(
        "regionBackendServices",
        f"{_P}/regions/{{region}}/backendServices",
        "backendService",
        backend_services,
        *_CRUD,
    ),
    *_rows(
        "regionBackendServices",
        f"{_P}/regions/{{region}}/backendServices",
        "backendService",
        backend_health,
        "getHealth",
    ),
    Route(
        "backendServices",
        "aggregatedList",
        "GET",
        f"{_P}/aggregated/backendServices",
        backend_services.handle_aggregated_list,
    ),
    *_rows(
        "instanceGroups",
        f"{_P}/zones/{{zone}}/instanceGroups",
        "instanceGroup",
        instance_groups,
        "get",
        "list",
        "insert",
        "delete",
        "listInstances",
    ),
    *_rows(
        "instanceGroups",
        f"{_P}/zones/{{zone}}/instanceGroups",
        "instanceGroup",
        instance_group_members,
        "addInstances",
        "removeInstances",
    ),
    Route(
        "instanceGroups",
        "aggregatedList",
        "GET",
        f"{_P}/aggregated/instanceGroups",
        instance_groups.handle_aggregated_list,
    ),
    *_rows(
        "networkEndpointGroups",
        f"{_P}/zones/{{zone}}/networkEndpointGroups",
        "networkEndpointGroup",
        network_endpoint_groups,
        "get",
        "list",
        "insert",
        "delete",
    ),
    *_rows(
        "networkEndpointGroups",
        f"{_P}/zones/{{zone}}/networkEndpointGroups",
        "networkEndpointGroup",
        network_endpoints,
        "listNetworkEndpoints",
        "attachNetworkEndpoints",
        "detachNetworkEndpoints",
    ),
    Route(
        "networkEndpointGroups",
        "aggregatedList",
        "GET",
        f"{_P}/aggregated/networkEndpointGroups",
        network_endpoint_groups.handle_aggregated_list,
    ),
)


def find(http_method: str, relative_path: str) -> tuple[Route | None, dict[str, str], bool]:
    """(route, path params, whether the path exists under another HTTP method)."""
    path_known = False
    for route in COMPUTE_ROUTES:
        params = route.match(relative_path)
        if params is None:
            continue
        if route.http_method == http_method:
            return route, params, True
        path_known = True
    return None, {}, path_known
