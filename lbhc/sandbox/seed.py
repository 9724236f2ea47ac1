"""The small cluster the sandbox starts with, as the API would return it: GKE-like nodes with
provider IDs and loopback InternalIPs (where their emulated kube-proxies listen), a kube-proxy
DaemonSet and its Pods, and LoadBalancer Services of both traffic policies.

The "current" cloud provider profile adds what today's GCE cloud provider and GKE would show:
the kube-system/ingress-uid ConfigMap with the cluster uid, the healthCheckNodePort the
apiserver allocates for a Local Service (by the kube-apiserver fake's own rule), each
Service's load balancer IP in its status, and more Services: `legacy-<n>` (Cluster; its
pool was made by a cloud provider older than the nodes check, so carries none) and, with
`backend_service_lbs`, one Cluster Service of each backend-service kind: `rbs-<n+1>`
(annotated for ingress-gce's regional backend service NetLB, with instance groups),
`ilb-<n+2>` (internal: ingress-gce's, with NEGs, under `ilb_subsetting`; else the cloud
provider's) and `ilb-v1-<n+3>` (internal, made by the cloud provider before subsetting was
turned on: its l4-ilb-v1 finalizer keeps it there). Their load balancers are made by the
emulated controllers before the sandbox is handed over (lbhc.sandbox.sandbox).

`kube_proxy_replacement="cilium"` seeds a cluster without kube-proxy: Cilium's DaemonSet and
its cilium-config ConfigMap (kube-proxy replacement on; the healthz bind address set only with
`cilium_healthz`), and no kube-proxy DaemonSet or Pods. The fleet then serves Cilium's
/healthz on each node, or nothing."""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any

from lbhc.planner.versions import parse_version
from lbhc.sandbox.kube_fake import service_ports
from lbhc.sandbox.kube_proxy.behaviour import CILIUM_HEALTHZ_BIND_KEY
from lbhc.sandbox.upstream import names as upstream

Object = dict[str, Any]
KUBE_PROXY_LABELS = {"k8s-app": "kube-proxy"}
LB_CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
DAEMONSET_UID = str(uuid.uuid5(uuid.NAMESPACE_DNS, "sandbox/kube-system/kube-proxy"))
KUBE_SYSTEM_UID = str(uuid.uuid5(uuid.NAMESPACE_DNS, "sandbox/kube-system"))
CLOUD_PROVIDERS = ("current", "legacy")
KUBE_PROXY_REPLACEMENTS = ("", "cilium")  # "": kube-proxy itself
CILIUM_LABELS = {"k8s-app": "cilium"}
OLD_PROVIDER_PREFIX = "legacy-"  # current profile: this Service's pool was made without a check
INTERNAL_LB_ANNOTATION = {"networking.gke.io/load-balancer-type": "Internal"}
# Load balancer IPs, from the seeded ones to those the emulated cloud providers hand out.
FIRST_LB_IP = ipaddress.IPv4Address("203.0.113.10")  # TEST-NET-3: never a real address


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
    # Which GCE cloud provider made the load balancers and runs the service controller:
    # "current" (today's, the default: see the module docstring and lbhc.sandbox.upstream)
    # or "legacy" (the old world: pools without checks, no cluster uid).
    cloud_provider: str = "current"
    # "" runs kube-proxy; "cilium" runs Cilium's kube-proxy replacement instead, serving
    # kube-proxy's /healthz on 10256 only with `cilium_healthz` (its bind address set).
    kube_proxy_replacement: str = ""
    cilium_healthz: bool = False
    # Current profile: also seed one load balancer of each backend-service kind (an RBS
    # external one, an internal one under GKE subsetting, an internal one of the cloud
    # provider's), which lbhc only reads. Their checks' firewalls admit probes on 10256 to
    # any IP, so the cloud provider's pinned node firewall no longer leaves pools unprobed.
    backend_service_lbs: bool = True
    # GKE subsetting for internal LBs: new internal Services are ingress-gce's, with one
    # GCE_VM_IP NEG per zone; off, the cloud provider makes every internal LB, with the
    # shared instance groups.
    ilb_subsetting: bool = True

    def __post_init__(self) -> None:
        if self.kube_proxy_replacement not in KUBE_PROXY_REPLACEMENTS:
            raise ValueError(
                f"kube_proxy_replacement: got {self.kube_proxy_replacement!r}; expected '' "
                "(kube-proxy) or 'cilium'"
            )
        if self.cloud_provider not in CLOUD_PROVIDERS:
            raise ValueError(
                f"cloud_provider: got {self.cloud_provider!r}; expected one of "
                + " or ".join(repr(c) for c in CLOUD_PROVIDERS)
            )
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

    @property
    def current(self) -> bool:
        return self.cloud_provider == "current"

    @property
    def cluster_uid(self) -> str | None:
        """The current cloud provider's cluster id (kube-system/ingress-uid); None in legacy."""
        return upstream.make_cluster_uid(self.project) if self.current else None

    @property
    def service_count(self) -> int:
        """Seeded Services: `services`, and in the current profile (if any at all) the legacy
        one and, with `backend_service_lbs`, three more."""
        if not self.current or not self.services:
            return self.services
        return self.services + 1 + (len(_BACKEND_SERVICE_KINDS) if self.backend_service_lbs else 0)


