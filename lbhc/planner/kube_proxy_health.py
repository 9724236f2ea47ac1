"""A context-aware view of kube-proxy health, in the spirit of a "system components healthy"
condition: a kube-proxy that is unready because its node is being deleted is expected (its
/healthz drains the node on purpose), not a failure to page anyone about."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lbhc.model.cluster import ClusterSnapshot, DaemonSet, Node, Pod
from lbhc.planner.kube_proxy import matches
from lbhc.planner.listing import first_few
from lbhc.planner.nodes import is_being_deleted

_MAX_NAMES = 5
# A node or Pod younger than this is still starting: no kube-proxy yet, or not ready yet,
# is expected (a scale-up must not page). The alert's own `for:` covers longer delays.
STARTUP_GRACE_SEC = 180.0


class PodHealth(StrEnum):
    READY = "ready"
    EXPECTED_UNREADY = "expected-unready"
    UNREADY = "unready"
    MISSING = "missing"


@dataclass(frozen=True)
class KubeProxyPodStatus:
    node: str
    pod: str  # "" when missing
    state: PodHealth
    reason: str

    def to_json(self) -> dict[str, str]:
        return {
            "node": self.node,
            "pod": self.pod,
            "state": self.state.value,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class KubeProxyHealth:
    """`healthy` is None when there is no kube-proxy to judge (none found at all)."""

    pods: tuple[KubeProxyPodStatus, ...]
    healthy: bool | None
    message: str

    def counts(self) -> dict[str, int]:
        found = Counter(status.state for status in self.pods)
        return {state.value: found.get(state, 0) for state in PodHealth}

    def to_json(self) -> dict[str, object]:
        return {
            "healthy": self.healthy,
            "message": self.message,
            "counts": self.counts(),
            "pods": [status.to_json() for status in self.pods],
        }


def age(created: str, now: float | None) -> float | None:
    if now is None or not created:
        return None
    try:
        return now - datetime.fromisoformat(created).timestamp()
    except ValueError:
        return None


def is_starting(created: str, now: float | None) -> bool:
    seconds = age(created, now)
    return seconds is not None and seconds < STARTUP_GRACE_SEC


def pod_health(pod: Pod, node_being_deleted: bool, now: float | None) -> tuple[PodHealth, str]:
    if pod.ready:
        return PodHealth.READY, "Ready"
    if node_being_deleted:
        return PodHealth.EXPECTED_UNREADY, "unready because its node is being deleted"
    if pod.metadata.deletion_timestamp:
        return PodHealth.EXPECTED_UNREADY, "unready while terminating (a rollout or eviction)"
    if is_starting(pod.metadata.creation_timestamp, now):
        return PodHealth.EXPECTED_UNREADY, "not Ready yet: started less than 3 minutes ago"
    return PodHealth.UNREADY, f"not Ready (phase {pod.status.phase or 'unknown'})"


def should_run_kube_proxy(node: Node, daemonsets: tuple[DaemonSet, ...]) -> bool:
    """Where a kube-proxy DaemonSet's nodeSelector matches (every node when kube-proxy runs
    as static Pods, as on GKE, and no DaemonSet is known)."""
    if not daemonsets:
        return True
    labels = node.metadata.labels
    return any(matches(labels, ds.spec.template.spec.node_selector.items()) for ds in daemonsets)


def kube_proxy_health(
    cluster: ClusterSnapshot,
    pods: Mapping[str, Pod],
    daemonsets: tuple[DaemonSet, ...] = (),
    replacement: str = "",
) -> KubeProxyHealth:
    """`replacement`: the known replacement running instead of kube-proxy, for the message."""
    if not pods and replacement:
        message = f"no kube-proxy Pods: kube-proxy is replaced by {replacement}"
        return KubeProxyHealth((), None, message)
    if not pods:
        return KubeProxyHealth(
            (),
            None,
            "no kube-proxy Pods found: kube-proxy is replaced (e.g. by a CNI) or the "
            "kube-proxy namespace/selector settings do not match it",
        )
    statuses: list[KubeProxyPodStatus] = []
    for node in cluster.nodes:
        deleting = is_being_deleted(node)
        pod = pods.get(node.name)
        if pod is None:
            # A node on its way out may have lost its Pod; a new one may not have it yet.
            starting = is_starting(node.metadata.creation_timestamp, cluster.observed_at)
            if not deleting and not starting and should_run_kube_proxy(node, daemonsets):
                statuses.append(
                    KubeProxyPodStatus(node.name, "", PodHealth.MISSING, "no kube-proxy Pod")
                )
            continue
        state, reason = pod_health(pod, deleting, cluster.observed_at)
        statuses.append(KubeProxyPodStatus(node.name, pod.metadata.name, state, reason))
    return summarize(tuple(statuses))


def summarize(statuses: tuple[KubeProxyPodStatus, ...]) -> KubeProxyHealth:
    by_state: dict[PodHealth, list[str]] = {state: [] for state in PodHealth}
    for status in statuses:
        by_state[status.state].append(status.node)
    parts = []
    for state, nodes in by_state.items():
        part = f"{len(nodes)} {state.value}"
        if nodes and state is not PodHealth.READY:
            part += f" ({first_few(sorted(nodes), _MAX_NAMES)})"
        parts.append(part)
    healthy = not by_state[PodHealth.UNREADY] and not by_state[PodHealth.MISSING]
    return KubeProxyHealth(statuses, healthy, "kube-proxy: " + ", ".join(parts))
