"""The IAM permission list is derived from GceClient's calls, so it cannot go stale."""

from __future__ import annotations

import inspect

from lbhc.gce.client import GceClient
from lbhc.gce.permissions import PERMISSIONS_BY_CALL, required_permissions

# Composite methods that make no call of their own (they call the methods listed).
COMPOSITE = {"read_snapshot", "read_effective_firewall", "read_backends"}
# Calls made inside other methods rather than as public methods.
INTERNAL = {
    "wait_global_operation",
    "wait_region_operation",
    "get_network",
    "get_effective_firewalls",
    "list_region_health_checks",
}


def test_every_gce_call_declares_its_permissions() -> None:
    public = {
        name
        for name, _ in inspect.getmembers(GceClient, inspect.isfunction)
        if not name.startswith("_")
    } - COMPOSITE
    assert public == set(PERMISSIONS_BY_CALL) - INTERNAL
    source = inspect.getsource(GceClient)
    for call in INTERNAL:
        assert f'"{call}"' in source


def test_required_permissions_are_the_documented_minimum() -> None:
    permissions = required_permissions()
    assert "compute.httpHealthChecks.useReadOnly" in permissions
    assert "compute.networks.updatePolicy" in permissions
    # A VM is read (its network tags, to check gce.node_tags), never written.
    assert not any(
        p.endswith(".setIamPolicy")
        or (p.startswith("compute.instances") and p != "compute.instances.get")
        for p in permissions
    )
    assert list(permissions) == sorted(set(permissions))
