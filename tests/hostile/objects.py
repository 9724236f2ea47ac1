"""Hostile Kubernetes objects as raw JSON dicts, the way the API serves them. Everything here
is something a real API server accepts (its validation allows it) unless the name says
`undecodable`: those are shapes no conforming server sends, for robustness only."""

from __future__ import annotations

from typing import Any

from tests import kube_objects as kube

# A Node name at the limit: a DNS subdomain of 253 characters (labels of at most 63).
LONG_NODE_NAME = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
LONG_NAMESPACE = "n" * 63  # a namespace is a DNS label: 63 at most
LONG_SERVICE_NAME = "s" * 63  # a Service name is a DNS-1035 label: 63 at most
LONG_UID = "0123456789abcdef" * 15 + "0123456789abc"  # 253 characters; real ones are UUIDs


def node_with_labels(name: str, count: int, value_length: int = 63) -> dict[str, Any]:
    """About `count` x 100 bytes of labels: 10,000 make a Node of about 1 MB."""
    obj = kube.node(name)
    obj["metadata"]["labels"] = {
        f"hostile.example.com/label-{i:05d}": "v" * value_length for i in range(count)
    }
    return obj


def node_with_provider_id(name: str, provider_id: str | None) -> dict[str, Any]:
    """None: no providerID at all (a node not managed by a cloud provider)."""
    obj = kube.node(name)
    if provider_id is None:
        del obj["spec"]["providerID"]
    else:
        obj["spec"]["providerID"] = provider_id
    return obj


def service_with_ports(name: str, count: int) -> dict[str, Any]:
    obj = kube.service(name)
    if count == 0:
        del obj["spec"]["ports"]
    else:
        obj["spec"]["ports"] = [
            {"name": f"p{i}", "port": 1000 + i, "nodePort": 30000 + i, "protocol": "TCP"}
            for i in range(count)
        ]
    return obj


def service_with_annotations(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    obj = kube.service(name)
    obj["metadata"]["annotations"] = annotations
    return obj


def long_named_service() -> dict[str, Any]:
    obj = kube.service(LONG_SERVICE_NAME, LONG_NAMESPACE)
    obj["metadata"]["uid"] = LONG_UID
    return obj


def node_with_versions(name: str, kubelet: str, kube_proxy_field: str | None) -> dict[str, Any]:
    return kube.node(name, kubelet=kubelet, kube_proxy=kube_proxy_field)


def undecodable_service(name: str) -> dict[str, Any]:
    """An annotation value that is not a string: the API's schema forbids it, a broken
    aggregated API or proxy could still serve it."""
    return service_with_annotations(name, {"hostile.example.com/count": 5})  # type: ignore[dict-item]
