"""Global VPC firewall rules."""

from __future__ import annotations

from typing import Any

from ..errors import invalid, invalid_value, required
from ..store import Store
from ..validation import (
    check_cidr,
    check_known_fields,
    check_name,
    check_port_spec,
    opt_int,
    opt_str,
    str_list,
)
from . import common, networks
from .common import Kind, Request, Response

KIND = Kind(
    collection="firewalls",
    kind="compute#firewall",
    label="firewall",
    fields=frozenset(
        {
            "allowed",
            "creationTimestamp",
            "denied",
            "description",
            "destinationRanges",
            "direction",
            "disabled",
            "id",
            "kind",
            "logConfig",
            "name",
            "network",
            "params",
            "priority",
            "selfLink",
            "sourceRanges",
            "sourceServiceAccounts",
            "sourceTags",
            "targetServiceAccounts",
            "targetTags",
        }
    ),
)

_USER_FIELDS = KIND.fields - common.OUTPUT_ONLY - {"name"}
_PROTOCOLS = frozenset({"tcp", "udp", "icmp", "esp", "ah", "sctp", "ipip", "all"})
_PORTED = frozenset({"tcp", "udp", "sctp"})
_LISTS = (
    "sourceRanges",
    "destinationRanges",
    "sourceTags",
    "targetTags",
    "sourceServiceAccounts",
    "targetServiceAccounts",
)
_ANYWHERE = "0.0.0.0/0"


def _rules(value: Any, field: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_value(field, value, "Expected a list.")
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(entry, dict):
            raise invalid_value(where, entry, "Expected an object.")
        check_known_fields(entry, ("IPProtocol", "ports"), where)
        protocol = entry.get("IPProtocol")
        if not protocol:
            raise required(f"{where}.IPProtocol")
        protocol = str(protocol).lower()
        if protocol not in _PROTOCOLS and not (protocol.isdigit() and int(protocol) <= 255):
            raise invalid_value(f"{where}.IPProtocol", entry["IPProtocol"], "Invalid protocol.")
        rule: dict[str, Any] = {"IPProtocol": protocol}
        ports = str_list(entry, "ports", f"{where}.ports")
        if ports and protocol not in _PORTED:
            raise invalid_value(f"{where}.ports", ports, "Ports require tcp, udp or sctp.")
        for j, port in enumerate(ports):
            check_port_spec(port, f"{where}.ports[{j}]")
        if ports:
            rule["ports"] = ports
        out.append(rule)
    return out


def build(store: Store, project: str, body: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Validated user fields of `body` laid over `base` (the current rule for patch)."""
    check_known_fields(body, KIND.fields, "resource")
    merged = {k: v for k, v in base.items() if k in _USER_FIELDS}
    merged.update({k: v for k, v in body.items() if k in _USER_FIELDS and v is not None})
    out: dict[str, Any] = {}
    description = opt_str(merged, "description", "resource.description")
    if description:
        out["description"] = description
    network_ref = opt_str(merged, "network", "resource.network") or "global/networks/default"
    out["network"] = networks.resolve(store, project, network_ref, "resource.network")
    if base and base.get("network") not in (None, out["network"]):
        raise invalid_value("resource.network", network_ref, "Cannot change a firewall's network.")
    direction = opt_str(merged, "direction", "resource.direction") or "INGRESS"
    if direction not in ("INGRESS", "EGRESS"):
        raise invalid_value("resource.direction", direction, "Must be INGRESS or EGRESS.")
    out["direction"] = direction
    priority = opt_int(merged, "priority", "resource.priority", 0, 65535)
    out["priority"] = 1000 if priority is None else priority
    allowed = _rules(merged.get("allowed"), "resource.allowed")
    denied = _rules(merged.get("denied"), "resource.denied")
    if bool(allowed) == bool(denied):
        raise invalid("Exactly one of 'allowed' or 'denied' must be specified.")
    out["allowed" if allowed else "denied"] = allowed or denied
    for key in _LISTS:
        values = str_list(merged, key, f"resource.{key}")
        if key.endswith("Ranges"):
            for i, cidr in enumerate(values):
                check_cidr(cidr, f"resource.{key}[{i}]")
        if values:  # the real API omits empty repeated fields
            out[key] = values
    _check_direction(out)
    disabled = merged.get("disabled", False)
    if not isinstance(disabled, bool):
        raise invalid_value("resource.disabled", disabled, "Expected a boolean.")
    out["disabled"] = disabled
    log_config = merged.get("logConfig") or {"enable": False}
    if not isinstance(log_config, dict):
        raise invalid_value("resource.logConfig", log_config, "Expected an object.")
    check_known_fields(log_config, ("enable", "metadata"), "resource.logConfig")
    out["logConfig"] = {**log_config, "enable": bool(log_config.get("enable", False))}
    return out


def _check_direction(out: dict[str, Any]) -> None:
    if "targetTags" in out and "targetServiceAccounts" in out:
        raise invalid("targetTags and targetServiceAccounts cannot be used together.")
    if out["direction"] == "INGRESS":
        if not any(k in out for k in ("sourceRanges", "sourceTags", "sourceServiceAccounts")):
            out["sourceRanges"] = [_ANYWHERE]  # the real API's default ingress source
    else:
        if "sourceTags" in out or "sourceServiceAccounts" in out:
            raise invalid("EGRESS rules cannot have sourceTags or sourceServiceAccounts.")
        out.setdefault("destinationRanges", [_ANYWHERE])


def seed(store: Store, project: str, name: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A rule as an insert of `fields` (camelCase REST fields) would make it: validated and
    defaulted (network "default", INGRESS, priority 1000); its network must exist."""
    if store.taken(KIND.collection, project, "global", name):
        raise ValueError(f"firewall {project}/{name} already exists")
    fields = build(store, project, fields, {})
    rule = common.new_resource(store, KIND, project, "global", name, fields)
    store.bucket(KIND.collection, project, "global")[name] = rule
    return rule


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, req.params["firewall"])


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    name = check_name(req.json.get("name"))
    return common.insert(req, KIND, name, build(req.store, req.project, req.json, {}))


def handle_update(req: Request) -> Response:
    body = req.json

    def rebuild(current: dict[str, Any]) -> dict[str, Any]:
        # PUT replaces everything, but an omitted network means "unchanged", not "default".
        full = body if "network" in body else {**body, "network": current["network"]}
        return build(req.store, req.project, full, {"network": current["network"]})

    return common.replace(req, KIND, req.params["firewall"], "update", rebuild)


def handle_patch(req: Request) -> Response:
    body = req.json
    return common.replace(
        req,
        KIND,
        req.params["firewall"],
        "patch",
        lambda current: build(req.store, req.project, body, current),
    )


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, req.params["firewall"])