# The current profile's backend-service Services, after `legacy-<n>`, by name prefix.
_BACKEND_SERVICE_KINDS = ("rbs-", "ilb-", "ilb-v1-")


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


def lb_ip(index: int) -> str:
    """The `index`-th load balancer IP: the one the Service at `index` is seeded with."""
    return str(FIRST_LB_IP + index)


def _is_local(spec: SandboxSpec, index: int) -> bool:
    """The last `local_services` of the first `services` are externalTrafficPolicy: Local."""
    return spec.services - spec.local_services <= index < spec.services


def service_name(spec: SandboxSpec, index: int) -> str:
    if index == spec.services:
        return f"{OLD_PROVIDER_PREFIX}{index}"
    if index > spec.services:
        return f"{_BACKEND_SERVICE_KINDS[index - spec.services - 1]}{index}"
    return f"local-{index}" if _is_local(spec, index) else f"web-{index}"


def service(spec: SandboxSpec, index: int) -> Object:
    local = _is_local(spec, index)
    name = service_name(spec, index)
    obj: Object = {
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
    if spec.current:
        kind = name.removesuffix(str(index))
        if kind == "rbs-":
            obj["metadata"]["annotations"] = {upstream.RBS_ANNOTATION: upstream.RBS_ENABLED}
            obj["metadata"]["finalizers"].append(upstream.NETLB_FINALIZER_V2)
        elif kind in ("ilb-", "ilb-v1-"):
            obj["metadata"]["annotations"] = dict(INTERNAL_LB_ANNOTATION)
        if kind == "ilb-v1-":
            obj["metadata"]["finalizers"].append(upstream.ILB_FINALIZER_V1)
        obj["status"] = {"loadBalancer": {"ingress": [{"ip": lb_ip(index)}]}}
    return obj


def old_provider_services(spec: SandboxSpec) -> set[str]:
    """Keys of the Services whose pools an older cloud provider made (current profile)."""
    if not spec.current or not spec.services:
        return set()
    return {f"{spec.namespace}/{service_name(spec, spec.services)}"}


def namespace(name: str, uid: str = "") -> Object:
    metadata: Object = {"name": name}
    if uid:
        metadata["uid"] = uid
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def cilium_objects(healthz: bool) -> list[Object]:
    """Cilium's DaemonSet and cilium-config, as its Helm chart names them in kube-system."""
    daemonset_: Object = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "cilium",
            "namespace": "kube-system",
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, "sandbox/kube-system/cilium")),
            "labels": dict(CILIUM_LABELS),
        },
        "spec": {
            "selector": {"matchLabels": dict(CILIUM_LABELS)},
            "template": {
                "metadata": {"labels": dict(CILIUM_LABELS)},
                "spec": {
                    "containers": [
                        {"name": "cilium-agent", "image": "quay.io/cilium/cilium:v1.18.4"}
                    ]
                },
            },
        },
    }
    config: Object = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cilium-config", "namespace": "kube-system"},
        "data": {
            "kube-proxy-replacement": "true",
            CILIUM_HEALTHZ_BIND_KEY: "0.0.0.0:10256" if healthz else "",
        },
    }
    return [daemonset_, config]


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
    ]
    replaced = spec.kube_proxy_replacement == "cilium"
    objects += cilium_objects(spec.cilium_healthz) if replaced else [daemonset(versions)]
    for index, version in enumerate(versions):
        objects.append(node(spec, index, version))
        if not replaced:
            objects.append(kube_proxy_pod(node_name(index), version, path))
    services: list[Object] = []
    for index in range(spec.service_count):
        obj = service(spec, index)
        if spec.current:  # the port the apiserver gave a Local one (legacy: seeded as it was)
            service_ports.admit(obj, None, services)
        services.append(obj)
    objects.extend(services)
    if spec.cluster_uid is not None:
        objects.append(upstream.ingress_uid_configmap(spec.cluster_uid))
    return objects
