"""Kubernetes API objects as an API server serves them (plain dicts), built the way
k8s.io/cloud-provider's service controller tests build theirs (controllers/service/
controller_test.go: `newService(name, uid, tweaks...)` with `tweakAddLBClass`-style functions):
a valid default object, then tweaks that each say one thing a case is about.

    node("n1", to_be_deleted(), with_internal_ip("10.0.0.9"))
    service("web", external_traffic_policy("Local"), with_annotations({...}))

The keyword arguments are shorthands for the commonest tweaks. Hostile shapes (a 1 MB Node,
a 253-character name, an annotation no conforming server sends) are tweaks here too, named
for what they are; `undecodable` ones are shapes no conforming server sends."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tests.builders.constants import KUBE_SYSTEM_UID, PROJECT

__all__ = ["KUBE_SYSTEM_UID"]  # re-exported: tests seeding kube-system take it from here

Obj = dict[str, Any]
Tweak = Callable[[Obj], None]

KUBE_PROXY_LABELS = {"k8s-app": "kube-proxy"}
DELETED_AT = "2026-11-22T00:00:00Z"
# The autoscaler's taint on a node it is about to delete (cluster-autoscaler
# utils/taints/taints.go ToBeDeletedTaint); its value is the Unix time it was marked.
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
MODERN_KUBE_PROXY = "registry.k8s.io/kube-proxy:v1.31.4"  # serves /healthz, /livez, drains

# At the API's limits: a Node name is a DNS subdomain of 253 characters (labels of at most 63),
# a namespace a DNS label (63), a Service name a DNS-1035 label (63). A UID is any string the
# server chose; real ones are UUIDs.
LONG_NODE_NAME = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
LONG_NAMESPACE = "n" * 63
LONG_SERVICE_NAME = "s" * 63
LONG_UID = "0123456789abcdef" * 15 + "0123456789abc"


def tweaked(obj: Obj, tweaks: Iterable[Tweak]) -> Obj:
    for tweak in tweaks:
        tweak(obj)
    return obj


# -- tweaks any object takes ------------------------------------------------------------------


def with_labels(labels: Mapping[str, str]) -> Tweak:
    """Adds to (or overrides) the object's labels."""

    def tweak(obj: Obj) -> None:
        obj["metadata"].setdefault("labels", {}).update(labels)

    return tweak


def only_labels(labels: Mapping[str, str]) -> Tweak:
    """Replaces the object's labels, defaults included."""

    def tweak(obj: Obj) -> None:
        obj["metadata"]["labels"] = dict(labels)

    return tweak


def with_annotations(annotations: Mapping[str, Any]) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["metadata"].setdefault("annotations", {}).update(annotations)

    return tweak


