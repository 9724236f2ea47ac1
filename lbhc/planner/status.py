"""`lbhc status` as data: per Service (its pool's coverage and what lbhc does about it), per
node (kube-proxy facts, drain state judged from the checks each pool really carries), and
the cluster-wide summaries, from the same snapshots and plan the controller works from.
Pure: the CLI and the controller render or export it; GCE's own view (getHealth) is added by
the caller when asked."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from lbhc.model.cloud import CloudSnapshot, http_health_check_url, resource_name
from lbhc.model.cluster import ClusterSnapshot, Service
from lbhc.model.plan import Action, Fallback, Plan
from lbhc.planner.backend_drain import backend_drain_views, backend_reach
from lbhc.planner.backend_lbs import BackendLb, backend_coverage, match_backend_lbs
from lbhc.planner.capabilities import KubeProxyFacts
from lbhc.planner.claims import PoolClaim, carries, match_pools
from lbhc.planner.config import HealthCheckMode, PlannerConfig, selector_text
from lbhc.planner.coverage import Coverage, PoolCoverage, coverage_by_pool, describe_check
from lbhc.planner.drain import Drainability, DrainState, NodeDrain
from lbhc.planner.drain_judge import DrainJudge
from lbhc.planner.kube_proxy import (
    facts_by_node,
    kube_proxy_pods_by_node,
    kube_proxy_selector,
    replacement_of,
)
from lbhc.planner.kube_proxy_health import KubeProxyHealth, kube_proxy_health
from lbhc.planner.lb_views import pool_drain_views
from lbhc.planner.nodes import is_serving
from lbhc.planner.planner import shared_name
from lbhc.planner.pool_classes import ClassVerdict, judge_class, pool_classes, with_failing_open
from lbhc.planner.pool_reach import PoolReach, ReachJudge, reach_by_pool
from lbhc.planner.readiness import ReadinessReview, is_managed, review_readiness
from lbhc.planner.services import is_load_balancer
from lbhc.planner.shared import read_ledger

NOT_JUDGED = Drainability(None, "not judged")


class LbhcCheckState(StrEnum):
    """What lbhc does about a Service's pool."""

    ATTACHED = "attached"  # carries lbhc's check
    PENDING = "pending"  # lbhc's attach is planned
    NOT_NEEDED = "not-needed"  # covered by another kube-proxy /healthz check
    NOT_ATTACHED = "not-attached"  # should carry it and does not (see the reason)
    NOT_APPLICABLE = "not-applicable"  # not lbhc's to check (Local, opted out, no pool...)


@dataclass(frozen=True)
class ServiceStatus:
    service: str
    traffic_policy: str
    pool: str  # "" when it has none
    coverage: Coverage
    check: str  # the check's name ("" for none)
    lbhc: LbhcCheckState
    reason: str
    # What the firewall does with the check's probes (admitted, blocked, partly-blocked,
    # unknown; "" with no check), and why.
    probe_reach: str = ""
    probe_reach_reason: str = ""
    # What the pool carries when `coverage` shows probe-blocked instead (None: as shown).
    carried: Coverage | None = None
    backend_service: str = ""  # a backend-service load balancer's, "" for a target pool's

    @property
    def load_balancer(self) -> str:
        """Its kind: target-pool, backend-service (external or internal), or none yet."""
        if self.pool:
            return "target-pool"
        return "backend-service" if self.backend_service else "none"

    @property
    def check_coverage(self) -> Coverage:
        """The coverage of the check the pool carries, whether its probes get in or not."""
        return self.carried or self.coverage

    def to_json(self) -> dict[str, str]:
        return {
            "service": self.service,
            "externalTrafficPolicy": self.traffic_policy,
            "targetPool": self.pool,
            "backendService": self.backend_service,
            "coverage": self.coverage.value,
            "checkName": self.check,
            "healthCheck": self.lbhc.value,
            "reason": self.reason,
            "probeReach": self.probe_reach,
            "probeReachReason": self.probe_reach_reason,
        }


