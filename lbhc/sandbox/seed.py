"""The small cluster the sandbox starts with, as the API would return it: GKE-like nodes with
provider IDs and loopback InternalIPs (where their emulated kube-proxies listen), a kube-proxy
DaemonSet and its Pods, and LoadBalancer Services of both traffic policies."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from lbhc.planner.versions import parse_version

Object = dict[str, Any]
KUBE_PROXY_LABELS = {"k8s-app": "kube-proxy"}
LB_CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
DAEMONSET_UID = str(uuid.uuid5(uuid.NAMESPACE_DNS, "sandbox/kube-system/kube-proxy"))
KUBE_SYSTEM_UID = str(uuid.uuid5(uuid.NAMESPACE_DNS, "sandbox/kube-system"))


@dataclass(frozen=True)
class SandboxSpec:
    nodes: int = 3
    services: int = 4
    local_services: int = 1  # of `services`, how many use externalTrafficPolicy: Local
    # kube-proxy versions, assigned to nodes round-robin.
    kube_proxy_versions: tuple[str, ...] = ("v1.31.4",)
    project: str = "sandbox-project"
    region: str = "us-central1"
    namespace: str = "demo"

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= 200:
            raise ValueError(f"nodes: got {self.nodes}; expected 1 to 200")
        if not 0 <= self.local_services <= self.services <= 500:
            raise ValueError(
                f"services: got {self.services} with {self.local_services} Local; expected "
                "0 to 500 Services, at most all of them Local"
            )
        for version in self.kube_proxy_versions:
            if parse_version(version) is None:
                raise ValueError(f"kube-proxy version {version!r}: expected a form like v1.31.4")
        if not self.kube_proxy_versions:
            raise ValueError("kube-proxy versions: expected at least one")

    @property
    def zone(self) -> str:
        return f"{self.region}-a"


def node_name(index: int) -> str:
    return f"gke-sandbox-default-pool-{index}"


def node_address(index: int) -> str:
    return f"127.0.0.{index + 2}"  # 127.0.0.1 stays the fakes' own address


def node(spec: SandboxSpec, index: int, version: str) -> Object:
    name = node_name(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"sandbox/node/{name}")),
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "cloud.google.com/gke-nodepool": "default-pool",
                "topology.kubernetes.io/zone": spec.zone,
            },
        },
        "spec": {"providerID": f"gce://{spec.project}/{spec.zone}/{name}"},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": node_address(index)},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [{"type": "Ready", "status": "True"}],
            # The kubelet runs the same minor as kube-proxy here; 1.33+ clears the field.
            "nodeInfo": {
                "kubeletVersion": version,
                "kubeProxyVersion": "",
                "osImage": "Container-Optimized OS from Google",
                "containerRuntimeVersion": "containerd://1.7.24",
            },
        },
    }


def readiness_path(versions: tuple[str, ...]) -> str:
    """Gardener's rule: /livez where every node's kube-proxy serves it (>= 1.28)."""
    parsed = [parse_version(v) or (0, 0, 0) for v in versions]
    return "/livez" if all(v >= (1, 28, 0) for v in parsed) else "/healthz"


def kube_proxy_container(version: str, path: str) -> Object:
    return {
        "name": "kube-proxy",
        "image": f"registry.k8s.io/kube-proxy:{version}",
        "readinessProbe": {"httpGet": {"path": path, "port": 10256}, "periodSeconds": 10},
    }


def daemonset(versions: tuple[str, ...]) -> Object:
    template = {
        "metadata": {"labels": dict(KUBE_PROXY_LABELS)},
        "spec": {"containers": [kube_proxy_container(versions[0], readiness_path(versions))]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "kube-proxy",
            "namespace": "kube-system",
            "uid": DAEMONSET_UID,
            "labels": dict(KUBE_PROXY_LABELS),
        },
        "spec": {"selector": {"matchLabels": dict(KUBE_PROXY_LABELS)}, "template": template},
    }


def kube_proxy_pod(node_name_: str, version: str, path: str, owned: bool = True) -> Object:
    metadata: Object = {
        "name": f"kube-proxy-{node_name_}",
        "namespace": "kube-system",
        "labels": dict(KUBE_PROXY_LABELS),
    }
    if owned:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "kube-proxy",
                "uid": DAEMONSET_UID,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"nodeName": node_name_, "containers": [kube_proxy_container(version, path)]},
        # Ready until the emulated kubelet's first probe says otherwise.
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def service(spec: SandboxSpec, index: int) -> Object:
    local = index >= spec.services - spec.local_services
    name = f"web-{index}" if not local else f"local-{index}"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": spec.namespace,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"sandbox/{spec.namespace}/{name}")),
            "finalizers": [LB_CLEANUP_FINALIZER],
        },
        "spec": {
            "type": "LoadBalancer",
            "externalTrafficPolicy": "Local" if local else "Cluster",
            "ports": [
                {"port": 80, "targetPort": 8080, "protocol": "TCP", "nodePort": 30080 + index}
            ],
            "selector": {"app": name},
        },
    }


def namespace(name: str, uid: str = "") -> Object:
    metadata: Object = {"name": name}
    if uid:
        metadata["uid"] = uid
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def cluster_objects(spec: SandboxSpec) -> list[Object]:
    versions = tuple(
        spec.kube_proxy_versions[i % len(spec.kube_proxy_versions)] for i in range(spec.nodes)
    )
    path = readiness_path(versions)
    objects: list[Object] = [
        namespace("kube-system", KUBE_SYSTEM_UID),
        namespace("default"),
        namespace("lbhc-system"),
        namespace(spec.namespace),
        daemonset(versions),
    ]
    for index, version in enumerate(versions):
        objects.append(node(spec, index, version))
        objects.append(kube_proxy_pod(node_name(index), version, path))
    objects.extend(service(spec, index) for index in range(spec.services))
    return objects
