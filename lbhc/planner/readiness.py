"""The readiness-probe policy for kube-proxy DaemonSets (the Gardener fix, gardener#12015):
probe readiness on /livez where every node of the DaemonSet serves it (>= 1.28), else on
/healthz, and never use /healthz for liveness, which restarts kube-proxy on nodes being
deleted. Pure: findings and the smallest patches out; the controller decides to send them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from lbhc.model.cluster import ClusterSnapshot, Container, DaemonSet, Pod, Probe
from lbhc.planner.capabilities import MIN_LIVEZ_VERSION, KubeProxyFacts, Version
from lbhc.planner.config import PlannerConfig, ReadinessPolicy
from lbhc.planner.kube_proxy import is_static, kube_proxy_pods_by_node, matches
from lbhc.planner.versions import HINT_SOURCES, VersionSource, image_tag, parse_version

HEALTHZ, LIVEZ = "/healthz", "/livez"
_MAX_NAMES = 5
_HEALTH_PATHS = (HEALTHZ, LIVEZ)


class FindingKind(StrEnum):
    READINESS_ON_HEALTHZ = "readiness-on-healthz"
    READINESS_LIVEZ_UNSUPPORTED = "readiness-on-livez-unsupported"
    LIVENESS_ON_HEALTHZ = "liveness-on-healthz"
    # A DaemonSet's Pods still running an image older than its template's.
    PODS_ON_OLDER_IMAGE = "pods-on-older-image"


@dataclass(frozen=True)
class ReadinessFinding:
    daemonset: str  # namespace/name of the DaemonSet, or of the first static Pod
    container: str
    kind: FindingKind
    message: str
    subject_kind: str = "DaemonSet"  # or "Pod": static (mirror) Pods, which have none

    def to_json(self) -> dict[str, str]:
        return {
            "daemonset": self.daemonset if self.subject_kind == "DaemonSet" else "",
            "subject": f"{self.subject_kind}/{self.daemonset}",
            "container": self.container,
            "kind": self.kind.value,
            "message": self.message,
        }


@dataclass(frozen=True)
class ProbePatch:
    """Set one container's readinessProbe.httpGet.path, and nothing else: a strategic merge
    patch merges containers by name and maps field by field. The resourceVersion makes it
    conditional (409 if the DaemonSet changed since it was read)."""

    namespace: str
    name: str
    resource_version: str
    container: str
    path: str

    def body(self) -> dict[str, Any]:
        probe = {"readinessProbe": {"httpGet": {"path": self.path}}}
        return {
            "metadata": {"resourceVersion": self.resource_version},
            "spec": {"template": {"spec": {"containers": [{"name": self.container, **probe}]}}},
        }


@dataclass(frozen=True)
class ReadinessReview:
    findings: tuple[ReadinessFinding, ...] = ()
    patches: tuple[ProbePatch, ...] = ()  # empty unless the policy is enforce
    # namespace/name -> the right readiness path, or "" when it cannot be decided yet
    right_paths: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "findings": [f.to_json() for f in self.findings],
            "rightPaths": dict(self.right_paths),
            "patches": [
                {"daemonset": f"{p.namespace}/{p.name}", "container": p.container, "path": p.path}
                for p in self.patches
            ],
        }


def is_managed(daemonset: DaemonSet, config: PlannerConfig) -> bool:
    return daemonset.metadata.namespace == config.kube_proxy_namespace and any(
        matches(daemonset.metadata.labels, selector) for selector in config.readiness_selectors
    )


def pods_of(daemonset: DaemonSet, pods: tuple[Pod, ...]) -> list[Pod]:
    """By owner reference; by the DaemonSet's selector when Pods carry none (a dump)."""
    uid = daemonset.metadata.uid
    owned = [p for p in pods if any(ref.uid == uid for ref in p.metadata.owner_references)]
    if owned or not daemonset.spec.selector.match_labels:
        return owned
    return [
        p
        for p in pods
        if not p.metadata.owner_references
        and p.metadata.namespace == daemonset.metadata.namespace
        and matches(p.metadata.labels, daemonset.spec.selector.match_labels.items())
    ]


