"""Zonal instances: get and setMetadata. Instances are seeded by the fake's owner (there is
no instances.insert); the fake models what lbhc's e2e suite touches, the metadata, plus
enough of the rest (zone, status, machine type, one network interface, tags) to look like a VM.

setMetadata, as the real API does it:
- the body is the whole new Metadata: items it leaves out are removed;
- its `fingerprint` must equal the instance's current metadata fingerprint, or the call fails
  with 412 conditionNotMet (an omitted fingerprint does not match either);
- the change lands when the zonal operation reaches DONE, with a new fingerprint (even when
  the items did not change).

Choice where the real API is not documented precisely: the fingerprint is checked again when
the operation completes, so of two calls made with the same fingerprint while the first is
still pending, the second ends DONE with a CONDITION_NOT_MET operation error.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .. import urls
from ..errors import condition_not_met, invalid_value
from ..store import Store
from ..validation import check_known_fields, opt_str
from . import common
from .common import Kind, Request, Response

# Instance's properties in the compute v1 discovery document: what a field mask on
# instances.get may select.
INSTANCE_FIELDS = frozenset(
    {
        "advancedMachineFeatures", "canIpForward", "confidentialInstanceConfig",
        "cpuPlatform", "creationTimestamp", "deletionProtection", "description", "disks",
        "displayDevice", "fingerprint", "guestAccelerators", "hostname", "id",
        "instanceEncryptionKey", "keyRevocationActionType", "kind", "labelFingerprint",
        "labels", "lastStartTimestamp", "lastStopTimestamp", "lastSuspendedTimestamp",
        "localSsdEncryptionMode", "machineType", "metadata", "minCpuPlatform", "name",
        "networkInterfaces", "networkPerformanceConfig", "params",
        "privateIpv6GoogleAccess", "reservationAffinity", "resourcePolicies",
        "resourceStatus", "satisfiesPzi", "satisfiesPzs", "scheduling", "selfLink",
        "serviceAccounts", "shieldedInstanceConfig", "shieldedInstanceIntegrityPolicy",
        "sourceMachineImage", "sourceMachineImageEncryptionKey", "startRestricted",
        "status", "statusMessage", "tags", "workloadIdentityConfig", "zone",
    }
)  # fmt: skip

KIND = Kind(
    collection="instances",
    kind="compute#instance",
    label="instance",
    fields=INSTANCE_FIELDS,  # no instances.insert/update is served: for field masks only
)

METADATA_KIND = "compute#metadata"
# The Metadata body setMetadata takes; `kind` is output only (accepted and ignored).
METADATA_FIELDS = frozenset({"fingerprint", "items", "kind"})
ITEM_FIELDS = frozenset({"key", "value"})

KEY_PATTERN = "[a-zA-Z0-9-_]{1,128}"
_KEY_RE = re.compile(KEY_PATTERN)
MAX_VALUE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 512 * 1024
STALE_FINGERPRINT = "Supplied fingerprint does not match current metadata fingerprint."

DEFAULT_MACHINE_TYPE = "e2-small"
# Instance.status of the discovery document.
STATUSES = frozenset(
    {
        "DEPROVISIONING",
        "PENDING",
        "PENDING_STOP",
        "PROVISIONING",
        "REPAIRING",
        "RUNNING",
        "STAGING",
        "STOPPED",
        "STOPPING",
        "SUSPENDED",
        "SUSPENDING",
        "TERMINATED",
    }
)
_FIRST_AUTO_IP = ipaddress.IPv4Address("10.128.0.2")  # us-central1's default subnet, as GCE


def _metadata(store: Store, items: list[dict[str, str]]) -> dict[str, Any]:
    """A Metadata resource with a fresh fingerprint; empty `items` is omitted, as the API does."""
    metadata: dict[str, Any] = {"kind": METADATA_KIND, "fingerprint": store.ids.fingerprint()}
    if items:
        metadata["items"] = items
    return metadata


def _summary(body: Mapping[str, Any]) -> str:
    text = json.dumps(body, separators=(",", ":"))
    return text if len(text) <= 100 else text[:100] + "..."


def parse_items(body: Mapping[str, Any]) -> list[dict[str, str]]:
    """The items of a setMetadata body, validated as the real API validates them (400s)."""
    check_known_fields(body, METADATA_FIELDS, "resource")
    raw = body.get("items")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise invalid_value("resource.items", raw, "Expected a list.")
    items: list[dict[str, str]] = []
    seen: set[str] = set()
    total = 0
    for i, entry in enumerate(raw):
        where = f"resource.items[{i}]"
        if not isinstance(entry, dict):
            raise invalid_value(where, entry, "Expected an object.")
        check_known_fields(entry, ITEM_FIELDS, where)
        key = entry.get("key")
        if not isinstance(key, str) or _KEY_RE.fullmatch(key) is None:
            raise invalid_value(f"{where}.key", key, f"Must be a match of regex '{KEY_PATTERN}'")
        if key in seen:
            raise invalid_value("resource", _summary(body), f"Metadata has duplicate keys: {key}")
        seen.add(key)
        item = {"key": key}
        value = opt_str(entry, "value", f"{where}.value")
        if value is not None:
            size = len(value.encode("utf-8"))
            if size > MAX_VALUE_BYTES:
                raise invalid_value(
                    f"{where}.value",
                    value[:32] + "...",
                    f"Metadata value must be at most {MAX_VALUE_BYTES} bytes.",
                )
            total += size
            item["value"] = value
        total += len(key)
        items.append(item)
    if total > MAX_TOTAL_BYTES:
        raise invalid_value(
            "resource", _summary(body), f"Metadata must be less than {MAX_TOTAL_BYTES} bytes."
        )
    return items


def _check_fingerprint(instance: dict[str, Any], supplied: str | None) -> None:
    if supplied is None or supplied != instance["metadata"]["fingerprint"]:
        raise condition_not_met(STALE_FINGERPRINT)


def _auto_ip(store: Store, project: str) -> str:
    used = {
        nic.get("networkIP")
        for _, instance in store.scoped(KIND.collection, project)
        for nic in instance.get("networkInterfaces", [])
    }
    address = _FIRST_AUTO_IP
    while str(address) in used:
        address += 1
    return str(address)


def seed(
    store: Store,
    project: str,
    zone: str,
    name: str,
    *,
    network_ip: str | None,
    network: str,
    metadata: Mapping[str, str],
    tags: Iterable[str],
    description: str,
    machine_type: str,
    service_accounts: Iterable[str] = (),
    status: str = "RUNNING",
) -> dict[str, Any]:
    """A VM with one network interface, as `gcloud compute instances create` leaves it (RUNNING
    unless `status` says otherwise, one of STATUSES)."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {sorted(STATUSES)}")
    scope = urls.zone_scope(zone)
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"instance {project}/{zone}/{name} already exists")
    items: list[dict[str, str]] = []
    for key, value in metadata.items():
        if _KEY_RE.fullmatch(key) is None:
            raise ValueError(f"metadata key {key!r} must match {KEY_PATTERN}")
        items.append({"key": key, "value": str(value)})
    address = str(ipaddress.IPv4Address(network_ip)) if network_ip else _auto_ip(store, project)
    network_ref = network if "/" in network else f"global/networks/{network}"
    parsed = urls.parse_ref(network_ref, project)
    if parsed is None or parsed.collection != "networks":
        raise ValueError(f"not a network reference: {network!r}")
    zone_url = urls.zone_url(project, zone)
    fields: dict[str, Any] = {
        "machineType": f"{zone_url}/machineTypes/{machine_type}",
        "status": status,
        "networkInterfaces": [
            {
                "kind": "compute#networkInterface",
                "name": "nic0",
                "network": parsed.url,
                "networkIP": address,
                "stackType": "IPV4_ONLY",
                "fingerprint": store.ids.fingerprint(),
            }
        ],
        "metadata": _metadata(store, items),
    }
    if description:
        fields["description"] = description
    emails = list(dict.fromkeys(service_accounts))
    if emails:
        auth = "https://www.googleapis.com/auth/cloud-platform"
        fields["serviceAccounts"] = [{"email": e, "scopes": [auth]} for e in emails]
    tag_items = list(dict.fromkeys(tags))
    fields["tags"] = {"fingerprint": store.ids.fingerprint()}
    if tag_items:
        fields["tags"]["items"] = tag_items
    instance = common.new_resource(store, KIND, project, scope, name, fields)
    store.bucket(KIND.collection, project, scope)[name] = instance
    return instance


def _instance_name(req: Request) -> str:
    return req.params["instance"]


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, _instance_name(req))


def handle_set_metadata(req: Request) -> Response:
    store, project, scope, name = req.store, req.project, req.scope, _instance_name(req)
    instance = common.require(store, KIND, project, scope, name)
    items = parse_items(req.json)
    supplied = opt_str(req.json, "fingerprint", "resource.fingerprint")
    _check_fingerprint(instance, supplied)

    def apply() -> None:
        live = common.require(store, KIND, project, scope, name)
        _check_fingerprint(live, supplied)  # another setMetadata may have landed meanwhile
        live["metadata"] = _metadata(store, [dict(item) for item in items])

    return common.submit(req, "setMetadata", instance["selfLink"], instance["id"], apply)
