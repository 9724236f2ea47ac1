"""kube-proxy per node: which Pod is the node's kube-proxy, and what lbhc knows about it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lbhc.model.cluster import ClusterSnapshot, Pod
from lbhc.planner.capabilities import KubeProxyFacts, detect
from lbhc.planner.config import FallbackPolicy, PlannerConfig
from lbhc.planner.versions import version_from_node_field, version_from_pod


def matches(labels: Mapping[str, str], selector: Iterable[tuple[str, str]]) -> bool:
    return all(labels.get(key) == value for key, value in selector)


def is_kube_proxy_pod(pod: Pod, config: PlannerConfig) -> bool:
    return pod.metadata.namespace == config.kube_proxy_namespace and matches(
        pod.metadata.labels, config.kube_proxy_selector
    )


def kube_proxy_pods_by_node(pods: Iterable[Pod], config: PlannerConfig) -> dict[str, Pod]:
    """A terminating Pod gives way to its replacement on the same node."""
    by_node: dict[str, Pod] = {}
    for pod in pods:
        if not pod.spec.node_name or not is_kube_proxy_pod(pod, config):
            continue
        current = by_node.get(pod.spec.node_name)
        if current is None or current.metadata.deletion_timestamp:
            by_node[pod.spec.node_name] = pod
    return by_node


def facts_by_node(
    cluster: ClusterSnapshot, config: PlannerConfig, pods: Mapping[str, Pod] | None = None
) -> dict[str, KubeProxyFacts]:
    if pods is None:
        pods = kube_proxy_pods_by_node(cluster.kube_proxy_pods, config)
    assumed = (
        config.assumed_version if config.fallback_policy is FallbackPolicy.ASSUME_VERSION else None
    )
    return {
        node.name: detect(
            node,
            pods.get(node.name),
            cluster.health_probes.get(node.name),
            config.draining_gate,
            assumed,
        )
        for node in cluster.nodes
    }


def nodes_to_probe(cluster: ClusterSnapshot, config: PlannerConfig) -> dict[str, str]:
    """Nodes (name -> InternalIP) whose kube-proxy version neither its Pod's image nor the
    node field tells: the active probe is the next-best source for them."""
    if config.fallback_policy is FallbackPolicy.ASSUME_VERSION:
        return {}
    pods = kube_proxy_pods_by_node(cluster.kube_proxy_pods, config)
    wanted: dict[str, str] = {}
    for node in cluster.nodes:
        if not node.internal_ip:
            continue
        known = (version_from_pod(pods.get(node.name)), version_from_node_field(node))
        if not any(found is not None and found.version is not None for found in known):
            wanted[node.name] = node.internal_ip
    return wanted
