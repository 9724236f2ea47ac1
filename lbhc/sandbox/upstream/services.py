"""A LoadBalancer Service as today's GCE cloud provider reads it (from the raw API object:
it needs fields lbhc's projections leave out), and which controller handles it:
kubernetes/cloud-provider-gcp providers/gce/gce_util.go (shouldProcessNetLB, usesL4RBS),
gce_annotations.go (GetLoadBalancerAnnotationType) and k8s.io/cloud-provider's
servicehelpers.GetServiceHealthCheckPathPort."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from . import names


class Handler(enum.Enum):
    TARGET_POOL = "target-pool"  # the cloud provider's own NetLB (ensureExternalLoadBalancer)
    RBS = "rbs"  # ingress-gce's regional backend service NetLB
    INTERNAL = "internal"  # an internal load balancer (not modelled)
    ELSEWHERE = "elsewhere"  # another loadBalancerClass: not the cloud provider's at all


@dataclass(frozen=True)
class ServiceView:
    namespace: str
    name: str
    uid: str
    type: str
    traffic_policy: str
    health_check_node_port: int
    ports: tuple[tuple[int, str], ...]  # (port, protocol)
    annotations: tuple[tuple[str, str], ...]
    load_balancer_class: str | None
    finalizers: tuple[str, ...]
    deleting: bool
    ingress_ips: tuple[str, ...]
    source_ranges: tuple[str, ...]

    @classmethod
    def of(cls, obj: dict[str, Any]) -> ServiceView:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            type=str(spec.get("type") or "ClusterIP"),
            traffic_policy=str(spec.get("externalTrafficPolicy") or "Cluster"),
            health_check_node_port=int(spec.get("healthCheckNodePort") or 0),
            ports=tuple(
                (int(p.get("port") or 0), str(p.get("protocol") or "TCP"))
                for p in spec.get("ports") or []
            ),
            annotations=tuple(sorted((meta.get("annotations") or {}).items())),
            load_balancer_class=spec.get("loadBalancerClass"),
            finalizers=tuple(meta.get("finalizers") or ()),
            deleting=bool(meta.get("deletionTimestamp")),
            ingress_ips=tuple(str(i.get("ip") or "") for i in ingress if i.get("ip")),
            source_ranges=tuple(spec.get("loadBalancerSourceRanges") or ()),
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def lb_name(self) -> str:
        return names.load_balancer_name(self.uid)

    @property
    def port_numbers(self) -> tuple[int, ...]:
        return tuple(port for port, _ in self.ports) or (80,)

    @property
    def protocol(self) -> str:
        """getProtocol: the first port's (the service controller requires them all alike)."""
        return self.ports[0][1] if self.ports else "TCP"

    def annotation(self, key: str) -> str | None:
        return dict(self.annotations).get(key)

    def health_check_path_port(self) -> tuple[str, int]:
        """servicehelpers.GetServiceHealthCheckPathPort: ("/healthz", healthCheckNodePort)
        for a Local LoadBalancer Service that has one, else ("", 0)."""
        local = self.type == "LoadBalancer" and self.traffic_policy == "Local"
        if not local or not self.health_check_node_port:
            return "", 0
        return "/healthz", self.health_check_node_port

    def fingerprint(self) -> tuple[Any, ...]:
        """What makes the service controller ensure the load balancer again (its
        needsUpdate, in part): a change of any of these."""
        return (
            self.uid,
            self.type,
            self.traffic_policy,
            self.health_check_node_port,
            self.ports,
            self.annotations,
            self.source_ranges,
        )


def handler(service: ServiceView) -> Handler:
    """Who makes this Service's load balancer. EnsureLoadBalancer ignores a loadBalancerClass
    other than the legacy ones; GetLoadBalancerAnnotationType sends internal ones to
    ensureInternalLoadBalancer; shouldProcessNetLB keeps a Service carrying the cloud
    provider's NetLB finalizer and leaves usesL4RBS ones (class, annotation or ingress-gce's
    finalizers) to ingress-gce."""
    lb_class = service.load_balancer_class
    if lb_class == names.LEGACY_INTERNAL_CLASS:
        return Handler.INTERNAL
    if lb_class is not None and lb_class != names.LEGACY_EXTERNAL_CLASS:
        return Handler.RBS if lb_class == names.RBS_CLASS else Handler.ELSEWHERE
    if lb_class is None and any(
        service.annotation(key) in names.INTERNAL_TYPES for key in names.LB_TYPE_ANNOTATIONS
    ):
        return Handler.INTERNAL
    if lb_class is not None or names.NETLB_FINALIZER_V1 in service.finalizers:
        return Handler.TARGET_POOL
    if uses_l4_rbs(service):
        return Handler.RBS
    return Handler.TARGET_POOL


def uses_l4_rbs(service: ServiceView) -> bool:
    """gce_util.go usesL4RBS, without its last test (an existing forwarding rule with a backend
    service under the load balancer's name: ingress-gce names its rules otherwise). Its class
    test never decides in `handler`, which has sent every other class away already, as
    EnsureLoadBalancer does before shouldProcessNetLB; it is kept as upstream has it."""
    return (
        service.load_balancer_class == names.RBS_CLASS
        or service.annotation(names.RBS_ANNOTATION) == names.RBS_ENABLED
        or names.NETLB_FINALIZER_V2 in service.finalizers
        or names.NETLB_FINALIZER_V3 in service.finalizers
    )
