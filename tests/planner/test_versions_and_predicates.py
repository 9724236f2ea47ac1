"""Small tables for the node and version rules the fallback builds on."""

from __future__ import annotations

import pytest

from lbhc.planner.nodes import is_being_deleted, is_excluded_from_load_balancers
from lbhc.planner.versions import VersionSource, image_tag, kube_proxy_version, parse_version
from tests.builders import kube_proxy_pod, node


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v1.31.4", (1, 31, 4)),
        ("1.7.2", (1, 7, 2)),
        ("v1.31.4-gke.1072000", (1, 31, 4)),
        ("v1.29", (1, 29, 0)),
        ("v1.30.0+k3s1", (1, 30, 0)),
        ("latest", None),
        ("", None),
        ("sha256:abc", None),
    ],
)
def test_parse_version(text: str, expected: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        ("registry.k8s.io/kube-proxy:v1.31.4", "v1.31.4"),
        ("localhost:5000/kube-proxy:v1.30.1", "v1.30.1"),  # a port is not a tag
        ("localhost:5000/kube-proxy", ""),
        ("gke.gcr.io/kube-proxy-amd64:v1.31.4-gke.1072000@sha256:0123", "v1.31.4-gke.1072000"),
        ("registry.k8s.io/kube-proxy@sha256:0123", ""),
    ],
)
def test_image_tag(image: str, tag: str) -> None:
    assert image_tag(image) == tag


@pytest.mark.parametrize(
    ("pod_image", "field", "kubelet", "version", "source"),
    [
        (
            "registry.k8s.io/kube-proxy:v1.28.2",
            "v1.31.0",
            "v1.31.0",
            (1, 28, 2),
            VersionSource.POD_IMAGE,
        ),
        (
            "registry.k8s.io/kube-proxy@sha256:00",
            "v1.27.1",
            "v1.31.0",
            (1, 27, 1),
            VersionSource.NODE_KUBE_PROXY_VERSION,
        ),
        ("registry.k8s.io/kube-proxy:latest", "", "v1.31.0", None, VersionSource.POD_IMAGE),
        (None, "", "v1.33.1", (1, 33, 1), VersionSource.KUBELET_VERSION),
        (None, "", "custom", None, VersionSource.KUBELET_VERSION),
        (None, "", "", None, VersionSource.NONE),
    ],
    ids=[
        "pod-image-wins",
        "digest-falls-through",
        "unparsable-tag-is-unknown-not-the-kubelets",
        "kubelet-hint",
        "unparsable",
        "nothing",
    ],
)
def test_version_sources_in_order(
    pod_image: str | None,
    field: str,
    kubelet: str,
    version: tuple[int, int, int] | None,
    source: VersionSource,
) -> None:
    pod = kube_proxy_pod("n", pod_image) if pod_image else None
    found = kube_proxy_version(node("n", kubelet, kube_proxy_field=field), pod)
    assert (found.version, found.source) == (version, source)


@pytest.mark.parametrize(
    ("kwargs", "deleting"),
    [
        ({}, False),
        ({"taints": (("ToBeDeletedByClusterAutoscaler", "NoSchedule"),)}, True),
        ({"taints": (("ToBeDeletedByClusterAutoscaler", "PreferNoSchedule"),)}, True),
        ({"deleting": True}, True),
        ({"taints": (("DeletionCandidateOfClusterAutoscaler", "PreferNoSchedule"),)}, False),
        ({"taints": (("karpenter.sh/disrupted", "NoSchedule"),)}, False),
    ],
    ids=[
        "plain",
        "tainted",
        "taint-any-effect",
        "deletion-timestamp",
        "candidate-only",
        "karpenter",
    ],
)
def test_is_being_deleted(kwargs: dict[str, object], deleting: bool) -> None:
    assert is_being_deleted(node(**kwargs)) is deleting  # type: ignore[arg-type]


def test_exclusion_label_counts_whatever_its_value() -> None:
    label = "node.kubernetes.io/exclude-from-external-load-balancers"
    assert is_excluded_from_load_balancers(node(labels={label: ""}))
    assert is_excluded_from_load_balancers(node(labels={label: "false"}))
    assert not is_excluded_from_load_balancers(node())
