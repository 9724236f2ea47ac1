"""Small builders for the objects tests talk about: defaults that are valid, overrides that
say what a case is about."""

from __future__ import annotations

import json
import uuid
from typing import Any

from lbhc.model.cloud import (
    CloudSnapshot,
    Firewall,
    ForwardingRule,
    HttpHealthCheck,
    TargetPool,
    http_health_check_url,
    resource_path,
)
from lbhc.model.cluster import ClusterSnapshot, DaemonSet, HealthProbe, Node, Pod, Service
from lbhc.planner.config import PlannerConfig
from lbhc.planner.names import target_pool_name
from lbhc.planner.planner import plan, shared_name
from lbhc.planner.shared import desired_firewall, desired_health_check
from lbhc.planner.status import StatusReport, assess

PROJECT, REGION = "proj", "us-central1"
KUBE_SYSTEM_UID = "0b7c3c5e-1111-2222-3333-444455556666"
# data.uid of ConfigMap kube-system/ingress-uid: the cloud provider's node check's name.
CLOUD_PROVIDER_UID = "5e1d1b2c3a4f6789"


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def config(**overrides: Any) -> PlannerConfig:
    values: dict[str, Any] = {"project": PROJECT, "region": REGION, "node_tags": ("gke-node",)}
    values.update(overrides)
    return PlannerConfig(**values)


def node(
    name: str = "node-1",
    kubelet: str = "v1.31.4",
    *,
    kube_proxy_field: str = "",
    taints: tuple[tuple[str, str], ...] = (),
    labels: dict[str, str] | None = None,
    deleting: bool = False,
    internal_ip: str = "",
    taint_value: str = "",
) -> Node:
    metadata: dict[str, Any] = {"name": name, "labels": labels or {}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    status: dict[str, Any] = {
        "nodeInfo": {"kubeletVersion": kubelet, "kubeProxyVersion": kube_proxy_field}
    }
    if internal_ip:
        status["addresses"] = [{"type": "InternalIP", "address": internal_ip}]
    return Node.model_validate(
        {
            "metadata": metadata,
            "spec": {
                "taints": [{"key": k, "value": taint_value, "effect": e} for k, e in taints],
                "providerID": f"gce://{PROJECT}/us-central1-a/{name}",
            },
            "status": status,
        }
    )


TO_BE_DELETED = (("ToBeDeletedByClusterAutoscaler", "NoSchedule"),)


def kube_proxy_pod(
    node_name: str,
    image: str,
    namespace: str = "kube-system",
    labels: dict[str, str] | None = None,
    *,
    ready: bool = True,
    owner_uid: str = "",
    deleting: bool = False,
) -> Pod:
    metadata: dict[str, Any] = {
        "name": f"kube-proxy-{node_name}",
        "namespace": namespace,
        "labels": {"k8s-app": "kube-proxy"} if labels is None else labels,
    }
    if owner_uid:
        metadata["ownerReferences"] = [
            {"kind": "DaemonSet", "name": "kube-proxy", "uid": owner_uid}
        ]
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    return Pod.model_validate(
        {
            "metadata": metadata,
            "spec": {"nodeName": node_name, "containers": [{"name": "kube-proxy", "image": image}]},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
    )


def http_probe(path: str, port: int | str = 10256) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": port}}


def kube_proxy_daemonset_dict(
    name: str = "kube-proxy",
    *,
    readiness: str | None = "/healthz",
    liveness: str | None = None,
    uid: str = "ds-uid-1",
    labels: dict[str, str] | None = None,
    resource_version: str = "7",
    image: str = "registry.k8s.io/kube-proxy:v1.31.4",
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "kube-proxy", "image": image}
    if readiness is not None:
        container["readinessProbe"] = http_probe(readiness)
    if liveness is not None:
        container["livenessProbe"] = http_probe(liveness)
    selector = {"k8s-app": "kube-proxy"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "uid": uid,
            "resourceVersion": resource_version,
            "labels": {"k8s-app": "kube-proxy"} if labels is None else labels,
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": selector}, "spec": {"containers": [container]}},
        },
    }


def kube_proxy_daemonset(name: str = "kube-proxy", **kwargs: Any) -> DaemonSet:
    return DaemonSet.model_validate(kube_proxy_daemonset_dict(name, **kwargs))


def service(
    name: str = "web",
    namespace: str = "default",
    *,
    uid: str | None = None,
    type_: str = "LoadBalancer",
    policy: str | None = "Cluster",
    lb_class: str | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
    ingress_ip: str = "",
) -> Service:
    spec: dict[str, Any] = {"type": type_}
    status = {"loadBalancer": {"ingress": [{"ip": ingress_ip}]}} if ingress_ip else {}
    if policy is not None:
        spec["externalTrafficPolicy"] = policy
    if lb_class is not None:
        spec["loadBalancerClass"] = lb_class
    return Service.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{namespace}/{name}")),
                "annotations": annotations or {},
                **({"deletionTimestamp": "2026-11-22T00:00:00Z"} if deleting else {}),
            },
            "spec": spec,
            "status": status,
        }
    )


