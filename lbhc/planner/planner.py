"""plan(): the whole decision, as a pure function of two snapshots and the config."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator
from contextlib import contextmanager

from lbhc.model.cloud import (
    CloudSnapshot,
    http_health_check_url,
)
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import (
    DESTRUCTIVE_ACTIONS,
    Action,
    Attach,
    Finding,
    FindingKind,
    Kind,
    Plan,
)
from lbhc.planner.claims import PoolClaim, carries, match_pools
from lbhc.planner.config import HealthCheckMode, PlannerConfig
from lbhc.planner.coverage import TAKEOVER_REPLACES, Coverage, PoolCoverage, coverage_by_pool
from lbhc.planner.fallback import decide_fallback
from lbhc.planner.kube_proxy import facts_by_node, replacement_of, replacement_setting
from lbhc.planner.ledger import TakeoverLedger
from lbhc.planner.names import cluster_id_from_uid, is_valid_gce_name, shared_resource_name
from lbhc.planner.pool_reach import ReachJudge, our_firewall_priority
from lbhc.planner.pools import PoolContext, plan_pool_changes
from lbhc.planner.probe_firewall import plan_probe_firewall
from lbhc.planner.replacement import describe as describe_replacement
from lbhc.planner.scope import scope_mismatch
from lbhc.planner.shared import (
    firewall_command,
    is_owned,
    read_ledger,
)
from lbhc.planner.shared_pair import SharedPair, plan_shared
from lbhc.planner.takeover import fit_ledger, ledger_still_needed


class PlanningError(ValueError):
    """The inputs cannot yield a plan (e.g. no cluster id can be known)."""


def resolve_cluster_id(cluster: ClusterSnapshot, config: PlannerConfig) -> str:
    return cluster_id_for(cluster.kube_system_uid, config)


def cluster_id_for(kube_system_uid: str | None, config: PlannerConfig) -> str:
    if config.cluster_id:
        return config.cluster_id
    if kube_system_uid:
        return cluster_id_from_uid(kube_system_uid)
    raise PlanningError(
        "cluster id unknown: set --cluster-id (LBHC_HEALTH_CHECK_CLUSTER_ID), or include the "
        "kube-system Namespace in the cluster snapshot (kubectl get namespace kube-system -o json)"
    )


def shared_name(cluster: ClusterSnapshot, config: PlannerConfig) -> tuple[str, str]:
    return shared_name_for(cluster.kube_system_uid, config)


def shared_name_for(kube_system_uid: str | None, config: PlannerConfig) -> tuple[str, str]:
    """(cluster id, the shared check's and firewall's name)."""
    cluster_id = cluster_id_for(kube_system_uid, config)
    name = shared_resource_name(config.base_name, cluster_id)
    if not is_valid_gce_name(name):
        raise PlanningError(
            f"shared resource name {name!r} (base name {config.base_name!r} + cluster id "
            f"{cluster_id!r}) is not a valid GCE name: expected [a-z]([-a-z0-9]{{0,61}}[a-z0-9])?"
        )
    return cluster_id, name


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """plan() allocates thousands of small acyclic objects, which would trigger full
    collections that walk the whole (large, long-lived) snapshot heap: at 10,000 Services
    that doubled planning time. Reference counting frees all of it; the cyclic collector has
    nothing to find here."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def plan(cluster: ClusterSnapshot, cloud: CloudSnapshot, config: PlannerConfig) -> Plan:
    with _no_cyclic_gc():
        return _plan(cluster, cloud, config)


