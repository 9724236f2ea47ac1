"""What each Compute API method costs in IAM permissions, keyed by the discovery document's
(resource, method) as the Compute fake's route table names them. From Google's Compute Engine
IAM reference: inserting, changing or deleting a firewall rule also needs the network's
updatePolicy; pointing a pool at a legacy check needs useReadOnly on the check; getHealth is
authorised as a get of the pool; waiting on an operation as a get of it."""

from __future__ import annotations

from collections.abc import Iterable

from lbhc.sandbox.compute_fake import routes
from lbhc.sandbox.compute_fake.journal import JournalEntry

_UPDATE_POLICY = "compute.networks.updatePolicy"
METHOD_PERMISSIONS: dict[tuple[str, str], frozenset[str]] = {
    ("httpHealthChecks", "get"): frozenset({"compute.httpHealthChecks.get"}),
    ("httpHealthChecks", "list"): frozenset({"compute.httpHealthChecks.list"}),
    ("httpHealthChecks", "insert"): frozenset({"compute.httpHealthChecks.create"}),
    ("httpHealthChecks", "update"): frozenset({"compute.httpHealthChecks.update"}),
    ("httpHealthChecks", "patch"): frozenset({"compute.httpHealthChecks.update"}),
    ("httpHealthChecks", "delete"): frozenset({"compute.httpHealthChecks.delete"}),
    ("firewalls", "get"): frozenset({"compute.firewalls.get"}),
    ("networks", "get"): frozenset({"compute.networks.get"}),
    ("networks", "getEffectiveFirewalls"): frozenset({"compute.networks.getEffectiveFirewalls"}),
    ("firewalls", "list"): frozenset({"compute.firewalls.list"}),
    ("firewalls", "insert"): frozenset({"compute.firewalls.create", _UPDATE_POLICY}),
    ("firewalls", "update"): frozenset({"compute.firewalls.update", _UPDATE_POLICY}),
    ("firewalls", "patch"): frozenset({"compute.firewalls.update", _UPDATE_POLICY}),
    ("firewalls", "delete"): frozenset({"compute.firewalls.delete", _UPDATE_POLICY}),
    ("targetPools", "get"): frozenset({"compute.targetPools.get"}),
    ("targetPools", "list"): frozenset({"compute.targetPools.list"}),
    ("targetPools", "aggregatedList"): frozenset({"compute.targetPools.list"}),
    ("targetPools", "getHealth"): frozenset({"compute.targetPools.get"}),
    ("targetPools", "addHealthCheck"): frozenset(
        {"compute.targetPools.addHealthCheck", "compute.httpHealthChecks.useReadOnly"}
    ),
    ("targetPools", "removeHealthCheck"): frozenset({"compute.targetPools.removeHealthCheck"}),
    ("forwardingRules", "get"): frozenset({"compute.forwardingRules.get"}),
    ("forwardingRules", "list"): frozenset({"compute.forwardingRules.list"}),
    # Backend-service load balancers, read only. listInstances is authorised as a list of
    # the group (Compute Engine IAM reference: instanceGroups.listInstances).
    ("regionBackendServices", "list"): frozenset({"compute.regionBackendServices.list"}),
    # The API reference's IAM section for regionBackendServices.getHealth.
    ("regionBackendServices", "getHealth"): frozenset({"compute.regionBackendServices.get"}),
    ("healthChecks", "list"): frozenset({"compute.healthChecks.list"}),
    ("regionHealthChecks", "list"): frozenset({"compute.regionHealthChecks.list"}),
    ("instanceGroups", "listInstances"): frozenset({"compute.instanceGroups.list"}),
    ("instances", "get"): frozenset({"compute.instances.get"}),
    ("globalOperations", "get"): frozenset({"compute.globalOperations.get"}),
    ("globalOperations", "wait"): frozenset({"compute.globalOperations.get"}),
    ("regionOperations", "get"): frozenset({"compute.regionOperations.get"}),
    ("regionOperations", "wait"): frozenset({"compute.regionOperations.get"}),
}
OPERATION_PERMISSIONS = frozenset({"compute.globalOperations.get", "compute.regionOperations.get"})


def api_method(entry: JournalEntry) -> tuple[str, str]:
    """(resource, method) of a request, as the discovery document names it."""
    relative = entry.path.removeprefix(routes.API_PREFIX)
    route, _, _ = routes.find(entry.method, relative)
    assert route is not None, f"lbhc sent a request the Compute API has no method for: {entry}"
    return route.resource, route.method


def permissions_for(entries: Iterable[JournalEntry]) -> set[str]:
    """What the requests needed; an API method missing from the table fails loudly, so a
    new kind of call cannot go unaccounted for."""
    needed: set[str] = set()
    for entry in entries:
        method = api_method(entry)
        assert method in METHOD_PERMISSIONS, f"no IAM mapping for {method}: add it"
        needed |= METHOD_PERMISSIONS[method]
    return needed
