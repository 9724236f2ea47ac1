"""Helpers for the kube-proxy emulator's tests: raw HTTP over real sockets and Node/Pod
dicts built on tests.builders.kube."""

from __future__ import annotations

import http.client
from dataclasses import dataclass
from typing import Any

from lbhc.sandbox.kube_fake import KubeFake
from tests.builders.kube import kube_proxy_pod, node

TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"
INSTANCE = "https://www.googleapis.com/compute/v1/projects/{p}/zones/{z}/instances/{n}"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def get(endpoint: tuple[str, int] | None, path: str, timeout: float = 5.0) -> Answer:
    """GET `path`; ConnectionRefusedError when nothing listens there."""
    assert endpoint is not None, "no endpoint: nothing listens for this node"
    connection = http.client.HTTPConnection(*endpoint, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return Answer(response.status, dict(response.getheaders()), response.read())
    finally:
        connection.close()


def status(endpoint: tuple[str, int] | None, path: str) -> int:
    return get(endpoint, path).status


def refused(endpoint: tuple[str, int]) -> bool:
    try:
        get(endpoint, "/healthz", timeout=2.0)
    except ConnectionRefusedError:
        return True
    return False


def add_node(
    kube: KubeFake,
    name: str,
    version: str | None = "v1.31.4",
    *,
    internal_ip: str | None = None,
    taints: tuple[tuple[str, str, str], ...] = (),
    image: str | None = None,
    **node_fields: Any,
) -> None:
    """A Node and (unless `version` is None) its kube-proxy Pod from image tag `version`."""
    obj = node(name, taints=taints, **node_fields)
    if internal_ip is not None:
        obj["status"]["addresses"] = [{"type": "InternalIP", "address": internal_ip}]
    kube.upsert(obj)
    if version is not None or image is not None:
        tag_image = image or f"registry.k8s.io/kube-proxy:{version}"
        kube.upsert(kube_proxy_pod(name, image=tag_image))


def set_image(kube: KubeFake, node_name: str, image: str) -> None:
    """A DaemonSet rollout, in one step: the node's kube-proxy Pod now runs `image`."""
    pod = kube.get("Pod", "kube-system", f"kube-proxy-{node_name}")
    assert pod is not None
    pod["spec"]["containers"][0]["image"] = image
    kube.upsert(pod)