def _plan(cluster: ClusterSnapshot, cloud: CloudSnapshot, config: PlannerConfig) -> Plan:
    cluster_id, name = shared_name(cluster, config)
    check_url = http_health_check_url(config.project, name)
    findings: list[Finding] = []

    pools = {pool.name: pool for pool in cloud.target_pools}
    rules = {rule.name: rule for rule in cloud.forwarding_rules}
    pool_claims = match_pools(cluster.services, pools, rules, config, findings)
    coverage = coverage_by_pool(pool_claims, cloud, check_url, cluster.cloud_provider_uid, config)
    check_owned = cloud.health_check is None or is_owned(cloud.health_check.description, cluster_id)
    firewall_owned = cloud.firewall is None or is_owned(cloud.firewall.description, cluster_id)
    ledger = read_ledger(cloud.health_check) if check_owned else TakeoverLedger()

    replacement = replacement_of(cluster, config)
    if replacement is not None:
        text = describe_replacement(replacement, replacement_setting(config))
        findings.append(Finding(FindingKind.KUBE_PROXY_REPLACED, "", text))
    # Version skew matters only where lbhc's own check is, or would be, attached.
    relevant = any(
        claim.eligible_reason is None and _lbhc_may_carry(coverage[name], config)
        for name, claim in pool_claims.items()
    )
    facts = facts_by_node(cluster, config) if relevant else {}
    fallback = decide_fallback(cluster, facts, config, findings) if relevant else None
    if fallback is not None:
        fallback = dataclasses.replace(
            fallback, others_stay=_covered_by_others(pool_claims, coverage)
        )
    if relevant and not cluster.versions_complete:
        findings.append(
            Finding(
                FindingKind.INCOMPLETE_VIEW,
                "",
                "nodes or kube-proxy Pods could not be read in full, so version skew cannot be "
                "ruled out: nothing new is created or attached until they are",
            )
        )
    _warn_conflicts(name, cluster_id, check_owned, firewall_owned, findings)

    context = PoolContext(
        our_url=check_url,
        config=config,
        cloud=cloud,
        ledger=ledger,
        attach_allowed=firewall_owned and cluster.versions_complete,
        withdraw_reason=f"fallback: {fallback.reason}" if fallback else None,
    )
    pool_plan = plan_pool_changes(cloud.target_pools, pool_claims, coverage, context, findings)
    wanted = pool_plan.needs_ours
    # A check of our name that is not ours: no pool is touched, but what we own stays.
    pool_changes = list(pool_plan.changes) if check_owned else []
    kept_ledger = ledger_still_needed(ledger, cloud, check_url)
    new_ledger, refused = fit_ledger(cluster_id, kept_ledger, pool_plan.takeovers, findings)
    if refused:
        pool_changes = [
            c
            for c in pool_changes
            if not (isinstance(c, Attach) and c.replaces and c.name in refused)
        ]

    detaching = {c.name for c in pool_changes if c.action is Action.DETACH}
    still_attached = tuple(
        p.name for p in cloud.target_pools if carries(p, check_url) and p.name not in detaching
    )
    pair = SharedPair.of(
        cluster_id,
        name,
        cloud,
        config,
        new_ledger,
        check_owned=check_owned,
        firewall_owned=firewall_owned,
        firewall_priority=our_firewall_priority(cloud.effective_firewall),
    )
    command = firewall_command(pair.want_firewall, config.firewall_project)
    judge = ReachJudge(cloud, config, name, pair.want_firewall)
    probes = plan_probe_firewall(
        judge, pool_claims, coverage, cluster, cloud, config, command=command
    )
    findings.extend(probes.findings)
    shared = plan_shared(
        pair,
        wanted=wanted,
        may_add=fallback is None and cluster.versions_complete,
        still_attached=still_attached,
        for_probes=probes.need if firewall_owned else None,
    )
    findings.extend(shared.findings)
    shared_changes, attach_ok = list(shared.changes), shared.attach_ok
    if not attach_ok:  # give-backs of a recorded check need nothing of ours
        pool_changes = [c for c in pool_changes if not isinstance(c, Attach) or c.restores]

    creates = [c for c in shared_changes if c.action in (Action.CREATE, Action.UPDATE)]
    deletes = [c for c in shared_changes if c.action is Action.DELETE]
    ordered = creates + pool_changes + deletes
    gaps = cluster.gaps + cloud.gaps
    mismatch = scope_mismatch(cluster, cloud)
    if mismatch is not None:
        findings.append(Finding(FindingKind.OUT_OF_SCOPE, "", mismatch.message(config)))
        gaps += (f"scope: {mismatch.services} Service(s) not found in the configured scope",)
    out_of_scope = mismatch.services if mismatch else 0
    conflict = not (check_owned and firewall_owned)
    needs_firewall = (wanted or bool(probes.needing)) and (
        cloud.firewall is None or bool(cloud.firewall_unreadable)
    )
    # An incomplete view may hide what still uses a resource: nothing is removed from it.
    withheld = tuple(c for c in ordered if gaps and c.action in DESTRUCTIVE_ACTIONS)
    if withheld:
        findings.append(
            Finding(
                FindingKind.INCOMPLETE_VIEW,
                "",
                f"incomplete view ({'; '.join(gaps)}): {len(withheld)} detach/delete "
                "change(s) withheld until a complete read",
            )
        )
    return Plan(
        name,
        tuple(c for c in ordered if not (gaps and c.action in DESTRUCTIVE_ACTIONS)),
        fallback,
        tuple(findings),
        withheld,
        out_of_scope=out_of_scope,
        shared_conflict=conflict,
        firewall_command=command if needs_firewall else "",
        evidence_wanted=probes.evidence_wanted,
    )


def _lbhc_may_carry(coverage: PoolCoverage, config: PlannerConfig) -> bool:
    if coverage.kind in (Coverage.LBHC, Coverage.NONE):
        return True
    takeover = config.health_check_mode is HealthCheckMode.TAKEOVER
    return takeover and coverage.kind in TAKEOVER_REPLACES


def _covered_by_others(pool_claims: dict[str, PoolClaim], coverage: dict[str, PoolCoverage]) -> int:
    return sum(
        1
        for name, claim in pool_claims.items()
        if claim.eligible_reason is None
        and coverage[name].kind in (Coverage.CLOUD_PROVIDER, Coverage.EQUIVALENT)
    )


def _warn_conflicts(
    name: str, cluster_id: str, check_owned: bool, firewall_owned: bool, findings: list[Finding]
) -> None:
    if not check_owned:
        findings.append(
            Finding(
                FindingKind.CONFLICT,
                f"{Kind.HTTP_HEALTH_CHECK} {name}",
                f"conflict: HttpHealthCheck {name} exists but is not owned by cluster "
                f"{cluster_id}; lbhc will not modify, attach or delete it",
            )
        )
    if not firewall_owned:
        findings.append(
            Finding(
                FindingKind.CONFLICT,
                f"{Kind.FIREWALL} {name}",
                f"conflict: Firewall {name} exists but is not owned by cluster {cluster_id}; "
                "lbhc will not modify or delete it, and attaches nothing new until it is resolved",
            )
        )
