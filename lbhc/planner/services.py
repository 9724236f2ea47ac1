"""Service predicates: which Services' target pools should carry the shared check."""

from __future__ import annotations

from lbhc.model.cluster import Service
from lbhc.planner.config import PlannerConfig

LOAD_BALANCER = "LoadBalancer"
CLUSTER_POLICY = "Cluster"
# The class that selects the cloud provider's own target-pool network load balancer
# (kubernetes/cloud-provider-gcp providers/gce/gce_annotations.go,
# LegacyRegionalExternalLoadBalancerClass). Its internal twin,
# LegacyRegionalInternalLoadBalancerClass, selects a backend-service internal LB: no pool.
LEGACY_EXTERNAL_CLASS = "networking.gke.io/l4-regional-external-legacy"


def is_load_balancer(service: Service) -> bool:
    return service.spec.type == LOAD_BALANCER


def uses_cluster_traffic_policy(service: Service) -> bool:
    return service.spec.external_traffic_policy == CLUSTER_POLICY


def has_legacy_external_class(service: Service) -> bool:
    """Asks the cloud provider itself for a target-pool LB: EnsureLoadBalancer skips a
    Service with any other class (gce_loadbalancer.go), and ensureExternalLoadBalancer keeps
    one with this class whatever its annotations say (gce_loadbalancer_external.go)."""
    return service.spec.load_balancer_class == LEGACY_EXTERNAL_CLASS


def is_handled_by_default_controller(service: Service, config: PlannerConfig) -> bool:
    """A loadBalancerClass hands the LB to another controller unless it is one of ours or
    the one that names the cloud provider's target-pool LB."""
    lb_class = service.spec.load_balancer_class
    return (
        lb_class is None
        or has_legacy_external_class(service)
        or lb_class in config.load_balancer_classes
    )


_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0", ""})


def is_opted_out(service: Service, config: PlannerConfig) -> bool:
    value = service.metadata.annotations.get(config.opt_out_annotation, "")
    return value.strip().lower() in _TRUE


def unclear_opt_out(service: Service, config: PlannerConfig) -> str | None:
    """A warning for an opt-out annotation that is neither true nor false: read as false
    (the check is attached), which may not be what its author meant."""
    value = service.metadata.annotations.get(config.opt_out_annotation)
    if value is None or value.strip().lower() in _TRUE | _FALSE:
        return None
    shown = value if len(value) <= 32 else value[:32] + "..."
    return (
        f"Service {service.key}: {config.opt_out_annotation}={shown!r} is neither true nor "
        "false; read as false (not opted out)"
    )


def ineligibility(service: Service, config: PlannerConfig) -> str | None:
    """Why a Service's pool must not carry the shared check, or None when it should."""
    if not is_load_balancer(service):
        return f"Service {service.key} is type {service.spec.type}, not LoadBalancer"
    if not is_handled_by_default_controller(service, config):
        return f"Service {service.key} has loadBalancerClass {service.spec.load_balancer_class}"
    if service.metadata.deletion_timestamp:
        # Its load balancer is on its way out (the cloud provider's cleanup finalizer):
        # detaching now lets the shared check be collected without waiting on the pool.
        return f"Service {service.key} is being deleted"
    if is_opted_out(service, config):
        return f"Service {service.key} opted out with {config.opt_out_annotation}"
    if not uses_cluster_traffic_policy(service):
        return (
            f"Service {service.key} uses externalTrafficPolicy "
            f"{service.spec.external_traffic_policy}; its pool needs its own per-service check"
        )
    return None
