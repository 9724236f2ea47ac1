"""Per target pool: do its check's probes reach the nodes? And does a pool need lbhc's firewall
for that? GCE sends a pool's probes to each forwarding rule's IP on the check's port
(kubernetes/kubernetes#117723), so a pool is judged once per rule IP; pools that share a
check port and the rules that decide form one class, evaluated once (firewall_reach).

The cloud provider's node firewall, `k8s-<id>-node-http-hc`, is pinned to the IP of the first
Cluster load balancer it ensures (cloud-provider-gcp providers/gce/
gce_loadbalancer_external.go: ensureHTTPHealthCheckFirewall passes the IP to firewallObject,
which sets destinationRanges; its drift check ignores them). Unless another rule admits
them, every other pool's probes meet the implied deny, all its instances read UNHEALTHY and
the pool fails open: it drains nothing. lbhc's own firewall has no destination ranges."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from lbhc.model.backend import BackendService
from lbhc.model.cloud import CloudSnapshot, Firewall, ForwardingRule, network_url, resource_path
from lbhc.model.firewall import EffectiveFirewall
from lbhc.planner.claims import PoolClaim
from lbhc.planner.config import INTERNAL_HEALTH_CHECKER_RANGES, PlannerConfig
from lbhc.planner.coverage import PoolCoverage
from lbhc.planner.firewall_reach import ProbeVerdict, Reach, ReachEvaluator
from lbhc.planner.firewall_rules import (
    CLOUD_PROVIDER_ALLOW_PRIORITY,
    Backends,
    cloud_provider_deny_rule,
)

_ORDER = (Reach.BLOCKED, Reach.PARTLY_BLOCKED, Reach.UNKNOWN, Reach.ADMITTED)


@dataclass(frozen=True)
class PoolReach:
    """What the firewall does with one pool's probes, per forwarding-rule IP."""

    verdicts: tuple[ProbeVerdict, ...] = ()
    unknown: str = ""  # why it cannot be judged at all ("" when verdicts are given)

    @property
    def reach(self) -> Reach:
        if self.unknown or not self.verdicts:
            return Reach.UNKNOWN
        found = {v.reach for v in self.verdicts}
        return next(r for r in _ORDER if r in found)

    @property
    def blocked(self) -> bool:
        return self.reach in (Reach.BLOCKED, Reach.PARTLY_BLOCKED)

    @property
    def fixable(self) -> bool:
        return self.blocked and all(v.fixable for v in self.verdicts if v.blocked)

    def explain(self) -> str:
        if self.unknown:
            return self.unknown
        worst = next(v for v in self.verdicts if v.reach is self.reach)
        return worst.explain()


class View(Enum):
    """Which firewall a pool is judged against."""

    ACTUAL = "as read"
    WITHOUT_OURS = "without lbhc's rule"
    WITH_PLANNED = "with lbhc's rule as planned, in place of whatever it is now"


def backends_of(config: PlannerConfig) -> Backends:
    """The nodes as the firewall sees them: the configured network and node tags (the
    nodes' service accounts are not known to lbhc)."""
    return Backends(network_url(config.firewall_project, config.network), config.node_tags)