@dataclass(frozen=True)
class NodeStatus:
    node: str
    kube_proxy: KubeProxyFacts
    drain: NodeDrain
    pod_state: str  # the kube-proxy health view's state, "" when not judged
    # Would a load balancer holding it drain it, were it marked now (planner/hold)?
    drainability: Drainability = NOT_JUDGED

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
    lbhc_pools: int  # pools carrying lbhc's check
    kube_proxy: KubeProxyHealth
    readiness: ReadinessReview
    warnings: tuple[str, ...]
    out_of_scope: int = 0
    nodes_complete: bool = True  # False: a node missing from `nodes` may still exist
    kube_proxy_selector: str = ""  # which alternative selected the Pods ("" for none)
    firewall_command: str = ""  # how a network admin makes lbhc's rule, while it is missing
    # The DaemonSet replacing kube-proxy (lbhc/planner/replacement.py), "" for none.
    kube_proxy_replacement: str = ""
    # Classes of pools probed alike, and what GCE's getHealth says of each (pool_classes).
    pool_classes: tuple[ClassVerdict, ...] = ()

    @property
    def check_in_use(self) -> bool:
        return self.lbhc_pools > 0

    def drain_counts(self) -> dict[str, int]:
        found = Counter(n.drain.state for n in self.nodes)
        return {state.value: found.get(state, 0) for state in DrainState}

    def coverage_counts(self) -> dict[str, int]:
        found = Counter(s.coverage for s in self.services)
        return {kind.value: found.get(kind, 0) for kind in Coverage}

    def coverage_by_load_balancer(self) -> dict[str, dict[str, int]]:
        """Per kind of load balancer (target-pool, backend-service, none), the coverage
        counts of the Services it serves (kinds with none are left out)."""
        found = Counter((s.load_balancer, s.coverage.value) for s in self.services)
        kinds = sorted({lb for lb, _ in found})
        return {lb: {c.value: found.get((lb, c.value), 0) for c in Coverage} for lb in kinds}

    def to_json(self) -> dict[str, Any]:
        return {
            "healthCheck": self.health_check,
            "checkInUse": self.check_in_use,
            "lbhcPools": self.lbhc_pools,
            "coverageCounts": self.coverage_counts(),
            "coverageByLoadBalancer": self.coverage_by_load_balancer(),
            "outOfScope": self.out_of_scope,
            "kubeProxySelector": self.kube_proxy_selector,
            "kubeProxyReplacement": self.kube_proxy_replacement or None,
            "firewallCommand": self.firewall_command,
            "fallback": self.fallback.to_json() if self.fallback else None,
            "drainCounts": self.drain_counts(),
            "kubeProxyHealth": self.kube_proxy.to_json(),
            "readiness": self.readiness.to_json(),
            "services": [s.to_json() for s in self.services],
            "nodes": [n.to_json() for n in self.nodes],
            "poolClasses": [v.to_json() for v in self.pool_classes],
            "warnings": list(self.warnings),
        }


