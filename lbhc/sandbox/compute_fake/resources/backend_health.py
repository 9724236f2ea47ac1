"""regionBackendServices.getHealth: the health of every member of one of the service's backend
groups (every instance of an instance group, every endpoint of a NEG), as the load balancer's
health checking sees it. The body is a ResourceGroupReference {"group": URL}; the answer a
BackendServiceGroupHealth.

One HealthStatus per member and per forwarding rule pointing at the service, as the real
API reports a passthrough load balancer's (each rule's IP is probed apart): `instance` (the
VM's URL), `ipAddress` (the member's: an instance group member's primary internal IP, omitted
if its instance was never seeded; a NEG endpoint's IP), `port`, `forwardingRule`,
`forwardingRuleIp`, `healthState`. With no rule pointing at the service, one status per member
without the rule's fields; an empty group answers no healthStatus at all (the real API omits
empty lists).

Each state comes from the fake's pluggable health source as target pools' do
(ComputeFake.health_source): source(service, instance URL, forwarding rule IP or None), the
backend service dict (kind compute#backendService) standing where a pool would, so the source
tells the check from its healthChecks[0] and the load balancer from its selfLink. None falls
back to the state set with set_instance_health, then HEALTHY. The handler runs without the
store lock held while it asks the source, as targetPools.getHealth does, so a source may be
slow (routes.py _SELF_LOCKING).

Choices where the real API is not documented precisely:
- A group that is not a backend of the service is 400 invalid on `resource.group`, "Group is
  not a backend of this backend service.": the API reference says only that the group is the
  one to query; nothing public that we found shows the answer. The group may be given in any
  form parse_ref accepts; it is compared by canonical URL.
- `port` is the rule's first port (the first of `ports`, the low end of `portRange`), omitted
  for an allPorts rule.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import operations, urls
from ..errors import invalid_value
from ..store import Store
from ..validation import required_ref
from . import common, forwarding_rules, instance_groups, network_endpoint_groups
from .backend_services import KIND
from .common import Request, Response

HEALTH_KIND = "compute#backendServiceGroupHealth"
_NOT_A_BACKEND = "Group is not a backend of this backend service."

Member = tuple[str, str | None]  # (instance URL, member IP or None)


def members(store: Store, group: dict[str, Any]) -> list[Member]:
    """The members of an instance group or a NEG, in the order they joined."""
    if group["kind"] == network_endpoint_groups.KIND.kind:
        zone_url = str(group["zone"])
        return [
            (f"{zone_url}/instances/{e['instance']}", str(e["ipAddress"]))
            for e in network_endpoint_groups.endpoints(store, group)
        ]
    found: list[Member] = []
    for member in instance_groups.members(store, group):
        vm = instance_groups.instance_of(store, member["instance"])
        ip = str(vm["networkInterfaces"][0]["networkIP"]) if vm is not None else None
        found.append((member["instance"], ip))
    return found


def _first_port(rule: dict[str, Any]) -> int | None:
    if rule.get("allPorts"):
        return None
    first = (rule.get("ports") or [None])[0] or rule.get("portRange")
    return int(str(first).split("-")[0]) if first else None


def handle_get_health(req: Request) -> Response:
    """Runs without the store lock held so a pluggable health source may be slow."""
    store, project = req.store, req.project
    with store.lock:
        operations.advance(store)
        name = req.params["backendService"]
        service = copy.deepcopy(common.require(store, KIND, project, req.scope, name))
        ref = required_ref(req.json, "group")
        parsed = urls.parse_ref(ref, project)
        backends = [b["group"] for b in service.get("backends", [])]
        if parsed is None or parsed.url not in backends:
            raise invalid_value("resource.group", ref, _NOT_A_BACKEND)
        group = common.require(
            store, _group_kind(parsed.collection), parsed.project, parsed.scope, parsed.name
        )
        listed = members(store, group)
        rules = copy.deepcopy(
            forwarding_rules.pointing_at(store, project, req.scope, service["selfLink"])
        )
        fallback = dict(store.instance_health)
        source = store.health_source
    statuses: list[dict[str, Any]] = []
    targets: list[dict[str, Any] | None] = list(rules) or [None]
    for instance, ip in listed:
        for rule in targets:
            rule_ip = None if rule is None else str(rule["IPAddress"])
            state = source(service, instance, rule_ip) if source is not None else None
            status: dict[str, Any] = {"healthState": state or fallback.get(instance) or "HEALTHY"}
            status["instance"] = instance
            if ip is not None:
                status["ipAddress"] = ip
            if rule is not None:
                port = _first_port(rule)
                if port is not None:
                    status["port"] = port
                status["forwardingRule"] = rule["selfLink"]
                status["forwardingRuleIp"] = rule_ip
            statuses.append(status)
    body: dict[str, Any] = {"kind": HEALTH_KIND}
    if statuses:
        body["healthStatus"] = statuses
    return 200, body


def _group_kind(collection: str) -> common.Kind:
    if collection == network_endpoint_groups.KIND.collection:
        return network_endpoint_groups.KIND
    return instance_groups.KIND
