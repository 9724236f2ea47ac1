"""IAM permissions lbhc's GCE calls need, as data, so Terraform and docs can be checked
against the code instead of copied from it."""

from __future__ import annotations

# method (as named in lbhc.gce.client) -> permissions it needs
PERMISSIONS_BY_CALL: dict[str, tuple[str, ...]] = {
    "get_http_health_check": ("compute.httpHealthChecks.get",),
    # Coverage: which check each pool carries, whoever made it.
    "list_http_health_checks": ("compute.httpHealthChecks.list",),
    "insert_http_health_check": ("compute.httpHealthChecks.create",),
    "update_http_health_check": ("compute.httpHealthChecks.update",),
    "delete_http_health_check": ("compute.httpHealthChecks.delete",),
    "get_firewall": ("compute.firewalls.get",),
    # Creating or changing a rule also needs the network's updatePolicy.
    "insert_firewall": ("compute.firewalls.create", "compute.networks.updatePolicy"),
    "update_firewall": ("compute.firewalls.update", "compute.networks.updatePolicy"),
    "delete_firewall": ("compute.firewalls.delete", "compute.networks.updatePolicy"),
    "list_target_pools": ("compute.targetPools.list",),
    # Referencing a check from a pool needs useReadOnly on the check.
    "add_health_check": (
        "compute.targetPools.addHealthCheck",
        "compute.httpHealthChecks.useReadOnly",
    ),
    "remove_health_check": ("compute.targetPools.removeHealthCheck",),
    "list_forwarding_rules": ("compute.forwardingRules.list",),
    # GCE's own health view, within the controller's read budget, and `status --lb-health`;
    # a pool's instance list only to confirm that getHealth refused a non-member.
    "get_health": ("compute.targetPools.get",),
    "pool_instances": ("compute.targetPools.get",),
    # Whether the health checkers reach the nodes: the network's effective firewall, and the
    # order its network firewall policy is enforced in.
    "get_effective_firewalls": ("compute.networks.getEffectiveFirewalls",),
    "get_network": ("compute.networks.get",),
    # Backend-service load balancers (ingress-gce's, the cloud provider's internal ones):
    # read to tell coverage and drain, never written.
    "list_backend_services": ("compute.regionBackendServices.list",),
    "list_health_checks": ("compute.healthChecks.list",),
    "list_region_health_checks": ("compute.regionHealthChecks.list",),
    "list_group_instances": ("compute.instanceGroups.list",),
    # Their GCE health view, within the same read budget: a whole backend group per call.
    "backend_health": ("compute.regionBackendServices.get",),
    # Whether gce.node_tags are the nodes' own: a few nodes' VMs, once at start.
    "instance_tags": ("compute.instances.get",),
    "wait_global_operation": ("compute.globalOperations.get",),
    "wait_region_operation": ("compute.regionOperations.get",),
}


def required_permissions() -> tuple[str, ...]:
    return tuple(sorted({p for perms in PERMISSIONS_BY_CALL.values() for p in perms}))


# With a Shared VPC (network_project), these calls go to the host project: the firewall rule
# lives with the network, and its operations with it.
HOST_PROJECT_CALLS = (
    "get_effective_firewalls",
    "get_network",
    "get_firewall",
    "insert_firewall",
    "update_firewall",
    "delete_firewall",
    "wait_global_operation",
)


def host_project_permissions() -> tuple[str, ...]:
    """What the role in a Shared VPC's host project needs (the rest: the service project)."""
    return tuple(sorted({p for call in HOST_PROJECT_CALLS for p in PERMISSIONS_BY_CALL[call]}))
