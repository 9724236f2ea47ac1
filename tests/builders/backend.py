"""Backend-service load balancers as lbhc reads them: ingress-gce's shared check and the cloud
provider's internal one, backend services, their instance groups and NEGs, their rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from lbhc.model.backend import BackendService, BackendView, HealthCheck
from lbhc.model.cloud import COMPUTE_URL_PREFIX, ForwardingRule, resource_path
from lbhc.model.cluster import Service
from lbhc.planner.backend_lbs import BACKEND_SERVICE_ANNOTATION
from tests.builders.constants import CLOUD_PROVIDER_UID, PROJECT, REGION
from tests.builders.model import service

BASE = f"{COMPUTE_URL_PREFIX}projects/{PROJECT}"
ZONE = f"{REGION}-a"  # where tests.builders.kube puts every node

# ingress-gce's shared check for Cluster Services (regional, for external load balancers).
SHARED_HC = HealthCheck(
    "k8s2-axyqjz2d-l4-shared-hc",
    f"{BASE}/regions/{REGION}/healthChecks/k8s2-axyqjz2d-l4-shared-hc",
    region=REGION,
    port=10256,
    request_path="/healthz",
    check_interval_sec=8,
    timeout_sec=1,
    healthy_threshold=1,
    unhealthy_threshold=3,
)
# The cloud provider's internal check: global, non-legacy, named like the legacy node check.
INTERNAL_HC = replace(
    SHARED_HC,
    name=f"k8s-{CLOUD_PROVIDER_UID}-node",
    self_link=f"{BASE}/global/healthChecks/k8s-{CLOUD_PROVIDER_UID}-node",
    region="",
)
TCP_HC = replace(
    SHARED_HC,
    name="tcp",
    self_link=f"{BASE}/global/healthChecks/tcp",
    type="TCP",
    request_path="",
)
SHARED_GROUP = f"{BASE}/zones/{ZONE}/instanceGroups/k8s-ig--{CLOUD_PROVIDER_UID}"


def instance(node: str) -> str:
    return f"{BASE}/zones/{ZONE}/instances/{node}"


def neg(name: str) -> str:
    return f"{BASE}/zones/{ZONE}/networkEndpointGroups/{name}"


def backend(name: str, check: HealthCheck | None, **fields: object) -> BackendService:
    return BackendService(
        name,
        f"{BASE}/regions/{REGION}/backendServices/{name}",
        region=REGION,
        health_checks=(check.self_link,) if check else (),
        **fields,  # type: ignore[arg-type]
    )


def rule_to(backend_service: BackendService, ip: str) -> ForwardingRule:
    return ForwardingRule(
        f"rule-{backend_service.name}",
        ip_address=ip,
        backend_service=backend_service.self_link,
        scheme=backend_service.scheme,
    )


def annotated(name: str, backend_name: str, policy: str = "Cluster") -> Service:
    """A Service as ingress-gce leaves it: the backend service's name recorded on it."""
    return service(name, policy=policy, annotations={BACKEND_SERVICE_ANNOTATION: backend_name})


def backend_view(
    services: Iterable[BackendService],
    members: Mapping[str, Iterable[str]] | None = None,
    checks: Iterable[HealthCheck] = (SHARED_HC, INTERNAL_HC, TCP_HC),
) -> BackendView:
    """`members`: group URL -> node names in it, as listInstances shows them."""
    return BackendView(
        tuple(services),
        {resource_path(c.self_link): c for c in checks},
        {
            resource_path(group): frozenset(resource_path(instance(n)) for n in nodes)
            for group, nodes in (members or {}).items()
        },
        unreadable="",
    )