def pool_for(
    svc: Service,
    *,
    health_checks: tuple[str, ...] = (),
    claim: str | None = None,
    described: bool = True,
) -> TargetPool:
    """The pool a cloud provider would have made for `svc`."""
    # The cloud provider writes compact JSON (Go's json.Marshal).
    description = compact({"kubernetes.io/service-name": claim or svc.key}) if described else ""
    name = target_pool_name(svc.metadata.uid)
    return TargetPool(
        name=name,
        region=REGION,
        description=description,
        health_checks=health_checks,
        self_link=f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/regions/{REGION}/targetPools/{name}",
    )


def rule_for(svc: Service, claim: str | None = None, ip: str = "") -> ForwardingRule:
    name = target_pool_name(svc.metadata.uid)
    return ForwardingRule(
        name=name,
        description=compact({"kubernetes.io/service-name": claim or svc.key}),
        ip_address=ip,
    )


def check_url(name: str) -> str:
    return http_health_check_url(PROJECT, name)


def legacy_check(name: str, **overrides: Any) -> HttpHealthCheck:
    """A legacy check as read from GCE; the default is shaped like the cloud provider's."""
    fields: dict[str, Any] = {
        "name": name,
        "description": compact({"kubernetes.io/service-name": name}),
        "request_path": "/healthz",
        "port": 10256,
        "check_interval_sec": 8,
        "timeout_sec": 1,
        "healthy_threshold": 1,
        "unhealthy_threshold": 3,
        "self_link": check_url(name),
    }
    return HttpHealthCheck(**{**fields, **overrides})


def cloud_provider_check(**overrides: Any) -> HttpHealthCheck:
    """The cloud provider's node check, k8s-<uid>-node (makeHTTPHealthCheck)."""
    return legacy_check(f"k8s-{CLOUD_PROVIDER_UID}-node", **overrides)


CLOUD_PROVIDER_CHECK = cloud_provider_check()
MODERN_IMAGE = "registry.k8s.io/kube-proxy:v1.31.4"  # serves /healthz, /livez, drains


def assessed(
    snapshot: ClusterSnapshot, world: CloudSnapshot, cfg: PlannerConfig | None = None
) -> StatusReport:
    """`lbhc status` as data: the plan, then the report judged from it."""
    cfg = cfg or config()
    return assess(snapshot, world, cfg, plan(snapshot, world, cfg))


def cluster(
    *,
    nodes: tuple[Node, ...] | None = None,
    services: tuple[Service, ...] = (),
    pods: tuple[Pod, ...] = (),
    gaps: tuple[str, ...] = (),
    daemonsets: tuple[DaemonSet, ...] = (),
    probes: dict[str, HealthProbe] | None = None,
    cloud_provider_uid: str | None = CLOUD_PROVIDER_UID,
) -> ClusterSnapshot:
    return ClusterSnapshot(
        nodes=(node(),) if nodes is None else nodes,
        services=services,
        kube_proxy_pods=pods,
        kube_system_uid=KUBE_SYSTEM_UID,
        gaps=gaps,
        kube_proxy_daemonsets=daemonsets,
        health_probes=probes or {},
        cloud_provider_uid=cloud_provider_uid,
    )


def names(cfg: PlannerConfig | None = None) -> tuple[str, str, str]:
    """(cluster id, shared resource name, health check URL) for the default cluster."""
    cfg = cfg or config()
    cluster_id, name = shared_name(cluster(), cfg)
    return cluster_id, name, http_health_check_url(cfg.project, name)


def our_check(cfg: PlannerConfig | None = None, **overrides: Any) -> HttpHealthCheck:
    cfg = cfg or config()
    cluster_id, name, url = names(cfg)
    check = desired_health_check(name, cluster_id, cfg)
    return HttpHealthCheck(**{**check.__dict__, "self_link": url, **overrides})


def our_firewall(cfg: PlannerConfig | None = None, **overrides: Any) -> Firewall:
    cfg = cfg or config()
    cluster_id, name, _ = names(cfg)
    firewall = desired_firewall(name, cluster_id, cfg)
    return Firewall(**{**firewall.__dict__, **overrides})


def cloud(
    *,
    check: HttpHealthCheck | None = None,
    firewall: Firewall | None = None,
    pools: tuple[TargetPool, ...] = (),
    rules: tuple[ForwardingRule, ...] = (),
    gaps: tuple[str, ...] = (),
    checks: tuple[HttpHealthCheck, ...] = (),
    checks_complete: bool = True,
) -> CloudSnapshot:
    """`checks`: the project's other legacy checks, as listed (ours comes from `check`)."""
    listed = {resource_path(c.self_link): c for c in (*checks, *((check,) if check else ()))}
    return CloudSnapshot(
        check,
        firewall,
        pools,
        rules,
        gaps,
        health_checks=listed,
        health_checks_complete=checks_complete,
    )