def right_readiness_path(
    nodes: list[str], facts: Mapping[str, KubeProxyFacts], template_version: Version | None
) -> str:
    """The template's image decides (the Pods a rollout makes run it): /livez from 1.28 on,
    else /healthz. Only when its tag names no version do the nodes' kube-proxies decide:
    /livez when every one serves it, /healthz when one does not, "" when that cannot be told
    (no Pods yet, or a version unknown)."""
    if template_version is not None:
        return LIVEZ if template_version >= MIN_LIVEZ_VERSION else HEALTHZ
    if not nodes:
        return ""
    serves = [facts[n].capabilities.serves_livez if n in facts else None for n in nodes]
    if any(s is False for s in serves):
        return HEALTHZ
    return LIVEZ if all(serves) else ""


def enforceable(nodes: list[str], facts: Mapping[str, KubeProxyFacts]) -> bool:
    """A patch restarts kube-proxy everywhere: only on versions seen, never on a hint of the
    kubelet's version (kube-proxy may be older; KEP-4004) or on nothing."""
    weak = HINT_SOURCES | {VersionSource.NONE}
    return all(n in facts and facts[n].source not in weak for n in nodes)


def kube_proxy_container(containers: tuple[Container, ...]) -> Container | None:
    """The one named kube-proxy, else the only one: sidecars are never judged or patched."""
    for container in containers:
        if container.name == "kube-proxy":
            return container
    return containers[0] if len(containers) == 1 else None


def _path(probe: Probe | None, health_port: int) -> str:
    """The probe's path if it is an HTTP probe of kube-proxy's health port ("" otherwise; a
    named port cannot be resolved here, so it is not judged)."""
    if probe is None or probe.http_get is None or probe.http_get.port != health_port:
        return ""
    return probe.http_get.path if probe.http_get.path in _HEALTH_PATHS else ""


def review_readiness(
    cluster: ClusterSnapshot,
    facts: Mapping[str, KubeProxyFacts],
    config: PlannerConfig,
    pods: Mapping[str, Pod] | None = None,
) -> ReadinessReview:
    """`pods`: kube_proxy_pods_by_node, when the caller has it already (a pass at thousands
    of nodes need not group the Pods again)."""
    if config.readiness_policy is ReadinessPolicy.OFF:
        return ReadinessReview()
    findings: list[ReadinessFinding] = []
    patches: list[ProbePatch] = []
    right_paths: dict[str, str] = {}
    for daemonset in cluster.kube_proxy_daemonsets:
        container = kube_proxy_container(daemonset.spec.template.spec.containers)
        if not is_managed(daemonset, config) or container is None:
            continue
        nodes = sorted({p.spec.node_name for p in pods_of(daemonset, cluster.kube_proxy_pods)})
        nodes = [n for n in nodes if n]
        template = parse_version(image_tag(container.image))
        right = right_readiness_path(nodes, facts, template)
        right_paths[daemonset.key] = right
        may_drain = any(
            facts[n].capabilities.drains_when_deleted is not False for n in nodes if n in facts
        )
        readiness = _path(container.readiness_probe, config.port)
        liveness = _path(container.liveness_probe, config.port)
        findings += _container_findings(
            daemonset.key, container.name, readiness, liveness, right, may_drain
        )
        if right == LIVEZ and template is not None:
            findings += _older_pods(daemonset.key, container.name, nodes, facts)
        if (
            config.readiness_policy is ReadinessPolicy.ENFORCE
            and readiness
            and right
            and readiness != right
            and enforceable(nodes, facts)
        ):
            patches.append(
                ProbePatch(
                    daemonset.metadata.namespace,
                    daemonset.metadata.name,
                    daemonset.metadata.resource_version,
                    container.name,
                    right,
                )
            )
    if pods is None:
        pods = kube_proxy_pods_by_node(cluster.kube_proxy_pods, config)
    findings += _static_pod_findings(pods, facts, config)
    return ReadinessReview(tuple(findings), tuple(patches), right_paths)