def with_uid(uid: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["metadata"]["uid"] = uid

    return tweak


def with_resource_version(version: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["metadata"]["resourceVersion"] = version

    return tweak


def with_finalizers(*finalizers: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["metadata"]["finalizers"] = list(finalizers)

    return tweak


def deleting(at: str = DELETED_AT) -> Tweak:
    """Marked for deletion. An object with a deletionTimestamp still in the API has a
    finalizer holding it: one is added if it has none."""

    def tweak(obj: Obj) -> None:
        obj["metadata"]["deletionTimestamp"] = at
        obj["metadata"].setdefault("finalizers", ["example.com/hold"])

    return tweak


# -- Nodes ------------------------------------------------------------------------------------


def node(
    name: str = "node-1",
    *tweaks: Tweak,
    kubelet: str = "v1.31.4",
    kube_proxy_field: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[tuple[str, str, str]] = (),
    deleting: bool = False,
) -> Obj:
    """A Ready Linux node a GCE cloud provider manages. `taints` are (key, value, effect);
    `kube_proxy_field` None leaves status.nodeInfo.kubeProxyVersion out (1.33+, KEP-4004)."""
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux"}},
        "spec": {"providerID": f"gce://{PROJECT}/us-central1-a/{name}"},
        "status": {
            "nodeInfo": {"kubeletVersion": kubelet, "osImage": "Container-Optimized OS"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    shorthand: list[Tweak] = [with_taint(k, e, v) for k, v, e in taints]
    if kube_proxy_field is not None:
        shorthand.append(with_kube_proxy_field(kube_proxy_field))
    if labels is not None:
        shorthand.append(only_labels(labels))
    if deleting:
        shorthand.append(_deleting())
    return tweaked(obj, [*shorthand, *tweaks])


_deleting = deleting  # `node`'s keyword shadows the tweak's name inside it


def with_taint(key: str, effect: str = "NoSchedule", value: str = "") -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})

    return tweak


def to_be_deleted(marked_at: str = "") -> Tweak:
    """The cluster autoscaler's mark on a node it is about to remove."""
    return with_taint(TO_BE_DELETED_TAINT, "NoSchedule", marked_at)


def with_kubelet(version: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["status"]["nodeInfo"]["kubeletVersion"] = version

    return tweak


def with_kube_proxy_field(version: str | None) -> Tweak:
    """status.nodeInfo.kubeProxyVersion: really the kubelet's version, cleared from 1.33 on
    (KEP-4004); None leaves it out."""

    def tweak(obj: Obj) -> None:
        info = obj["status"]["nodeInfo"]
        if version is None:
            info.pop("kubeProxyVersion", None)
        else:
            info["kubeProxyVersion"] = version

    return tweak


def with_address(type_: str, address: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["status"].setdefault("addresses", []).append({"type": type_, "address": address})

    return tweak


def with_internal_ip(address: str) -> Tweak:
    """Where kube-proxy's health port is probed from the controller."""
    return with_address("InternalIP", address)


def with_provider_id(provider_id: str | None) -> Tweak:
    """None: no providerID at all (a node no cloud provider manages)."""

    def tweak(obj: Obj) -> None:
        if provider_id is None:
            obj["spec"].pop("providerID", None)
        else:
            obj["spec"]["providerID"] = provider_id

    return tweak


def ready(status: bool | None) -> Tweak:
    """A node's or Pod's Ready condition; None leaves the conditions out (a node no kubelet
    has reported for yet, a Pod not yet scheduled)."""

    def tweak(obj: Obj) -> None:
        if status is None:
            obj["status"].pop("conditions", None)
        else:
            obj["status"]["conditions"] = [
                {"type": "Ready", "status": "True" if status else "False"}
            ]

    return tweak


def many_labels(count: int, value_length: int = 63) -> Tweak:
    """About `count` x 100 bytes of labels: 10,000 make a Node of about 1 MB."""
    return only_labels(
        {f"hostile.example.com/label-{i:05d}": "v" * value_length for i in range(count)}
    )


# -- Services ---------------------------------------------------------------------------------


def service(
    name: str = "web",
    *tweaks: Tweak,
    namespace: str = "default",
    type_: str = "LoadBalancer",
    policy: str | None = "Cluster",
    lb_class: str | None = None,
    labels: Mapping[str, str] | None = None,
    uid: str | None = None,
) -> Obj:
    """A LoadBalancer Service with one port. `policy` (externalTrafficPolicy) None leaves it
    out, as older objects and dumps may; `uid` None leaves it to the server."""
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {
            "type": type_,
            "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP", "nodePort": 30080}],
            "selector": {"app": name},
        },
    }
    shorthand = [external_traffic_policy(policy)]
    if lb_class is not None:
        shorthand.append(load_balancer_class(lb_class))
    if uid is not None:
        shorthand.append(with_uid(uid))
    return tweaked(obj, [*shorthand, *tweaks])


def external_traffic_policy(policy: str | None) -> Tweak:
    def tweak(obj: Obj) -> None:
        if policy is None:
            obj["spec"].pop("externalTrafficPolicy", None)
        else:
            obj["spec"]["externalTrafficPolicy"] = policy

    return tweak


def load_balancer_class(name: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["spec"]["loadBalancerClass"] = name

    return tweak


def with_ingress_ip(ip: str) -> Tweak:
    """status.loadBalancer, as the service controller writes it once the LB exists."""

    def tweak(obj: Obj) -> None:
        obj["status"] = {"loadBalancer": {"ingress": [{"ip": ip}]}}

    return tweak


def with_ports(count: int) -> Tweak:
    """`count` TCP ports; 0 leaves spec.ports out."""

    def tweak(obj: Obj) -> None:
        if count == 0:
            obj["spec"].pop("ports", None)
        else:
            obj["spec"]["ports"] = [
                {"name": f"p{i}", "port": 1000 + i, "nodePort": 30000 + i, "protocol": "TCP"}
                for i in range(count)
            ]

    return tweak


def with_port(port: int, node_port: int, target_port: int | None = None) -> Tweak:
    """One TCP port in place of the default (the cloud provider's rule carries its range)."""
    entry: Obj = {"port": port, "protocol": "TCP", "nodePort": node_port}
    if target_port is not None:
        entry["targetPort"] = target_port

    def tweak(obj: Obj) -> None:
        obj["spec"]["ports"] = [dict(entry)]

    return tweak


def with_spec(**fields: Any) -> Tweak:
    """Any other spec fields, as the API spells them (`loadBalancerSourceRanges=[...]`)."""

    def tweak(obj: Obj) -> None:
        obj["spec"].update(fields)

    return tweak


def long_named_service() -> Obj:
    """Name, namespace and UID each at the API's limit."""
    return service(LONG_SERVICE_NAME, namespace=LONG_NAMESPACE, uid=LONG_UID)


def undecodable_annotation() -> Tweak:
    """An annotation value that is not a string: the API's schema forbids it, a broken
    aggregated API or proxy could still serve it."""
    return with_annotations({"hostile.example.com/count": 5})


# -- Pods -------------------------------------------------------------------------------------


def pod(
    name: str,
    *tweaks: Tweak,
    namespace: str = "kube-system",
    node_name: str = "",
    labels: Mapping[str, str] | None = None,
    container: str = "kube-proxy",
    image: str = MODERN_KUBE_PROXY,
    phase: str = "Running",
    ready: bool | None = None,
    owner_uid: str = "",
) -> Obj:
    """`ready` None leaves the conditions out; `owner_uid` names an owning DaemonSet."""
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {"containers": [{"name": container, "image": image}]},
        "status": {"phase": phase},
    }
    shorthand: list[Tweak] = []
    if node_name:
        shorthand.append(on_node(node_name))
    if owner_uid:
        shorthand.append(owned_by_daemonset(owner_uid))
    if ready is not None:
        shorthand.append(_ready(ready))
    return tweaked(obj, [*shorthand, *tweaks])


_ready = ready  # `pod`'s keyword shadows the tweak's name inside it


def on_node(name: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["spec"]["nodeName"] = name

    return tweak


def owned_by_daemonset(uid: str, name: str = "kube-proxy") -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name, "uid": uid}
        ]

    return tweak


def owned_by_node(node_name: str) -> Tweak:
    """A mirror Pod: a static Pod the kubelet runs from a file, owned by its Node (GKE's
    kube-proxy)."""

    def tweak(obj: Obj) -> None:
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": "u1"}
        ]

    return tweak


