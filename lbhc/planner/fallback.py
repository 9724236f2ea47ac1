"""Version-skew fallback: with the default policy, one node whose kube-proxy cannot serve
/healthz withdraws the shared check cluster-wide, as upstream did, because a check that
node cannot answer would mark it unhealthy in every pool and shift its traffic onto the
others."""

from __future__ import annotations

from collections.abc import Mapping

from lbhc.model.cluster import ClusterSnapshot, Node
from lbhc.model.plan import Fallback, Finding, FindingKind, NodeVersion
from lbhc.planner.capabilities import MIN_HEALTHZ_VERSION, KubeProxyFacts
from lbhc.planner.config import FallbackPolicy, PlannerConfig, UnknownVersionPolicy
from lbhc.planner.listing import first_few
from lbhc.planner.nodes import can_receive_lb_traffic, is_being_deleted
from lbhc.planner.versions import VersionSource

_MAX_NODES_IN_REASON = 5


def cannot_serve_healthz(facts: KubeProxyFacts, config: PlannerConfig) -> bool:
    serves = facts.capabilities.serves_healthz
    if serves is None and facts.source is VersionSource.REPLACEMENT:
        return True  # a replacement's port is not assumed to answer: only a probe or a setting
    if serves is None:
        return config.unknown_version_policy is UnknownVersionPolicy.FALLBACK
    return not serves


def _silent_while_leaving(node: Node, facts: KubeProxyFacts) -> bool:
    """A node being deleted may stop answering probes as it shuts down: that must not
    withdraw the check from every other node."""
    return facts.source is VersionSource.PROBE and is_being_deleted(node)


def decide_fallback(
    cluster: ClusterSnapshot,
    facts: Mapping[str, KubeProxyFacts],
    config: PlannerConfig,
    findings: list[Finding],
) -> Fallback | None:
    blocking = [
        NodeVersion(node.name, facts[node.name].version.display(), facts[node.name].source.value)
        for node in cluster.nodes
        if can_receive_lb_traffic(node)
        and cannot_serve_healthz(facts[node.name], config)
        and not _silent_while_leaving(node, facts[node.name])
    ]
    if not blocking:
        return None
    if config.fallback_policy is FallbackPolicy.NEVER:
        findings.append(
            Finding(
                FindingKind.SKEW_TOLERATED,
                "",
                f"fallback policy is never: the check stays attached although "
                f"{_listed(blocking)} cannot answer it, so their load-balancer traffic goes to "
                "other nodes",
            )
        )
        return None
    return Fallback(reason=_reason(blocking), nodes=tuple(blocking))


def _listed(nodes: list[NodeVersion]) -> str:
    return first_few(
        [f"{n.node} ({n.version} from {n.source})" for n in nodes], _MAX_NODES_IN_REASON
    )


def _reason(nodes: list[NodeVersion]) -> str:
    if all(n.source == VersionSource.REPLACEMENT.value for n in nodes):
        names = first_few([n.node for n in nodes], _MAX_NODES_IN_REASON)
        return (
            "kube-proxy is replaced, and its replacement's /healthz on the health port is not "
            f"known to answer on: {names}; enable the probe (probe.enabled) or set "
            "kube_proxy.replacement_serves_healthz: yes if it does"
        )
    minimum = "v{}.{}.{}".format(*MIN_HEALTHZ_VERSION)
    return (
        f"kube-proxy older than {minimum} or of unknown version cannot serve /healthz on: "
        f"{_listed(nodes)}"
    )
