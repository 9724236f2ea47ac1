"""lbhc's projections (lbhc.model.cluster) for the planner's tests, and the snapshots and
planner config around them. Each projection is the API dict from tests.builders.kube decoded
by lbhc's own decoder (the projection's model_validate, as lbhc.kube does for what it lists
and watches), so the object a planner test reasons about and the one a fake API server
serves cannot drift apart."""

from __future__ import annotations

import uuid
from typing import Any

from lbhc.model.cloud import CloudSnapshot
from lbhc.model.cluster import ClusterSnapshot, DaemonSet, HealthProbe, Node, Pod, Service
from lbhc.planner.config import PlannerConfig
from lbhc.planner.planner import plan
from lbhc.planner.status import StatusReport, assess
from tests.builders import kube
from tests.builders.constants import CLOUD_PROVIDER_UID, KUBE_SYSTEM_UID, PROJECT, REGION
from tests.builders.kube import MODERN_KUBE_PROXY, TO_BE_DELETED_TAINT, Tweak

# `node(taints=TO_BE_DELETED)`: the cluster autoscaler's mark, as (key, effect) pairs.
TO_BE_DELETED = ((TO_BE_DELETED_TAINT, "NoSchedule"),)
MODERN_IMAGE = MODERN_KUBE_PROXY


def config(**overrides: Any) -> PlannerConfig:
    values: dict[str, Any] = {"project": PROJECT, "region": REGION, "node_tags": ("gke-node",)}
    values.update(overrides)
    return PlannerConfig(**values)


def node(
    name: str = "node-1",
    *tweaks: Tweak,
    kubelet: str = "v1.31.4",
    kube_proxy_field: str | None = "",
    taints: tuple[tuple[str, str], ...] = (),
    taint_value: str = "",
    labels: dict[str, str] | None = None,
    deleting: bool = False,
    internal_ip: str = "",
) -> Node:
    """`taints` are (key, effect) pairs, each with `taint_value`."""
    shorthand = [kube.with_taint(key, effect, taint_value) for key, effect in taints]
    if internal_ip:
        shorthand.append(kube.with_internal_ip(internal_ip))
    obj = kube.node(
        name,
        *shorthand,
        *tweaks,
        kubelet=kubelet,
        kube_proxy_field=kube_proxy_field,
        labels=labels,
        deleting=deleting,
    )
    return Node.model_validate(obj)


def kube_proxy_pod(
    node_name: str,
    *tweaks: Tweak,
    image: str = MODERN_IMAGE,
    namespace: str = "kube-system",
    labels: dict[str, str] | None = None,
    ready: bool = True,
    owner_uid: str = "",
    deleting: bool = False,
) -> Pod:
    fields: dict[str, Any] = {"image": image, "namespace": namespace, "ready": ready}
    if owner_uid:
        fields["owner_uid"] = owner_uid
    if labels is not None:  # else kube-proxy's own labels
        fields["labels"] = labels
    shorthand = (kube.deleting(),) if deleting else ()
    obj = kube.kube_proxy_pod(node_name, *shorthand, *tweaks, **fields)
    return Pod.model_validate(obj)


def kube_proxy_daemonset(name: str = "kube-proxy", *tweaks: Tweak, **fields: Any) -> DaemonSet:
    """`fields` are tests.builders.kube.kube_proxy_daemonset's keywords."""
    return DaemonSet.model_validate(kube.kube_proxy_daemonset(name, *tweaks, **fields))


def service(
    name: str = "web",
    *tweaks: Tweak,
    namespace: str = "default",
    uid: str | None = None,
    type_: str = "LoadBalancer",
    policy: str | None = "Cluster",
    lb_class: str | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
    ingress_ip: str = "",
) -> Service:
    """`uid` None: one derived from the name, stable across runs (pool names derive from it)."""
    shorthand: list[Tweak] = []
    if annotations:
        shorthand.append(kube.with_annotations(annotations))
    if deleting:
        shorthand.append(kube.deleting())
    if ingress_ip:
        shorthand.append(kube.with_ingress_ip(ingress_ip))
    obj = kube.service(
        name,
        *shorthand,
        *tweaks,
        namespace=namespace,
        type_=type_,
        policy=policy,
        lb_class=lb_class,
        uid=uid or str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{namespace}/{name}")),
    )
    return Service.model_validate(obj)


def cluster(
    *,
    nodes: tuple[Node, ...] | None = None,
    services: tuple[Service, ...] = (),
    pods: tuple[Pod, ...] = (),
    gaps: tuple[str, ...] = (),
    daemonsets: tuple[DaemonSet, ...] = (),
    probes: dict[str, HealthProbe] | None = None,
    cloud_provider_uid: str | None = CLOUD_PROVIDER_UID,
    replacement: str | None = None,
) -> ClusterSnapshot:
    """`replacement`: a kube-proxy replacement DaemonSet's name (cilium, anetd) lbhc/kube found."""
    return ClusterSnapshot(
        nodes=(node(),) if nodes is None else nodes,
        services=services,
        kube_proxy_pods=pods,
        kube_system_uid=KUBE_SYSTEM_UID,
        gaps=gaps,
        kube_proxy_daemonsets=daemonsets,
        health_probes=probes or {},
        cloud_provider_uid=cloud_provider_uid,
        kube_proxy_replacement=replacement,
    )


def assessed(
    snapshot: ClusterSnapshot, world: CloudSnapshot, cfg: PlannerConfig | None = None
) -> StatusReport:
    """`lbhc status` as data: the plan, then the report judged from it."""
    cfg = cfg or config()
    return assess(snapshot, world, cfg, plan(snapshot, world, cfg))