def with_readiness_probe(path: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["spec"]["containers"][0]["readinessProbe"] = http_probe(path)

    return tweak


def with_image(image: str) -> Tweak:
    def tweak(obj: Obj) -> None:
        obj["spec"]["containers"][0]["image"] = image

    return tweak


def kube_proxy_pod(node_name: str, *tweaks: Tweak, version: str = "v1.31.4", **fields: Any) -> Obj:
    """kube-proxy's Pod on `node_name`, labelled as its DaemonSet labels it; `fields` are
    `pod`'s keywords."""
    values: dict[str, Any] = {
        "node_name": node_name,
        "labels": dict(KUBE_PROXY_LABELS),
        "image": f"registry.k8s.io/kube-proxy:{version}",
    }
    values.update(fields)
    return pod(f"kube-proxy-{node_name}", *tweaks, **values)


# -- DaemonSets, Namespaces -------------------------------------------------------------------


def http_probe(path: str, port: int | str = 10256) -> Obj:
    return {"httpGet": {"path": path, "port": port}}


def kube_proxy_daemonset(
    name: str = "kube-proxy",
    *tweaks: Tweak,
    readiness: str | None = "/healthz",
    liveness: str | None = None,
    uid: str = "ds-uid-1",
    labels: Mapping[str, str] | None = None,
    resource_version: str = "7",
    image: str = MODERN_KUBE_PROXY,
) -> Obj:
    """kube-proxy's DaemonSet in kube-system; `readiness`/`liveness` are the probes' paths
    on its health port (None: no such probe)."""
    container: Obj = {"name": "kube-proxy", "image": image}
    if readiness is not None:
        container["readinessProbe"] = http_probe(readiness)
    if liveness is not None:
        container["livenessProbe"] = http_probe(liveness)
    obj: Obj = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "uid": uid,
            "resourceVersion": resource_version,
            "labels": dict(KUBE_PROXY_LABELS if labels is None else labels),
        },
        "spec": {
            "selector": {"matchLabels": dict(KUBE_PROXY_LABELS)},
            "template": {
                "metadata": {"labels": dict(KUBE_PROXY_LABELS)},
                "spec": {"containers": [container]},
            },
        },
    }
    return tweaked(obj, tweaks)


def replacement_daemonset(name: str = "cilium", namespace: str = "kube-system") -> Obj:
    """A DaemonSet that replaces kube-proxy (Cilium's `cilium`, GKE Dataplane V2's `anetd`),
    labelled as its installers label it."""
    labels = {"k8s-app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"ds-{name}", "labels": labels},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": name, "image": f"example/{name}:v1"}]},
            },
        },
    }


def kubernetes_service() -> Obj:
    """default/kubernetes, the API server's own ClusterIP Service: in every cluster, so in
    every real `kubectl get services -A` dump."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {}},
        "spec": {
            "type": "ClusterIP",
            "ports": [{"name": "https", "port": 443, "targetPort": 6443, "protocol": "TCP"}],
        },
    }


def namespace(name: str, uid: str | None = None) -> Obj:
    metadata: Obj = {"name": name}
    if uid:
        metadata["uid"] = uid
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def ingress_uid_config_map(uid: str, *tweaks: Tweak) -> Obj:
    """What the GCE cloud provider keeps on every cluster it runs (cloud-provider-gcp
    providers/gce/gce_clusterid.go getOrInitialize: the same new id as `uid` and
    `provider-uid`); GetID names its node health check after it, k8s-<id>-node."""
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ingress-uid", "namespace": "kube-system"},
        "data": {"uid": uid, "provider-uid": uid},
    }
    return tweaked(obj, tweaks)


def only_data(data: Mapping[str, str]) -> Tweak:
    """Replaces a ConfigMap's data: a hand-edited or older ingress-uid, say."""

    def tweak(obj: Obj) -> None:
        obj["data"] = dict(data)

    return tweak