class ReachJudge:
    """Evaluators per (view, check port), each built once and asked for every pool."""

    def __init__(
        self,
        cloud: CloudSnapshot,
        config: PlannerConfig,
        ours: str,
        planned: Firewall | None = None,
    ) -> None:
        """`ours`: the name of lbhc's firewall; `planned`: that rule as lbhc wants it."""
        self._cloud, self._config, self._ours, self._planned = cloud, config, ours, planned
        self._evaluators: dict[tuple[View, int, tuple[str, ...]], ReachEvaluator] = {}
        # A pool's probes go to the forwarding rules that target it; the cloud provider names
        # its rule like the pool, which serves when a rule's target was not read. A backend
        # service's go to the rules that point at it, the same way.
        self._by_target: dict[str, list[ForwardingRule]] = {}
        for rule in cloud.forwarding_rules:
            for target in (rule.target, rule.backend_service):
                if target:
                    self._by_target.setdefault(resource_path(target), []).append(rule)
        self._by_name = {rule.name: rule for rule in cloud.forwarding_rules}

    @property
    def firewall(self) -> EffectiveFirewall | None:
        return self._cloud.effective_firewall

    def _evaluator(self, view: View, port: int, sources: tuple[str, ...]) -> ReachEvaluator:
        firewall = self.firewall
        assert firewall is not None
        if view is View.WITHOUT_OURS and all(r.name != self._ours for r in firewall.rules):
            view = View.ACTUAL  # the same firewall: judged once
        found = self._evaluators.get((view, port, sources))
        if found is not None:
            return found
        extra: tuple[Firewall, ...] = ()
        if view is not View.ACTUAL:
            rules = tuple(r for r in firewall.rules if r.name != self._ours)
            firewall = EffectiveFirewall(
                firewall.network, rules, firewall.policies, firewall.policy_after_vpc_rules
            )
            if view is View.WITH_PLANNED and self._planned is not None:
                extra = (self._planned,)
        found = self._evaluators[(view, port, sources)] = ReachEvaluator(
            firewall, backends_of(self._config), port, sources, extra
        )
        return found

    def _ips(self, claim: PoolClaim) -> tuple[str, ...]:
        pool = claim.pool
        rules = self._by_target.get(resource_path(pool.self_link), []) if pool.self_link else []
        if not rules and pool.name in self._by_name:
            rules = [self._by_name[pool.name]]
        return tuple(sorted({rule.ip_address for rule in rules if rule.ip_address}))

    def judge(self, claim: PoolClaim, port: int, view: View = View.ACTUAL) -> PoolReach:
        return self._judge_ips(self._ips(claim), port, self._config.source_ranges, view)

    def judge_backend(self, backend: BackendService, port: int) -> PoolReach:
        """A backend service's probes: to its forwarding rules' IPs, from the probe ranges of
        its scheme (an internal load balancer's include 130.211.0.0/22)."""
        rules = self._by_target.get(resource_path(backend.self_link), [])
        ips = tuple(sorted({rule.ip_address for rule in rules if rule.ip_address}))
        sources = INTERNAL_HEALTH_CHECKER_RANGES if backend.internal else self._config.source_ranges
        return self._judge_ips(ips, port, sources, View.ACTUAL)

    def _judge_ips(
        self, ips: tuple[str, ...], port: int, sources: tuple[str, ...], view: View
    ) -> PoolReach:
        if self.firewall is None:
            why = self._cloud.effective_firewall_unreadable or "not read"
            return PoolReach(unknown=f"the network's effective firewall could not be read ({why})")
        if not ips:
            return PoolReach(unknown="no forwarding rule with an IP sends to it yet")
        evaluator = self._evaluator(view, port, sources)
        return PoolReach(tuple(evaluator.verdict(ip) for ip in ips))


def reach_by_pool(
    judge: ReachJudge, pool_claims: Mapping[str, PoolClaim], coverage: Mapping[str, PoolCoverage]
) -> dict[str, PoolReach]:
    """Pool name -> reach, for every pool of this cluster carrying a readable check."""
    found: dict[str, PoolReach] = {}
    for name, claim in pool_claims.items():
        check = coverage[name].check
        if check is not None:
            found[name] = judge.judge(claim, check.port)
    return found


def our_firewall_priority(firewall: EffectiveFirewall | None) -> int:
    """The cloud provider's own allow priority, 999, when it runs with its per-LB deny rules
    at 1000 (enableL4DenyFirewallRule; an allow at 1000 would lose the tie); else the
    default 1000."""
    if firewall is not None and any(cloud_provider_deny_rule(r) for r in firewall.rules):
        return CLOUD_PROVIDER_ALLOW_PRIORITY
    return 1000
