"""Small tables for the node and version rules the fallback builds on."""

from __future__ import annotations

import pytest

from lbhc.model.cluster import HealthProbe
from lbhc.planner.capabilities import (
    Capabilities,
    capabilities_from_probe,
    capabilities_of,
    detect,
    needs_probe,
)
from lbhc.planner.config import DrainingGate
from lbhc.planner.listing import first_few
from lbhc.planner.nodes import (
    EXCLUDE_FROM_LB_LABEL,
    can_receive_lb_traffic,
    is_being_deleted,
    is_excluded_from_load_balancers,
)
from lbhc.planner.versions import VersionSource, image_tag, parse_version
from tests.builders import kube_proxy_pod, node


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v1.31.4", (1, 31, 4)),
        ("1.7.2", (1, 7, 2)),
        ("v1.29", (1, 29, 0)),
        ("v1.31.4-gke.1072000", (1, 31, 4)),  # GKE
        ("v1.29.0-minimal-eksbuild.1", (1, 29, 0)),  # EKS add-on, minimal image
        ("v1.28.1-eksbuild.1", (1, 28, 1)),  # EKS add-on
        ("v1.30.2", (1, 30, 2)),  # kubeadm
        ("v1.30.0+k3s1", (1, 30, 0)),  # k3s
        ("v1.28.10-rke2r1-build20240514", (1, 28, 10)),  # RKE2 hardened image
        ("v1.7.2_coreos.0", (1, 7, 2)),  # CoreOS hyperkube
        ("v1.33.0-alpha.1", (1, 33, 0)),
        ("latest", None),
        ("stable", None),
        ("v1", None),
        ("1.x", None),
        ("v1.31.4.5", None),
        ("", None),
        ("sha256:abc", None),
        ("vv1.30.0", None),
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
        (
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.29.0-minimal-eksbuild.1",
            "v1.29.0-minimal-eksbuild.1",
        ),
        ("kube-proxy", ""),
    ],
)
def test_image_tag(image: str, tag: str) -> None:
    assert image_tag(image) == tag


def caps(healthz: bool | None, livez: bool | None, drains: bool | None) -> Capabilities:
    return Capabilities(healthz, livez, drains)


@pytest.mark.parametrize(
    ("version", "gate", "expected"),
    [
        ((1, 7, 1), DrainingGate.UNKNOWN, caps(False, False, False)),
        ((1, 7, 2), DrainingGate.UNKNOWN, caps(True, False, False)),
        ((1, 27, 16), DrainingGate.ENABLED, caps(True, False, False)),
        ((1, 28, 0), DrainingGate.UNKNOWN, caps(True, True, None)),
        ((1, 28, 0), DrainingGate.ENABLED, caps(True, True, True)),
        ((1, 29, 15), DrainingGate.DISABLED, caps(True, True, False)),
        ((1, 29, 15), DrainingGate.UNKNOWN, caps(True, True, None)),
        ((1, 30, 0), DrainingGate.UNKNOWN, caps(True, True, True)),  # beta: on by default
        ((1, 30, 9), DrainingGate.DISABLED, caps(True, True, False)),  # ...but can be off
        ((1, 31, 0), DrainingGate.DISABLED, caps(True, True, True)),  # GA: the setting is moot
        ((1, 33, 1), DrainingGate.UNKNOWN, caps(True, True, True)),
        (None, DrainingGate.ENABLED, caps(None, None, None)),
    ],
)
def test_capabilities_at_every_boundary(
    version: tuple[int, int, int] | None, gate: DrainingGate, expected: Capabilities
) -> None:
    assert capabilities_of(version, gate) == expected


def probe(
    healthz: int | None, livez: int | None, *, refused: bool = False, marked: bool = False
) -> HealthProbe:
    return HealthProbe("10.0.0.1:10256", livez, healthz, refused=refused, node_marked=marked)


@pytest.mark.parametrize(
    ("seen", "being_deleted", "expected"),
    [
        (probe(None, None, refused=True), False, caps(False, False, False)),  # nothing listens
        (probe(None, None), False, caps(None, None, None)),  # timed out: proves nothing
        (probe(404, 404), False, caps(False, False, False)),  # not kube-proxy's server
        (probe(200, 404), False, caps(True, False, False)),  # older than 1.28
        (probe(503, 404, marked=True), True, caps(True, False, False)),
        (probe(200, 200), False, caps(True, True, None)),  # >= 1.28, draining unseen
        (probe(503, 200, marked=True), True, caps(True, True, True)),  # seen draining
        (probe(200, 200, marked=True), True, caps(True, True, False)),  # marked, still serving
        (probe(200, 200), True, caps(True, True, None)),  # probed before the mark: stale
        (probe(503, 503, marked=True), True, caps(True, True, None)),  # proxier unhealthy
    ],
)
def test_capabilities_from_probe(
    seen: HealthProbe, being_deleted: bool, expected: Capabilities
) -> None:
    assert capabilities_from_probe(seen, being_deleted) == expected


DIGEST = "registry.k8s.io/kube-proxy@sha256:00"