def assess(
    cluster: ClusterSnapshot, cloud: CloudSnapshot, config: PlannerConfig, plan: Plan
) -> StatusReport:
    """`cloud` is what to judge from: as read (`lbhc status`), or as it is after the plan's
    changes that were carried out (the controller, planner/applied.py)."""
    _, name = shared_name(cluster, config)
    url = http_health_check_url(config.project, name)
    pools = {pool.name: pool for pool in cloud.target_pools}
    rules = {rule.name: rule for rule in cloud.forwarding_rules}
    pool_claims = match_pools(cluster.services, pools, rules, config, [])
    coverage = coverage_by_pool(pool_claims, cloud, url, cluster.cloud_provider_uid, config)
    judge = ReachJudge(cloud, config, name)
    reach = reach_by_pool(judge, pool_claims, coverage)
    base = pool_drain_views(pool_claims, coverage, config, reach) if cloud.pools_complete else None
    with_pools = {claim.service.key for claim in pool_claims.values()}
    backend_lbs = match_backend_lbs(cluster.services, cloud.backends, with_pools)
    backend_probes = backend_reach(backend_lbs, judge)

    pods = kube_proxy_pods_by_node(cluster.kube_proxy_pods, config)
    selected = kube_proxy_selector(cluster.kube_proxy_pods, config)
    facts = facts_by_node(cluster, config, pods)
    managed = tuple(ds for ds in cluster.kube_proxy_daemonsets if is_managed(ds, config))
    replacement = replacement_of(cluster, config)
    health = kube_proxy_health(cluster, pods, managed, replacement.display() if replacement else "")
    pod_states = {status.node: status.state.value for status in health.pods}
    lb = cloud.lb_health
    backend_drains = backend_drain_views(backend_lbs, config, backend_probes)
    classes = pool_classes(
        (*(base or ()), *(b.view for b in backend_drains)),
        {b.view.name: b.groups for b in backend_drains},
    )
    # Only nodes GCE was asked about can judge a class: a few, not every node of the cluster.
    read = {node for _, node in lb.readings}
    serving = {
        n.name
        for n in cluster.nodes
        if n.name in read and is_serving(n, pod_states.get(n.name, ""))
    }
    verdicts = tuple(judge_class(c, lb, serving, health.healthy, lb.max_age) for c in classes)
    without_pool = any(is_load_balancer(s) and s.key not in with_pools for s in cluster.services)
    drains = DrainJudge(
        with_failing_open(base, verdicts) if base is not None else None,
        classes,
        verdicts,
        lb,
        backend_drains,
        cloud.backends,
        config,
        cloud.backends.unreadable if without_pool else "",
    )
    nodes = tuple(
        NodeStatus(
            node.name,
            facts[node.name],
            drains.judge(node, facts[node.name]),
            pod_states.get(node.name, ""),
            drains.drainability(node, facts[node.name]),
        )
        for node in sorted(cluster.nodes, key=lambda n: n.name)
    )
    services = _ServiceJudge(
        cloud, config, plan, pool_claims, coverage, url, reach, backend_lbs, backend_probes
    )
    return StatusReport(
        health_check=name,
        services=tuple(
            services.status(s)
            for s in sorted(cluster.services, key=lambda s: s.key)
            if is_load_balancer(s)
        ),
        nodes=nodes,
        fallback=plan.fallback,
        lbhc_pools=sum(1 for p in cloud.target_pools if carries(p, url)),
        kube_proxy=health,
        readiness=review_readiness(cluster, facts, config, pods),
        warnings=plan.warnings,
        out_of_scope=plan.out_of_scope,
        nodes_complete=cluster.versions_complete,
        kube_proxy_selector=selector_text(selected) if selected else "",
        firewall_command=plan.firewall_command,
        kube_proxy_replacement=replacement.name if replacement else "",
        pool_classes=verdicts,
    )


