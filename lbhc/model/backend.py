"""The resources of backend-service load balancers, as lbhc reads them (and never writes):
external passthrough network load balancers made by ingress-gce's L4 controllers (RBS), and
internal passthrough load balancers made by ingress-gce or by the cloud provider itself
(kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer_internal.go). Their checks are
the non-legacy kind (healthChecks / regionHealthChecks); their backends are instance groups
or GCE_VM_IP network endpoint groups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

EXTERNAL, INTERNAL = "EXTERNAL", "INTERNAL"


@dataclass(frozen=True)
class HealthCheck:
    """A non-legacy health check, global (`region` "") or regional. Only the HTTP kinds can
    probe kube-proxy's /healthz; `port` and `request_path` are the type's sub-object's."""

    name: str
    self_link: str = ""
    region: str = ""
    type: str = "HTTP"
    port: int | None = None
    request_path: str = "/"
    check_interval_sec: int = 5
    timeout_sec: int = 5
    healthy_threshold: int = 2
    unhealthy_threshold: int = 2
    description: str = ""


@dataclass(frozen=True)
class BackendService:
    name: str
    self_link: str = ""
    region: str = ""
    scheme: str = EXTERNAL  # loadBalancingScheme
    protocol: str = "TCP"
    health_checks: tuple[str, ...] = ()  # URLs
    backends: tuple[str, ...] = ()  # group URLs: instance groups or NEGs
    # connectionDraining.drainingTimeoutSec: how long established connections to a backend
    # removed from it may go on (0: cut at once).
    draining_timeout_sec: int = 0
    description: str = ""

    @property
    def internal(self) -> bool:
        return self.scheme == INTERNAL


def is_network_endpoint_group(group_url: str) -> bool:
    return "/networkEndpointGroups/" in group_url


# The shared instance groups the cloud provider and ingress-gce put nodes in, one per zone
# (cloud-provider-gcp gce_loadbalancer_naming.go makeInstanceGroupName: `k8s-ig--<id>`).
SHARED_GROUP_PREFIX = "k8s-ig--"


def is_shared_instance_group(group_url: str) -> bool:
    return not is_network_endpoint_group(group_url) and group_url.rsplit("/", 1)[-1].startswith(
        SHARED_GROUP_PREFIX
    )


@dataclass(frozen=True)
class BackendView:
    """The region's backend services, the checks they may carry (by resource path), and the
    members of the shared instance groups (group path -> instance paths). NEG endpoints are
    not read here: one NEG per zone per Service would make reads grow with Services."""

    services: tuple[BackendService, ...] = ()
    checks: Mapping[str, HealthCheck] = field(default_factory=dict)
    members: Mapping[str, frozenset[str]] = field(default_factory=dict)
    unreadable: str = "not read"  # why not, "" when read
