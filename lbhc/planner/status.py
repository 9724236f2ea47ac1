"""`lbhc status` as data: per Service, per node, and the cluster-wide summaries, from the
same snapshots and plan the controller works from. Pure: the CLI and the controller render
or export it; GCE's own view (getHealth) is added by the caller when asked."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from lbhc.model.cloud import CloudSnapshot, http_health_check_url
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Action, Fallback, Plan
from lbhc.planner.capabilities import KubeProxyFacts
from lbhc.planner.config import PlannerConfig
from lbhc.planner.drain import DrainState, NodeDrain, node_drain
from lbhc.planner.kube_proxy import facts_by_node, kube_proxy_pods_by_node
from lbhc.planner.kube_proxy_health import KubeProxyHealth, kube_proxy_health
from lbhc.planner.planner import shared_name
from lbhc.planner.pools import carries, match_pools
from lbhc.planner.readiness import ReadinessReview, is_managed, review_readiness
from lbhc.planner.services import is_load_balancer


@dataclass(frozen=True)
class ServiceStatus:
    service: str
    traffic_policy: str
    pool: str  # "" when the cloud provider made none (yet)
    check: str  # attached | pending | not-attached | not-applicable
    reason: str

    def to_json(self) -> dict[str, str]:
        return {
            "service": self.service,
            "externalTrafficPolicy": self.traffic_policy,
            "targetPool": self.pool,
            "healthCheck": self.check,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class NodeStatus:
    node: str
    kube_proxy: KubeProxyFacts
    drain: NodeDrain
    pod_state: str  # the kube-proxy health view's state, "" when not judged

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "kubeProxy": self.kube_proxy.to_json(),
            "drain": self.drain.to_json(),
            "kubeProxyPod": self.pod_state,
        }


@dataclass(frozen=True)
class StatusReport:
    health_check: str
    services: tuple[ServiceStatus, ...]
    nodes: tuple[NodeStatus, ...]
    fallback: Fallback | None
    check_in_use: bool
    kube_proxy: KubeProxyHealth
    readiness: ReadinessReview
    warnings: tuple[str, ...]

    def drain_counts(self) -> dict[str, int]:
        found = Counter(n.drain.state for n in self.nodes)
        return {state.value: found.get(state, 0) for state in DrainState}

    def to_json(self) -> dict[str, Any]:
        return {
            "healthCheck": self.health_check,
            "checkInUse": self.check_in_use,
            "fallback": self.fallback.to_json() if self.fallback else None,
            "drainCounts": self.drain_counts(),
            "kubeProxyHealth": self.kube_proxy.to_json(),
            "readiness": self.readiness.to_json(),
            "services": [s.to_json() for s in self.services],
            "nodes": [n.to_json() for n in self.nodes],
            "warnings": list(self.warnings),
        }


def assess(
    cluster: ClusterSnapshot, cloud: CloudSnapshot, config: PlannerConfig, plan: Plan
) -> StatusReport:
    _, name = shared_name(cluster, config)
    url = http_health_check_url(config.project, name)
    pending = {c.name for c in plan.changes if c.action is Action.ATTACH}
    detaching = {c.name for c in plan.changes if c.action is Action.DETACH}
    attached = {p.name for p in cloud.target_pools if carries(p, url)}
    check_in_use = plan.fallback is None and bool(attached - detaching)

    pods = kube_proxy_pods_by_node(cluster.kube_proxy_pods, config)
    facts = facts_by_node(cluster, config, pods)
    managed = tuple(ds for ds in cluster.kube_proxy_daemonsets if is_managed(ds, config))
    health = kube_proxy_health(cluster, pods, managed)
    pod_states = {status.node: status.state.value for status in health.pods}
    nodes = tuple(
        NodeStatus(
            node.name,
            facts[node.name],
            node_drain(node, facts[node.name], check_in_use),
            pod_states.get(node.name, ""),
        )
        for node in sorted(cluster.nodes, key=lambda n: n.name)
    )
    return StatusReport(
        health_check=name,
        services=_services(cluster, cloud, config, plan, attached, pending),
        nodes=nodes,
        fallback=plan.fallback,
        check_in_use=check_in_use,
        kube_proxy=health,
        readiness=review_readiness(cluster, facts, config),
        warnings=plan.warnings,
    )


def _services(
    cluster: ClusterSnapshot,
    cloud: CloudSnapshot,
    config: PlannerConfig,
    plan: Plan,
    attached: set[str],
    pending: set[str],
) -> tuple[ServiceStatus, ...]:
    pools = {pool.name: pool for pool in cloud.target_pools}
    rules = {rule.name: rule for rule in cloud.forwarding_rules}
    claims = {
        claim.service.key: claim
        for claim in match_pools(cluster.services, pools, rules, config, []).values()
    }
    found: list[ServiceStatus] = []
    for service in sorted(cluster.services, key=lambda s: s.key):
        if not is_load_balancer(service):
            continue
        policy = service.spec.external_traffic_policy
        claim = claims.get(service.key)
        if claim is None:
            found.append(
                ServiceStatus(
                    service.key,
                    policy,
                    "",
                    "not-applicable",
                    "no target pool of its own (not provisioned yet, or not a target-pool LB)",
                )
            )
            continue
        pool = claim.pool.name
        if claim.eligible_reason is not None:
            state = "attached" if pool in attached else "not-applicable"
            found.append(ServiceStatus(service.key, policy, pool, state, claim.eligible_reason))
        elif pool in attached:
            found.append(ServiceStatus(service.key, policy, pool, "attached", "carries the check"))
        elif pool in pending:
            found.append(ServiceStatus(service.key, policy, pool, "pending", "attach planned"))
        else:
            why = (
                f"fallback: {plan.fallback.reason}"
                if plan.fallback
                else "see the plan's warnings (foreign check, conflict or incomplete view)"
            )
            found.append(ServiceStatus(service.key, policy, pool, "not-attached", why))
    return tuple(found)
