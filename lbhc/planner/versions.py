"""Which kube-proxy version runs on a node, and what that version can do."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum

from lbhc.model.cluster import Node, Pod

# kube-proxy 1.7.2 is the first to serve /healthz on 0.0.0.0:10256 (1.7.0/1.7.1 bound it
# to 127.0.0.1, kubernetes#48600), so the first a cloud health checker can reach.
MIN_HEALTHZ_VERSION = (1, 7, 2)

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$")


class VersionSource(StrEnum):
    POD_IMAGE = "pod-image"
    NODE_KUBE_PROXY_VERSION = "node-kube-proxy-version"
    KUBELET_VERSION = "kubelet-version"
    NONE = "none"


@dataclass(frozen=True)
class KubeProxyVersion:
    """`version` is None when the source's value could not be parsed."""

    raw: str
    source: VersionSource
    version: tuple[int, int, int] | None

    @property
    def known(self) -> bool:
        return self.version is not None

    def serves_healthz(self) -> bool | None:
        """True/False when known; None when the version is unknown."""
        return None if self.version is None else self.version >= MIN_HEALTHZ_VERSION

    def display(self) -> str:
        if self.version is None:
            return f"unknown ({self.raw!r})" if self.raw else "unknown"
        return "v{}.{}.{}".format(*self.version)


@functools.lru_cache(maxsize=1024)  # a cluster runs a handful of distinct versions
def parse_version(text: str) -> tuple[int, int, int] | None:
    """`v1.31.4-gke.1072000`, `1.7.2`, `v1.29` -> tuple; anything else -> None."""
    match = _VERSION.match(text.strip())
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def image_tag(image: str) -> str:
    """Tag of an image reference, or "" for a digest-only or untagged reference."""
    reference = image.split("@", 1)[0]
    last_segment = reference.rsplit("/", 1)[-1]
    return last_segment.split(":", 1)[1] if ":" in last_segment else ""


def kube_proxy_container_image(pod: Pod) -> str:
    """The kube-proxy container's image: the one named kube-proxy, else the only one."""
    for container in pod.spec.containers:
        if container.name == "kube-proxy":
            return container.image
    return pod.spec.containers[0].image if len(pod.spec.containers) == 1 else ""


def kube_proxy_version(node: Node, pod: Pod | None) -> KubeProxyVersion:
    """The first source that has a value decides, most reliable first: the kube-proxy Pod's
    image tag, then the node fields (which really hold the kubelet's version: hints only, as
    kube-proxy may lag the kubelet by up to 3 minors). An unparsable value is unknown, not a
    reason to trust a weaker source; only a digest-only image, which names no version at
    all, falls through."""
    if pod is not None:
        image = kube_proxy_container_image(pod)
        tag = image_tag(image)
        if tag:
            return KubeProxyVersion(image, VersionSource.POD_IMAGE, parse_version(tag))
    info = node.status.node_info
    if info.kube_proxy_version:
        return KubeProxyVersion(
            info.kube_proxy_version,
            VersionSource.NODE_KUBE_PROXY_VERSION,
            parse_version(info.kube_proxy_version),
        )
    if info.kubelet_version:
        return KubeProxyVersion(
            info.kubelet_version, VersionSource.KUBELET_VERSION, parse_version(info.kubelet_version)
        )
    return KubeProxyVersion("", VersionSource.NONE, None)
