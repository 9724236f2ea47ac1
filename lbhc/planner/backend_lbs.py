"""LoadBalancer Services whose load balancer is a backend service, not a target pool: which
backend service is theirs, and what its check is. lbhc reads these, never writes them.

Who makes them, and how they are named:
- ingress-gce's L4 controllers (RBS external network load balancers; internal ones with GKE
  subsetting) record the names on the Service: `service.kubernetes.io/backend-service`,
  `service.kubernetes.io/healthcheck`, `service.kubernetes.io/tcp-forwarding-rule`, ...
  (kubernetes/ingress-gce pkg/annotations);
- the cloud provider's own internal load balancers name the backend service like a target
  pool, "a" + the Service UID, and describe it with the Service's name (cloud-provider-gcp
  providers/gce/gce_loadbalancer_naming.go makeBackendServiceName, unshared, and
  makeBackendServiceDescription).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lbhc.model.backend import BackendService, BackendView, HealthCheck
from lbhc.model.cloud import parse_description, resource_name, resource_path
from lbhc.model.cluster import Service
from lbhc.planner.claims import SERVICE_NAME_KEY
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import Coverage, probes_kube_proxy_healthz
from lbhc.planner.names import target_pool_name

BACKEND_SERVICE_ANNOTATION = "service.kubernetes.io/backend-service"


@dataclass(frozen=True)
class BackendLb:
    """A Service's backend-service load balancer, as read."""

    service: Service
    backend: BackendService
    check_url: str  # what it carries ("" for none)
    check: HealthCheck | None  # that check as read (None: none, or not readable)
    made_by: str  # "ingress-gce" or "the cloud provider"

    @property
    def check_name(self) -> str:
        return resource_name(self.check_url) if self.check_url else ""


def match_backend_lbs(
    services: Iterable[Service],
    view: BackendView,
    with_pools: set[str],
) -> dict[str, BackendLb]:
    """Service key -> its backend-service load balancer, for LoadBalancer Services of this
    cluster without a target pool (`with_pools`: the keys of those with one)."""
    by_name = {b.name: b for b in view.services}
    found: dict[str, BackendLb] = {}
    for service in services:
        if service.spec.type != "LoadBalancer" or service.key in with_pools:
            continue
        backend, made_by = _backend_of(service, by_name)
        if backend is None:
            continue
        check_url = backend.health_checks[0] if backend.health_checks else ""
        check = view.checks.get(resource_path(check_url)) if check_url else None
        found[service.key] = BackendLb(
            service,
            backend,
            check_url,
            check,
            made_by,
        )
    return found


def _backend_of(
    service: Service, by_name: Mapping[str, BackendService]
) -> tuple[BackendService | None, str]:
    named = service.metadata.annotations.get(BACKEND_SERVICE_ANNOTATION)
    if named and named in by_name:
        return by_name[named], "ingress-gce"
    if service.metadata.uid:
        backend = by_name.get(target_pool_name(service.metadata.uid))
        if backend is not None and _describes(backend, service.key):
            return backend, "the cloud provider"
    return None, ""


def _describes(backend: BackendService, key: str) -> bool:
    """The cloud provider writes the Service's name into an unshared backend service's
    description; a backend service named like one of ours without it is someone else's."""
    return parse_description(backend.description).get(SERVICE_NAME_KEY) == key


def backend_coverage(lb: BackendLb, config: PlannerConfig) -> Coverage:
    """What the load balancer's check does for a node being deleted, as for a pool."""
    if lb.service.spec.external_traffic_policy == "Local":
        return Coverage.LOCAL
    if not lb.check_url:
        return Coverage.NONE
    # Only the HTTP type probes a path: ingress-gce's `k8s2-<hash>-l4-shared-hc` and the cloud
    # provider's internal `k8s-<id>-node` both are such a check.
    check = lb.check
    if check is not None and check.type == "HTTP" and probes_kube_proxy_healthz(check, config):
        return Coverage.BACKEND_SERVICE
    return Coverage.OTHER_CHECK