@pytest.mark.parametrize(
    ("pod_image", "field", "kubelet", "seen", "display", "source"),
    [
        ("registry.k8s.io/kube-proxy:v1.28.2", "v1.31.0", "v1.31.0", None, "v1.28.2", "pod-image"),
        # KEP-4004: the node field is the kubelet's version; a hint of a range, like it.
        (DIGEST, "v1.27.1", "", None, "1.24-1.27 (kubelet hint)", "node-kube-proxy-version"),
        (
            "registry.k8s.io/kube-proxy:latest",
            "v1.31.0",
            "v1.31.0",
            None,
            "unknown ('registry.k8s.io/kube-proxy:latest')",
            "pod-image",
        ),
        (DIGEST, "", "v1.33.1", probe(200, 404), "probe of 10.0.0.1:10256", "probe"),
        ("registry.k8s.io/kube-proxy:dev", "", "v1.33.1", probe(200, 200), "probe of", "probe"),
        (None, "v1.27.1", "v1.33.1", None, "1.30-1.33 (kubelet hint)", "kubelet-version"),
        (None, "", "v1.31.0", None, "1.28-1.31 (kubelet hint)", "kubelet-version"),
        (None, "", "custom", None, "unknown ('custom')", "kubelet-version"),
        (None, "", "", None, "unknown", "none"),
    ],
    ids=[
        "pod-image-wins",
        "digest-falls-through-to-the-node-fields-hint",
        "unparsable-tag-is-unknown-not-the-kubelets",
        "probe-before-kubelet-hint",
        "probe-resolves-an-unparsable-tag",
        "kubelet-hint-last-and-before-the-node-field",
        "kubelet-hint-is-a-range",
        "unparsable-hint",
        "nothing",
    ],
)
def test_version_sources_in_order(
    pod_image: str | None,
    field: str,
    kubelet: str,
    seen: HealthProbe | None,
    display: str,
    source: str,
) -> None:
    pod = kube_proxy_pod("n", image=pod_image) if pod_image else None
    facts = detect(
        node("n", kubelet=kubelet, kube_proxy_field=field), pod, seen, DrainingGate.UNKNOWN
    )
    assert facts.source.value == source
    assert facts.version.display().startswith(display)


@pytest.mark.parametrize(
    ("kubelet", "expected"),
    [
        # Whatever the kubelet, a hint never makes /livez or draining definite (KEP-4004).
        ("v1.33.1", caps(True, None, None)),
        ("v1.31.0", caps(True, None, None)),
        ("v1.30.2", caps(True, None, None)),
        # ... but what not even the newest kube-proxy it allows can do is certain.
        ("v1.27.3", caps(True, False, False)),
        ("v1.6.13", caps(False, False, False)),
        ("v1.9.0", caps(None, False, False)),  # 1.6-1.9: /healthz from 1.7.2 on
    ],
)
def test_a_kubelet_hint_never_makes_livez_or_draining_definite(
    kubelet: str, expected: Capabilities
) -> None:
    facts = detect(node("n", kubelet=kubelet), None, None, DrainingGate.UNKNOWN)
    assert facts.source is VersionSource.KUBELET_VERSION and facts.capabilities == expected


def test_a_digest_only_image_is_said_and_the_next_source_used() -> None:
    facts = detect(
        node("n", kubelet="v1.31.0"), kube_proxy_pod("n", image=DIGEST), None, DrainingGate.UNKNOWN
    )
    assert facts.source is VersionSource.KUBELET_VERSION
    assert "pinned by digest" in facts.note and facts.to_json()["note"] == facts.note


def test_a_node_needs_a_probe_exactly_when_detect_would_use_one() -> None:
    digest = kube_proxy_pod("n", image=DIGEST)
    latest = kube_proxy_pod("n", image="registry.k8s.io/kube-proxy:latest")
    # Only a parsable image tag makes a probe unnecessary; the node field is only a hint.
    assert needs_probe(node("n", kube_proxy_field="v1.31.0"), digest)
    assert needs_probe(node("n", kube_proxy_field="v1.31.0"), latest)
    assert needs_probe(node("n"), None)
    assert not needs_probe(
        node("n"), kube_proxy_pod("n", image="registry.k8s.io/kube-proxy:v1.31.4")
    )


def test_assumed_version_overrides_every_source() -> None:
    pod = kube_proxy_pod("n", image="registry.k8s.io/kube-proxy:v1.6.0")
    facts = detect(node("n"), pod, probe(None, None), DrainingGate.UNKNOWN, (1, 31, 0))
    assert facts.source is VersionSource.ASSUMED
    assert facts.capabilities == caps(True, True, True)


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


# k8s.io/cloud-provider controllers/service/controller.go nodeIncludedPredicate: the label's
# value through strconv.ParseBool; an error excludes the node, as true does.
@pytest.mark.parametrize(
    ("value", "excluded"),
    [
        (None, False),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("t", True),
        ("1", True),
        ("false", False),
        ("False", False),
        ("FALSE", False),
        ("f", False),
        ("F", False),
        ("0", False),
        ("", True),  # present, unparsable
        ("yes", True),
        ("no", True),
        ("FaLsE", True),
        (" false", True),
    ],
)
def test_the_exclusion_label_is_a_bool_as_the_service_controller_reads_it(
    value: str | None, excluded: bool
) -> None:
    labels = {} if value is None else {EXCLUDE_FROM_LB_LABEL: value}
    the_node = node(labels=labels)
    assert is_excluded_from_load_balancers(the_node) is excluded
    assert can_receive_lb_traffic(the_node) is not excluded


@pytest.mark.parametrize(
    ("items", "separator", "shown"),
    [
        (["a", "b"], ", ", "a, b"),
        (["a", "b", "c"], ", ", "a, b, c"),
        (["a", "b", "c", "d", "e"], ", ", "a, b, c and 2 more"),
        (["a (x, y)", "b", "c", "d"], "; ", "a (x, y); b; c; and 1 more"),
        ([], ", ", ""),
    ],
)
def test_first_few_names_the_first_and_counts_the_rest(
    items: list[str], separator: str, shown: str
) -> None:
    assert first_few(items, 3, separator) == shown
