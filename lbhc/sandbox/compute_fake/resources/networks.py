"""Global networks: read-only over the API, seeded by the fake's owner, with the firewalls in
effect on each (getEffectiveFirewalls): its VPC firewall rules and the firewall policies the
owner associated with it (ComputeFake.add_firewall_policy)."""

from __future__ import annotations

import copy
from typing import Any

from .. import urls
from ..errors import invalid_value, not_found
from ..store import Store
from . import common
from .common import Kind, Request, Response

KIND = Kind(
    collection="networks",
    kind="compute#network",
    label="network",
    fields=frozenset(),  # no API mutations are served
)


def seed(store: Store, project: str, name: str) -> dict[str, Any]:
    """An auto-mode VPC network as `gcloud compute networks create` makes by default."""
    fields = {
        "autoCreateSubnetworks": True,
        "routingConfig": {"routingMode": "REGIONAL"},
        "networkFirewallPolicyEnforcementOrder": "AFTER_CLASSIC_FIREWALL",
    }
    network = common.new_resource(store, KIND, project, "global", name, fields)
    store.bucket(KIND.collection, project, "global")[name] = network
    return network


ENFORCEMENT_ORDERS = frozenset({"AFTER_CLASSIC_FIREWALL", "BEFORE_CLASSIC_FIREWALL"})
POLICY_TYPES = frozenset({"HIERARCHY", "NETWORK"})
_POLICY_FIELDS = frozenset({"name", "shortName", "displayName", "type", "priority", "rules"})
_RULE_ACTIONS = frozenset({"allow", "deny", "goto_next"})


def check_policy(policy: dict[str, Any]) -> dict[str, Any]:
    """An effective policy as the owner gives it (NetworksGetEffectiveFirewallsResponse-
    EffectiveFirewallPolicy fields), checked enough that the prober can evaluate it."""
    unknown = set(policy) - _POLICY_FIELDS
    if unknown:
        raise ValueError(f"unknown firewall policy fields {sorted(unknown)}")
    if policy.get("type") not in POLICY_TYPES:
        raise ValueError(f"firewall policy type must be one of {sorted(POLICY_TYPES)}")
    if not policy.get("name"):
        raise ValueError("a firewall policy needs a name")
    for rule in policy.get("rules") or []:
        if rule.get("action") not in _RULE_ACTIONS:
            raise ValueError(f"firewall policy rule action must be one of {sorted(_RULE_ACTIONS)}")
        if not isinstance(rule.get("priority"), int):
            raise ValueError("a firewall policy rule needs an integer priority")
    return copy.deepcopy(policy)


def effective_policies(store: Store, project: str, network: str) -> list[dict[str, Any]]:
    """The network's firewall policies in evaluation order: hierarchical ones in the order
    they were added (organization first), then the network policy."""
    policies = store.firewall_policies.get((project, network), [])
    ordered = [p for p in policies if p["type"] == "HIERARCHY"]
    ordered += [p for p in policies if p["type"] == "NETWORK"]
    return copy.deepcopy(ordered)


def resolve(store: Store, project: str, ref: str, field: str) -> str:
    """Canonical URL of an existing network given a URL, a partial path or a bare name."""
    if "/" in ref:
        parsed = urls.parse_ref(ref, project)
    else:
        parsed = urls.Ref(project, "global", KIND.collection, ref)
    if parsed is None or parsed.scope != "global" or parsed.collection != KIND.collection:
        raise invalid_value(field, ref, "Must be a network URL.")
    if store.get(KIND.collection, parsed.project, "global", parsed.name) is None:
        raise not_found(parsed.path)
    return parsed.url


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, req.params["network"])


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_get_effective_firewalls(req: Request) -> Response:
    """The network's VPC firewall rules (full resources, as firewalls.list returns them) and its
    firewall policies, as networks.getEffectiveFirewalls answers."""
    store, project, name = req.store, req.project, req.params["network"]
    network = common.require(store, KIND, project, "global", name)
    rules = [
        r
        for r in store.items("firewalls", project, "global")
        if r["network"] == network["selfLink"]
    ]
    body: dict[str, Any] = {}
    if rules:
        body["firewalls"] = copy.deepcopy(sorted(rules, key=lambda r: str(r["name"])))
    policies = effective_policies(store, project, name)
    if policies:
        body["firewallPolicys"] = policies
    return 200, body