def _older_pods(
    key: str, container: str, nodes: list[str], facts: Mapping[str, KubeProxyFacts]
) -> list[ReadinessFinding]:
    """The template says /livez; Pods not yet replaced may run an image that 404s there."""
    stale = [n for n in nodes if n in facts and facts[n].capabilities.serves_livez is False]
    if not stale:
        return []
    shown = ", ".join(stale[:_MAX_NAMES]) + (" ..." if len(stale) > _MAX_NAMES else "")
    return [
        ReadinessFinding(
            key,
            container,
            FindingKind.PODS_ON_OLDER_IMAGE,
            f"{len(stale)} Pod(s) still run a kube-proxy older than v1.28 (on {shown}), older "
            "than the template's image: they answer 404 on /livez until they are replaced",
        )
    ]


def _static_pod_findings(
    by_node: Mapping[str, Pod], facts: Mapping[str, KubeProxyFacts], config: PlannerConfig
) -> list[ReadinessFinding]:
    """Static (mirror) Pods, as kube-up and GKE run kube-proxy: reported with what to change
    on the node; no API call can change a mirror Pod, so enforce never patches them."""
    by_paths: dict[tuple[str, str, str], list[Pod]] = {}
    for pod in by_node.values():
        kube_proxy = kube_proxy_container(pod.spec.containers) if is_static(pod) else None
        if kube_proxy is None:
            continue
        paths = (
            kube_proxy.name,
            _path(kube_proxy.readiness_probe, config.port),
            _path(kube_proxy.liveness_probe, config.port),
        )
        by_paths.setdefault(paths, []).append(pod)
    found: list[ReadinessFinding] = []
    for (container, readiness, liveness), pods in sorted(by_paths.items()):
        nodes = sorted(p.spec.node_name for p in pods)
        right = right_readiness_path(nodes, facts, None)
        may_drain = any(facts[n].capabilities.drains_when_deleted is not False for n in nodes)
        first = pods[0].metadata
        where = (
            f" ({len(pods)} static Pod(s): edit the kube-proxy manifest on each node, e.g. "
            "/etc/kubernetes/manifests/kube-proxy.manifest; a mirror Pod cannot be patched "
            "through the API, so enforce skips it)"
        )
        for finding in _container_findings(
            f"{first.namespace}/{first.name}", container, readiness, liveness, right, may_drain
        ):
            found.append(replace(finding, message=finding.message + where, subject_kind="Pod"))
    return found


def _container_findings(
    key: str, container: str, readiness: str, liveness: str, right: str, may_drain: bool
) -> list[ReadinessFinding]:
    found: list[ReadinessFinding] = []
    if readiness == HEALTHZ and right == LIVEZ:
        found.append(
            ReadinessFinding(
                key,
                container,
                FindingKind.READINESS_ON_HEALTHZ,
                "readiness probe uses /healthz although every node's kube-proxy serves /livez: "
                "its Pods turn unready on every node being scaled down; probe /livez instead",
            )
        )
    elif readiness == LIVEZ and right == HEALTHZ:
        found.append(
            ReadinessFinding(
                key,
                container,
                FindingKind.READINESS_LIVEZ_UNSUPPORTED,
                "readiness probe uses /livez but some nodes run kube-proxy older than v1.28, "
                "which answers 404 there: those Pods never become ready; probe /healthz",
            )
        )
    if liveness == HEALTHZ and may_drain:
        found.append(
            ReadinessFinding(
                key,
                container,
                FindingKind.LIVENESS_ON_HEALTHZ,
                "liveness probe uses /healthz, which fails on purpose on nodes being deleted: "
                "kubelet restarts kube-proxy there during every scale-down; use /livez or none",
            )
        )
    return found
