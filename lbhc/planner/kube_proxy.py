"""kube-proxy per node: which Pod is the node's kube-proxy, and what lbhc knows about it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lbhc.model.cluster import ClusterSnapshot, Node, Pod, ProbeTarget
from lbhc.planner.capabilities import KubeProxyFacts, detect, needs_probe
from lbhc.planner.config import FallbackPolicy, PlannerConfig, ReplacementHealthz, Selector
from lbhc.planner.nodes import is_being_deleted
from lbhc.planner.replacement import Replacement, known_replacement, replaced_facts

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


def matches(labels: Mapping[str, str], selector: Iterable[tuple[str, str]]) -> bool:
    return all(labels.get(key) == value for key, value in selector)


def kube_proxy_selector(pods: Iterable[Pod], config: PlannerConfig) -> Selector | None:
    """The first of the configured alternatives that selects any Pod in the namespace: how
    this cluster runs kube-proxy. None when none does."""
    candidates = [p for p in pods if p.metadata.namespace == config.kube_proxy_namespace]
    for selector in config.kube_proxy_selectors:
        if any(matches(p.metadata.labels, selector) for p in candidates):
            return selector
    return None


def is_static(pod: Pod) -> bool:
    """A mirror Pod: the kubelet runs it from a manifest on the node; the API cannot change
    it (its owner is the Node)."""
    return any(ref.kind == "Node" for ref in pod.metadata.owner_references)


def kube_proxy_pods_by_node(pods: Iterable[Pod], config: PlannerConfig) -> dict[str, Pod]:
    """A terminating Pod gives way to its replacement on the same node."""
    pods = tuple(pods)
    selector = kube_proxy_selector(pods, config)
    if selector is None:
        return {}
    by_node: dict[str, Pod] = {}
    for pod in pods:
        if not pod.spec.node_name or pod.metadata.namespace != config.kube_proxy_namespace:
            continue
        if not matches(pod.metadata.labels, selector):
            continue
        if pod.status.phase in FINISHED_PHASES:  # an evicted or completed Pod runs nothing
            continue
        current = by_node.get(pod.spec.node_name)
        if current is None or current.metadata.deletion_timestamp:
            by_node[pod.spec.node_name] = pod
    return by_node


def replacement_of(cluster: ClusterSnapshot, config: PlannerConfig) -> Replacement | None:
    """The known kube-proxy replacement running here, when no kube-proxy Pod is found (none
    of the selector alternatives selects one): a kube-proxy found always wins."""
    replacement = known_replacement(cluster.kube_proxy_replacement)
    if replacement is None or kube_proxy_selector(cluster.kube_proxy_pods, config) is not None:
        return None
    return replacement


def replacement_setting(config: PlannerConfig) -> ReplacementHealthz:
    """`fallback_policy: assume-version` says as much as `replacement_serves_healthz: yes`:
    the port answers. Its version is not used for a known replacement, which is no
    kube-proxy of any version."""
    assumed = config.fallback_policy is FallbackPolicy.ASSUME_VERSION
    if assumed and config.replacement_serves_healthz is ReplacementHealthz.AUTO:
        return ReplacementHealthz.YES
    return config.replacement_serves_healthz


# The last snapshot's facts: a pass plans and then assesses the same snapshot, and at
# thousands of nodes judging each node's kube-proxy twice is most of a pass's CPU. Held with
# the snapshot and config themselves (one tuple, replaced whole, so threads never see half of
# it), so identity, not a recycled id, decides.
_last_facts: list[tuple[ClusterSnapshot, PlannerConfig, Mapping[str, KubeProxyFacts]]] = []


def facts_by_node(
    cluster: ClusterSnapshot, config: PlannerConfig, pods: Mapping[str, Pod] | None = None
) -> dict[str, KubeProxyFacts]:
    last = _last_facts[0] if _last_facts else None
    if last is not None and last[0] is cluster and last[1] is config:
        return dict(last[2])
    facts = _facts_by_node(cluster, config, pods)
    _last_facts[:] = [(cluster, config, facts)]
    return dict(facts)


def _facts_by_node(
    cluster: ClusterSnapshot, config: PlannerConfig, pods: Mapping[str, Pod] | None
) -> dict[str, KubeProxyFacts]:
    replacement = replacement_of(cluster, config)
    if replacement is not None:
        setting = replacement_setting(config)
        return {
            node.name: replaced_facts(
                node, cluster.health_probes.get(node.name), replacement, setting
            )
            for node in cluster.nodes
        }
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


def nodes_to_probe(cluster: ClusterSnapshot, config: PlannerConfig) -> dict[str, ProbeTarget]:
    """Nodes whose kube-proxy version neither its Pod's image nor the node field tells
    (exactly those `detect` would consult a probe for), with where and in what state."""
    replacement = replacement_of(cluster, config)
    if replacement is not None and replacement_setting(config) is not ReplacementHealthz.AUTO:
        return {}
    if replacement is None and config.fallback_policy is FallbackPolicy.ASSUME_VERSION:
        return {}
    pods = kube_proxy_pods_by_node(cluster.kube_proxy_pods, config)
    return {
        node.name: ProbeTarget(
            node.internal_ip, is_being_deleted(node), is_settled(node, pods.get(node.name))
        )
        for node in cluster.nodes
        if node.internal_ip and needs_probe(node, pods.get(node.name))
    }


def is_settled(node: Node, pod: Pod | None) -> bool:
    """Refusals on its health port can mean "no health server" only on a Ready node whose
    kube-proxy Pod, if it has one, is running, Ready and not going away."""
    if not node.ready:
        return False
    if pod is None:
        return True
    return pod.status.phase == "Running" and pod.ready and not pod.metadata.deletion_timestamp
