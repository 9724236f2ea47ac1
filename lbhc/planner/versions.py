"""Which kube-proxy version runs on a node, and what that version can do."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum

from lbhc.model.cluster import Node, Pod

# Distro suffixes: -gke.N, -eks-..., +k3s1, -rke2r1, _coreos.0 (old CoreOS hyperkube tags).
# ASCII digits only and at most 18 of them (within uint64), as Kubernetes' own semver parser;
# int() of thousands of digits would raise.
_N = "([0-9]{1,18})"
_VERSION = re.compile(rf"^v?{_N}\.{_N}(?:\.{_N})?(?:[-+_].*)?$")
_DISPLAY_MAX = 64  # a raw value shown in reasons and Events: one odd node must not fill them


class VersionSource(StrEnum):
    POD_IMAGE = "pod-image"
    PROBE = "probe"
    # Both are the kubelet's version (KEP-4004: kubeProxyVersion always held it, deprecated
    # in 1.29, cleared from 1.33): hints of a range, never of one kube-proxy version.
    NODE_KUBE_PROXY_VERSION = "node-kube-proxy-version"
    KUBELET_VERSION = "kubelet-version"
    ASSUMED = "assumed"  # the fallback policy `assume-version X` (kube-proxy replaced)
    # No kube-proxy: a known replacement's DaemonSet (lbhc/planner/replacement.py).
    REPLACEMENT = "replacement"
    NONE = "none"


HINT_SOURCES = frozenset({VersionSource.NODE_KUBE_PROXY_VERSION, VersionSource.KUBELET_VERSION})
# kube-proxy may be up to three minors older than the kubelet (the version skew policy).
KUBELET_SKEW_MINORS = 3


def kubelet_lower_bound(kubelet: tuple[int, int, int]) -> tuple[int, int, int]:
    """The oldest kube-proxy the skew policy allows next to this kubelet."""
    major, minor, _ = kubelet
    return (major, max(0, minor - KUBELET_SKEW_MINORS), 0)


@dataclass(frozen=True)
class KubeProxyVersion:
    """`version` is None when the source's value could not be parsed. For a hint it is the
    kubelet's version, the newest kube-proxy the skew policy allows next to it."""

    raw: str
    source: VersionSource
    version: tuple[int, int, int] | None

    @property
    def is_hint(self) -> bool:
        return self.source in HINT_SOURCES

    def display(self) -> str:
        if self.source in (VersionSource.PROBE, VersionSource.REPLACEMENT):
            return self.raw
        if self.version is None:
            raw = self.raw if len(self.raw) <= _DISPLAY_MAX else self.raw[:_DISPLAY_MAX] + "..."
            return f"unknown ({raw!r})" if self.raw else "unknown"
        if self.is_hint:
            low, high = kubelet_lower_bound(self.version), self.version
            return f"{low[0]}.{low[1]}-{high[0]}.{high[1]} (kubelet hint)"
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


def is_digest_only(image: str) -> bool:
    return "@" in image and not image_tag(image)


def version_from_pod(pod: Pod | None) -> KubeProxyVersion | None:
    """None for no pod or a digest-only image (which names no version at all)."""
    if pod is None:
        return None
    image = kube_proxy_container_image(pod)
    tag = image_tag(image)
    return KubeProxyVersion(image, VersionSource.POD_IMAGE, parse_version(tag)) if tag else None


def version_from_node_field(node: Node) -> KubeProxyVersion | None:
    """status.nodeInfo.kubeProxyVersion: really the kubelet's version, cleared from 1.33."""
    raw = node.status.node_info.kube_proxy_version
    if not raw:
        return None
    return KubeProxyVersion(raw, VersionSource.NODE_KUBE_PROXY_VERSION, parse_version(raw))


def version_from_kubelet(node: Node) -> KubeProxyVersion | None:
    """A hint only: kube-proxy may be up to 3 minors older than the kubelet."""
    raw = node.status.node_info.kubelet_version
    return KubeProxyVersion(raw, VersionSource.KUBELET_VERSION, parse_version(raw)) if raw else None
