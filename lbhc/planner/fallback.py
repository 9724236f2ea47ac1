"""Version-skew fallback: one node whose kube-proxy cannot serve /healthz withdraws the
shared check cluster-wide, as upstream did, because a check that node cannot answer would
mark it unhealthy in every pool and shift its traffic onto the others."""

from __future__ import annotations

from collections.abc import Iterable

from lbhc.model.cluster import ClusterSnapshot, Pod
from lbhc.model.plan import Fallback, NodeVersion
from lbhc.planner.config import PlannerConfig, UnknownVersionPolicy
from lbhc.planner.nodes import can_receive_lb_traffic
from lbhc.planner.versions import MIN_HEALTHZ_VERSION, kube_proxy_version

_MAX_NODES_IN_REASON = 5


def is_kube_proxy_pod(pod: Pod, config: PlannerConfig) -> bool:
    if pod.metadata.namespace != config.kube_proxy_namespace:
        return False
    labels = pod.metadata.labels
    return all(labels.get(key) == value for key, value in config.kube_proxy_selector)


def kube_proxy_pods_by_node(pods: Iterable[Pod], config: PlannerConfig) -> dict[str, Pod]:
    by_node: dict[str, Pod] = {}
    for pod in pods:
        if pod.spec.node_name and is_kube_proxy_pod(pod, config):
            by_node[pod.spec.node_name] = pod
    return by_node


def decide_fallback(cluster: ClusterSnapshot, config: PlannerConfig) -> Fallback | None:
    pods = kube_proxy_pods_by_node(cluster.kube_proxy_pods, config)
    blocking: list[NodeVersion] = []
    for node in cluster.nodes:
        if not can_receive_lb_traffic(node):
            continue
        version = kube_proxy_version(node, pods.get(node.name))
        serves = version.serves_healthz()
        if serves is None:
            serves = config.unknown_version_policy is UnknownVersionPolicy.ASSUME_SUPPORTED
        if not serves:
            blocking.append(NodeVersion(node.name, version.display(), version.source.value))
    if not blocking:
        return None
    return Fallback(reason=_reason(blocking), nodes=tuple(blocking))


def _reason(nodes: list[NodeVersion]) -> str:
    minimum = "v{}.{}.{}".format(*MIN_HEALTHZ_VERSION)
    shown = ", ".join(
        f"{n.node} ({n.version} from {n.source})" for n in nodes[:_MAX_NODES_IN_REASON]
    )
    more = len(nodes) - _MAX_NODES_IN_REASON
    if more > 0:
        shown += f" and {more} more"
    return (
        f"kube-proxy older than {minimum} or of unknown version cannot serve /healthz on: {shown}"
    )