class _ServiceJudge:
    """One Service's line: its pool's coverage, and lbhc's part in it, with the reason."""

    def __init__(
        self,
        cloud: CloudSnapshot,
        config: PlannerConfig,
        plan: Plan,
        pool_claims: Mapping[str, PoolClaim],
        coverage: Mapping[str, PoolCoverage],
        url: str,
        reach: Mapping[str, PoolReach],
        backend_lbs: Mapping[str, BackendLb],
        backend_reach: Mapping[str, PoolReach],
    ) -> None:
        """`backend_reach`: Service key -> what the firewall does with its backend-service
        load balancer's probes."""
        self._config, self._plan, self._coverage = config, plan, coverage
        self._reach = reach
        self._claims = {claim.service.key: claim for claim in pool_claims.values()}
        self._pending = {c.name for c in plan.changes if c.action is Action.ATTACH}
        self._ledger = read_ledger(cloud.health_check)
        self._url = url
        self._backend_lbs, self._backend_reach = backend_lbs, backend_reach
        self._backends_unreadable = cloud.backends.unreadable

    def status(self, service: Service) -> ServiceStatus:
        policy = service.spec.external_traffic_policy
        claim = self._claims.get(service.key)
        if claim is None:
            return self._without_pool(service)
        pool, cover = claim.pool.name, self._coverage[claim.pool.name]
        state, why = self._judge(claim, cover)
        line = ServiceStatus(service.key, policy, pool, cover.kind, cover.check_name, state, why)
        return _with_reach(line, self._reach.get(pool), "the pool")

    def _without_pool(self, service: Service) -> ServiceStatus:
        policy, lb = service.spec.external_traffic_policy, self._backend_lbs.get(service.key)
        if lb is None:
            why = (
                "no target pool, and no backend service lbhc can tell is its own (not made yet, "
                "or made by a controller lbhc does not know)"
            )
            if self._backends_unreadable:
                unread = self._backends_unreadable
                why = f"no target pool, and backend services could not be read: {unread}"
            return ServiceStatus(
                service.key, policy, "", Coverage.NO_POOL, "", LbhcCheckState.NOT_APPLICABLE, why
            )
        kind = backend_coverage(lb, self._config)
        scheme = "internal" if lb.backend.internal else "external"
        why = (
            f"a backend-service {scheme} load balancer made by {lb.made_by}, carrying "
            f"{lb.check_name or 'no health check'}: lbhc reads it, never writes it"
        )
        line = ServiceStatus(
            service.key,
            policy,
            "",
            kind,
            lb.check_name,
            LbhcCheckState.NOT_APPLICABLE,
            why,
            backend_service=lb.backend.name,
        )
        return _with_reach(line, self._backend_reach.get(service.key), "it")

    def _judge(self, claim: PoolClaim, cover: PoolCoverage) -> tuple[LbhcCheckState, str]:
        pool = claim.pool.name
        if claim.eligible_reason is not None:
            state = (
                LbhcCheckState.ATTACHED
                if cover.kind is Coverage.LBHC
                else LbhcCheckState.NOT_APPLICABLE
            )
            return state, claim.eligible_reason
        if cover.kind is Coverage.LBHC:
            recorded = self._ledger.recorded_for(pool)
            taken = f" (taken over from {resource_name(recorded)})" if recorded else ""
            return LbhcCheckState.ATTACHED, f"carries lbhc's check{taken}"
        if pool in self._pending:
            verb = "takes over" if cover.kind is not Coverage.NONE else "attaches its own"
            return LbhcCheckState.PENDING, f"{describe_check(cover)}; lbhc {verb} (planned)"
        if cover.kind is Coverage.CLOUD_PROVIDER:
            return (
                LbhcCheckState.NOT_NEEDED,
                "carries the cloud provider's node check (kube-proxy /healthz), which drains "
                "nodes being deleted",
            )
        if cover.kind is Coverage.EQUIVALENT:
            return (
                LbhcCheckState.NOT_NEEDED,
                f"carries {cover.check_name}, an equivalent kube-proxy /healthz check",
            )
        if self._plan.fallback is not None:
            return LbhcCheckState.NOT_ATTACHED, f"fallback: {self._plan.fallback.reason}"
        if cover.kind is Coverage.OTHER_CHECK:
            takeover = self._config.health_check_mode is HealthCheckMode.TAKEOVER
            hint = "see the plan's warnings" if takeover else "takeover mode replaces it"
            return (
                LbhcCheckState.NOT_ATTACHED,
                f"carries {describe_check(cover)}, which does not drain nodes being deleted; "
                f"{hint}",
            )
        return (
            LbhcCheckState.NOT_ATTACHED,
            "no health check; see the plan's warnings (conflict or incomplete view)",
        )


def _with_reach(line: ServiceStatus, probes: PoolReach | None, what: str) -> ServiceStatus:
    """The line with what the firewall does with its check's probes; shown as probe-blocked
    when it drops them, whatever the check (`what` fails open)."""
    if probes is None:
        return line
    shown, why = line.coverage, line.reason
    if probes.blocked:
        shown = Coverage.PROBE_BLOCKED
        why = f"{why}; but {probes.explain()}: its instances read UNHEALTHY and {what} fails open"
    return replace(
        line,
        coverage=shown,
        reason=why,
        probe_reach=probes.reach.value,
        probe_reach_reason=probes.explain(),
        carried=line.coverage if shown is not line.coverage else None,
    )
