"""Wrong scope is not silence: a cluster whose load balancers live in another project or region
than lbhc was told looks, from GCE, exactly like a cluster with none, and a plan from that
view would garbage-collect lbhc's check and firewall."""

from __future__ import annotations

from dataclasses import dataclass

from lbhc.model.cloud import CloudSnapshot
from lbhc.model.cluster import ClusterSnapshot, Service
from lbhc.planner.config import PlannerConfig
from lbhc.planner.names import target_pool_name
from lbhc.planner.services import LEGACY_EXTERNAL_CLASS, is_load_balancer

# Services the cloud provider gives no target pool (kubernetes/cloud-provider-gcp
# providers/gce/gce_util.go, shouldProcessNetLB and usesL4RBS): backend-service network LBs,
# made by GKE's ingress-gce (the l4-rbs annotation, or loadBalancerClass
# networking.gke.io/l4-regional-external: any class but the legacy one is another
# controller's), and internal LBs.
RBS_ANNOTATION = "cloud.google.com/l4-rbs"
INTERNAL_LB_ANNOTATIONS = (
    "networking.gke.io/load-balancer-type",
    "cloud.google.com/load-balancer-type",
)


def expects_target_pool(service: Service) -> bool:
    """A LoadBalancer Service the cloud provider implements with a target pool."""
    if not is_load_balancer(service):
        return False
    lb_class = service.spec.load_balancer_class
    if lb_class is not None:  # the legacy class wins over any annotation (shouldProcessNetLB)
        return lb_class == LEGACY_EXTERNAL_CLASS
    annotations = service.metadata.annotations
    if annotations.get(RBS_ANNOTATION) == "enabled":
        return False
    return all(annotations.get(key, "").lower() != "internal" for key in INTERNAL_LB_ANNOTATIONS)


def ingress_ips(service: Service) -> tuple[str, ...]:
    return tuple(i.ip for i in service.status.load_balancer.ingress if i.ip)


@dataclass(frozen=True)
class ScopeMismatch:
    services: int  # LoadBalancer Services with an ingress IP, none found in scope

    def message(self, config: PlannerConfig, *, one_shot: bool = False) -> str:
        """The controller goes on and withholds removals; a one-shot command refuses to plan
        at all, since "No changes" from this view would be a false success."""
        then = "no plan is made from this view" if one_shot else "nothing is removed from this view"
        return (
            f"none of the {self.services} LoadBalancer Service(s) with an ingress IP has its "
            f"target pool or forwarding rule in project {config.project}, region "
            f"{config.region}: check --project and --region; {then}"
        )


def scope_mismatch(cluster: ClusterSnapshot, cloud: CloudSnapshot) -> ScopeMismatch | None:
    """Mismatch when Services that already have a load balancer (an ingress IP) exist and not
    one of them has its pool, or a forwarding rule of any kind (to a pool or a backend
    service, external or internal) with its IP, in the region read. One found is enough to
    trust the scope: the others may be still provisioning. A partial pool or rule listing
    proves nothing, and is a gap of its own."""
    if not cloud.complete:
        return None
    provisioned = [s for s in cluster.services if is_load_balancer(s) and ingress_ips(s)]
    if not provisioned:
        return None
    pools = {pool.name for pool in cloud.target_pools}
    if any(
        expects_target_pool(s) and target_pool_name(s.metadata.uid) in pools
        for s in cluster.services
    ):
        return None
    addresses = {rule.ip_address for rule in cloud.forwarding_rules if rule.ip_address}
    if any(ip in addresses for service in provisioned for ip in ingress_ips(service)):
        return None
    return ScopeMismatch(len(provisioned))
