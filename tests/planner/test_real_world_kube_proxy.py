"""kube-proxy as the clusters people run label and package it: kubeadm's DaemonSet, kube-up's
and GKE's static (mirror) Pods (kubernetes cluster/gce/manifests/kube-proxy.manifest, images
like gke.gcr.io/kube-proxy-amd64:v1.31.5-gke.1200000), Gardener's per-worker-pool DaemonSets
(gardener pkg/component/kubernetes/proxy), and images pinned by digest."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lbhc.model.cluster import Pod
from lbhc.planner.config import ReadinessPolicy, selector_text
from lbhc.planner.kube_proxy import facts_by_node, is_static, kube_proxy_selector
from lbhc.planner.readiness import FindingKind, review_readiness
from tests.builders import cluster, config, kube, node

KUBEADM = {
    "k8s-app": "kube-proxy",
    "controller-revision-hash": "7d9f",
    "pod-template-generation": "1",
}
STATIC = {"component": "kube-proxy", "tier": "node"}
GARDENER = {"app": "kubernetes", "role": "proxy", "pool": "worker-a", "version": "1.30.8"}


def pod(
    node_name: str,
    image: str,
    labels: dict[str, str],
    *,
    owner: str = "DaemonSet",
    readiness: str | None = None,
) -> Pod:
    """As the API returns it: a DaemonSet's Pod, or a mirror Pod (owned by its Node)."""
    mirror = owner == "Node"
    name = f"kube-proxy-{node_name}" if mirror else f"kube-proxy-{node_name[-5:]}"
    tweaks = [kube.owned_by_node(node_name) if mirror else kube.owned_by_daemonset("u1")]
    if readiness:
        tweaks.append(kube.with_readiness_probe(readiness))
    obj = kube.pod(name, *tweaks, node_name=node_name, labels=labels, image=image, ready=True)
    return Pod.model_validate(obj)


@dataclass(frozen=True)
class Case:
    id: str
    pod: Pod
    selector: str
    version: str
    source: str
    static: bool = False
    note: str = ""


CASES = [
    Case(
        "kubeadm DaemonSet",
        pod("n1", "registry.k8s.io/kube-proxy:v1.31.4", KUBEADM),
        "k8s-app=kube-proxy",
        "v1.31.4",
        "pod-image",
    ),
    Case(
        "GKE static mirror Pod",
        pod("n1", "gke.gcr.io/kube-proxy-amd64:v1.31.5-gke.1200000", STATIC, owner="Node"),
        "component=kube-proxy,tier=node",
        "v1.31.5",
        "pod-image",
        static=True,
    ),
    Case(
        "kube-up static Pod",
        pod("n1", "registry.k8s.io/kube-proxy-amd64:v1.29.6", STATIC, owner="Node"),
        "component=kube-proxy,tier=node",
        "v1.29.6",
        "pod-image",
        static=True,
    ),
    Case(
        "Gardener worker-pool DaemonSet Pod",
        pod("n1", "registry.k8s.io/kube-proxy:v1.30.8", GARDENER),
        "app=kubernetes,role=proxy",
        "v1.30.8",
        "pod-image",
    ),
    Case(
        "digest-only image: said, and the kubelet's hint used",
        pod("n1", "registry.k8s.io/kube-proxy@sha256:3c1e", KUBEADM),
        "k8s-app=kube-proxy",
        "1.28-1.31 (kubelet hint)",
        "kubelet-version",
        note="pinned by digest",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kube_proxy_is_found_and_read_as_each_installer_runs_it(case: Case) -> None:
    snapshot = cluster(nodes=(node("n1", kubelet="v1.31.4"),), pods=(case.pod,))
    cfg = config()
    selected = kube_proxy_selector(snapshot.kube_proxy_pods, cfg)
    assert selected is not None and selector_text(selected) == case.selector
    facts = facts_by_node(snapshot, cfg)["n1"]
    assert (facts.version.display(), facts.source.value) == (case.version, case.source)
    assert is_static(case.pod) is case.static
    assert case.note in facts.note


def test_the_first_alternative_that_selects_a_pod_wins_and_others_are_ignored() -> None:
    """A Gardener cluster may also run some other Pod labelled k8s-app=kube-proxy-like; the
    order decides, and a single named selector replaces the alternatives."""
    kubeadm = pod("n1", "registry.k8s.io/kube-proxy:v1.31.4", KUBEADM)
    gardener = pod("n2", "registry.k8s.io/kube-proxy:v1.27.9", GARDENER)
    snapshot = cluster(nodes=(node("n1"), node("n2")), pods=(kubeadm, gardener))
    facts = facts_by_node(snapshot, config())
    assert facts["n2"].source.value == "kubelet-version"  # not selected: not kube-proxy here
    only_gardener = config(kube_proxy_selectors=((("app", "kubernetes"), ("role", "proxy")),))
    assert facts_by_node(snapshot, only_gardener)["n2"].version.display() == "v1.27.9"


def test_static_pods_are_audited_with_what_to_change_on_the_node_and_never_patched() -> None:
    pods = tuple(
        pod(
            n,
            "gke.gcr.io/kube-proxy-amd64:v1.31.5-gke.1200000",
            STATIC,
            owner="Node",
            readiness="/healthz",
        )
        for n in ("n1", "n2")
    )
    snapshot = cluster(nodes=(node("n1"), node("n2")), pods=pods)
    cfg = config(readiness_policy=ReadinessPolicy.ENFORCE)
    review = review_readiness(snapshot, facts_by_node(snapshot, cfg), cfg)
    (finding,) = review.findings
    assert finding.kind is FindingKind.READINESS_ON_HEALTHZ and finding.subject_kind == "Pod"
    assert "/etc/kubernetes/manifests/kube-proxy.manifest" in finding.message
    assert "2 static Pod(s)" in finding.message and "enforce skips it" in finding.message
    assert review.patches == ()
