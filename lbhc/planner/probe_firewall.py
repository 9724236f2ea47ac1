"""lbhc's firewall for pools that are not lbhc's: when the probes of a pool's kube-proxy check
are dropped only because no rule admits them (the cloud provider's node firewall is pinned
to another load balancer's IP, planner/pool_reach), lbhc's unpinned rule on the same port
admits them. It never overrides another deny, and never touches other owners' rules.

Admitting probes turns health checking on for a pool that was failing open, so the rule is
made only with evidence that the nodes answer the port (GCE's getHealth calling instances
HEALTHY in a pool whose probes are admitted, or the controller's own probe); without it,
and with `health_check.unblock_probes: false`, lbhc reports. Once made, the rule stays
while any pool needs it: removing it would make those pools fail open again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lbhc.model.cloud import CloudSnapshot
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.lb_health import InstanceHealth
from lbhc.model.plan import Finding, FindingKind
from lbhc.planner.claims import PoolClaim
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import Coverage, PoolCoverage
from lbhc.planner.firewall_reach import Reach
from lbhc.planner.listing import first_few
from lbhc.planner.pool_reach import PoolReach, ReachJudge, View
from lbhc.planner.shared_pair import FirewallNeed

_SHOWN = 3
EVIDENCE_POOLS = 3


@dataclass(frozen=True)
class ProbeFirewallPlan:
    need: FirewallNeed
    findings: tuple[Finding, ...] = ()
    evidence_wanted: tuple[str, ...] = ()
    needing: tuple[str, ...] = ()  # pools whose probes only lbhc's rule admits (or would)


def port_evidence(
    cluster: ClusterSnapshot, cloud: CloudSnapshot, port: int, admitted: Sequence[str] = ()
) -> str:
    """How it is known that the nodes answer `port`, or "". `admitted`: pools on the port
    whose probes are admitted; a HEALTHY reading in one, from the controller's own view of
    GCE, is evidence without another read."""
    if port in cloud.port_evidence:
        return cloud.port_evidence[port]
    wanted = frozenset(admitted)
    seen = sorted(
        (r.pool, r.node)
        for r in cloud.lb_health.readings.values()
        if r.pool in wanted and r.state is InstanceHealth.HEALTHY
    )
    if seen:
        return (
            f"GCE's getHealth called {len({n for _, n in seen})} node(s) HEALTHY in target pool "
            f"{seen[0][0]}, whose probes are admitted"
        )
    answered = sorted(
        node
        for node, probe in cluster.health_probes.items()
        if probe.healthz is not None or probe.livez is not None
    )
    if answered:
        return f"the controller's probe got an answer on port {port} from {len(answered)} node(s)"
    return ""


def plan_probe_firewall(
    judge: ReachJudge,
    pool_claims: Mapping[str, PoolClaim],
    coverage: Mapping[str, PoolCoverage],
    cluster: ClusterSnapshot,
    cloud: CloudSnapshot,
    config: PlannerConfig,
    *,
    command: str,
) -> ProbeFirewallPlan:
    """`command`: the gcloud line that makes lbhc's rule, for the findings. Pools carrying
    lbhc's own check are left to the shared pair's decision: they need the rule anyway."""
    ours_exists = cloud.firewall is not None
    port = config.port
    on_port = {
        name: claim
        for name, claim in sorted(pool_claims.items())
        if (check := coverage[name].check) is not None
        and check.port == port
        and coverage[name].kind not in (Coverage.LOCAL, Coverage.LBHC)
    }
    if judge.firewall is None:
        # Whether a pool on the port relies on lbhc's rule is unknown: it stays if it is there.
        return ProbeFirewallPlan(FirewallNeed(keep=ours_exists and bool(on_port)))
    needing: list[str] = []
    admitted: list[str] = []
    blocked: dict[tuple[bool, str], list[tuple[str, PoolClaim, PoolReach]]] = {}
    for name, claim in on_port.items():
        actual = judge.judge(claim, port)
        without = judge.judge(claim, port, View.WITHOUT_OURS)
        if without.fixable and judge.judge(claim, port, View.WITH_PLANNED).reach is Reach.ADMITTED:
            needing.append(name)
        if actual.reach is Reach.ADMITTED:
            admitted.append(name)
        elif actual.blocked:
            key = (actual.fixable, _deciders(actual))
            blocked.setdefault(key, []).append((name, claim, actual))
    findings = [_blocked_finding(fixable, pools) for (fixable, _), pools in sorted(blocked.items())]
    if not needing:
        return ProbeFirewallPlan(FirewallNeed(), tuple(findings))
    reason = (
        f"admits Google's health checkers to the nodes on tcp:{port} for {len(needing)} "
        f"target pool(s) whose probes no rule admits ({first_few(needing, _SHOWN)})"
    )
    if ours_exists:
        return ProbeFirewallPlan(
            FirewallNeed(keep=True, reason=reason), tuple(findings), (), tuple(needing)
        )
    if not config.unblock_probes:
        findings.append(
            _finding(
                f"health_check.unblock_probes is false: lbhc does not make its firewall for "
                f"{len(needing)} pool(s) whose probes no rule admits; to admit them: {command}"
            )
        )
        return ProbeFirewallPlan(FirewallNeed(), tuple(findings), (), tuple(needing))
    evidence = port_evidence(cluster, cloud, port, admitted)
    if evidence:
        need = FirewallNeed(keep=True, may_create=True, reason=f"{reason}; {evidence}")
        return ProbeFirewallPlan(need, tuple(findings), (), tuple(needing))
    if admitted:
        findings.append(
            _finding(
                f"lbhc's firewall would admit the probes of {len(needing)} pool(s); it is made "
                f"once GCE's getHealth shows the nodes answering tcp:{port} in a pool whose "
                f"probes are admitted ({', '.join(admitted[:EVIDENCE_POOLS])})"
            )
        )
        return ProbeFirewallPlan(
            FirewallNeed(), tuple(findings), tuple(admitted[:EVIDENCE_POOLS]), tuple(needing)
        )
    findings.append(
        _finding(
            f"lbhc's firewall would admit the probes of {len(needing)} pool(s), but nothing "
            f"shows the nodes answer tcp:{port} (no pool's probes are admitted, and the "
            f"controller's probe, probe.enabled, is off or has no answer yet): lbhc does not "
            f"turn health checking on blind; set probe.enabled, or run: {command}"
        )
    )
    return ProbeFirewallPlan(FirewallNeed(), tuple(findings), (), tuple(needing))


def _deciders(reach: PoolReach) -> str:
    return "; ".join(
        sorted({d.by for v in reach.verdicts for d in v.decisions if d.admitted is False})
    )


def _blocked_finding(fixable: bool, pools: Sequence[tuple[str, PoolClaim, PoolReach]]) -> Finding:
    name, claim, reach = pools[0]
    more = f" (and {len(pools) - 1} more pool(s) alike)" if len(pools) > 1 else ""
    then = (
        "lbhc's own rule can admit them (see below)"
        if fixable
        else "lbhc never overrides another deny: whoever owns that rule must change it"
    )
    return Finding(
        FindingKind.PROBES_BLOCKED,
        f"TargetPool {name}",
        f"target pool {name} (Service {claim.service.key}): {reach.explain()}{more}; its "
        f"instances read UNHEALTHY and it fails open, draining nothing; {then}",
    )


def _finding(text: str) -> Finding:
    return Finding(FindingKind.PROBES_BLOCKED, "", text)
