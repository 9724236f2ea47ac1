"""Per target pool: what must change so that it carries the right check, given what it carries
now (its coverage), the health-check mode, fallback, and the takeover ledger."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lbhc.model.cloud import CloudSnapshot, TargetPool, resource_name, resource_path
from lbhc.model.plan import Attach, Detach, FieldChange, Finding, FindingKind, PoolChange
from lbhc.planner.claims import PoolClaim, carries
from lbhc.planner.config import HealthCheckMode, PlannerConfig
from lbhc.planner.coverage import TAKEOVER_REPLACES, Coverage, PoolCoverage, describe_check
from lbhc.planner.ledger import TakeoverLedger
from lbhc.planner.services import uses_cluster_traffic_policy


@dataclass(frozen=True)
class PoolContext:
    our_url: str
    config: PlannerConfig
    cloud: CloudSnapshot
    ledger: TakeoverLedger = field(default_factory=TakeoverLedger)
    attach_allowed: bool = True  # False: add lbhc's check nowhere new (conflict, partial view)
    withdraw_reason: str | None = None  # fallback: lbhc's check comes off every pool

    @property
    def takeover(self) -> bool:
        return self.config.health_check_mode is HealthCheckMode.TAKEOVER


@dataclass(frozen=True)
class PoolPlan:
    changes: tuple[PoolChange, ...]
    # Pool -> URL of the check a takeover attach replaces: recorded in the ledger first.
    takeovers: Mapping[str, str]
    # Some eligible pool carries lbhc's check or should: the shared check and firewall stay.
    needs_ours: bool


def plan_pool_changes(
    pools: Iterable[TargetPool],
    pool_claims: Mapping[str, PoolClaim],
    coverage: Mapping[str, PoolCoverage],
    ctx: PoolContext,
    findings: list[Finding],
) -> PoolPlan:
    """A pool no Service of ours claims is never changed, even if it carries our check: it may
    belong to another cluster that shares our id, or to someone who attached it by hand."""
    changes: list[PoolChange] = []
    takeovers: dict[str, str] = {}
    needs_ours = False
    for pool in sorted(pools, key=lambda p: p.name):
        claim = pool_claims.get(pool.name)
        if claim is None:
            if carries(pool, ctx.our_url):
                findings.append(
                    Finding(
                        FindingKind.POOL_NOT_CLAIMED,
                        f"TargetPool {pool.name}",
                        f"target pool {pool.name} carries our health check but no Service of "
                        "this cluster claims it; left alone (is another cluster using the same "
                        "cluster id?)",
                    )
                )
            elif not pool.health_checks and (url := _give_back_url(pool, ctx, findings)):
                # lbhc provably emptied it (a takeover cut between remove and add) and its
                # Service is gone or unprovable: give the check back before the ledger can go.
                changes.append(give_back_change(pool, url, "its takeover was never finished", ""))
            continue
        planned, needs = _plan_pool(pool, claim, coverage[pool.name], ctx, findings)
        changes.extend(planned)
        needs_ours = needs_ours or needs
        for change in planned:
            if isinstance(change, Attach) and change.replaces:
                takeovers[pool.name] = change.replaces
    return PoolPlan(tuple(changes), takeovers, needs_ours)


def _plan_pool(
    pool: TargetPool,
    claim: PoolClaim,
    coverage: PoolCoverage,
    ctx: PoolContext,
    findings: list[Finding],
) -> tuple[list[PoolChange], bool]:
    """(changes, whether the pool needs lbhc's check)."""
    eligible = claim.eligible_reason is None
    # A recorded check is a Cluster pool's: never given to a pool whose Service went Local.
    cluster_policy = uses_cluster_traffic_policy(claim.service)
    give_back = _give_back_url(pool, ctx, findings) if cluster_policy else ""
    service = claim.service.key

    if carries(pool, ctx.our_url):
        reason = ctx.withdraw_reason or claim.eligible_reason
        if reason is None and give_back and not ctx.takeover:
            reason = "health_check.mode is coexist: the check lbhc replaced goes back"
        if reason is None:
            return [], eligible
        return [detach_change(pool, ctx.our_url, reason, service, give_back)], (
            eligible and ctx.withdraw_reason is not None
        )

    if not pool.health_checks:
        if give_back and (not eligible or ctx.withdraw_reason or not ctx.takeover):
            why = ctx.withdraw_reason or claim.eligible_reason or "health_check.mode is coexist"
            return [give_back_change(pool, give_back, why, service)], False
        if not eligible or coverage.kind is not Coverage.NONE:
            return [], False
        if ctx.withdraw_reason is None and ctx.attach_allowed:
            why = f"Service {service} (externalTrafficPolicy=Cluster) has no health check"
            return [attach_change(pool, ctx.our_url, why, service)], True
        return [], True

    if not eligible or coverage.kind not in TAKEOVER_REPLACES:
        return [], False
    if not ctx.takeover:
        if coverage.kind is Coverage.OTHER_CHECK:
            findings.append(
                Finding(
                    FindingKind.OTHER_CHECK,
                    f"TargetPool {pool.name}",
                    f"target pool {pool.name} (Service {service}) carries "
                    f"{describe_check(coverage)}, which does not probe kube-proxy's /healthz, so "
                    "it does not drain nodes being deleted; left alone (health_check.mode: "
                    "takeover replaces it)",
                )
            )
        return [], False
    if ctx.withdraw_reason is not None or not ctx.attach_allowed:
        return [], True
    why = f"Service {service}: taking over from {describe_check(coverage)} (takeover mode)"
    return [attach_change(pool, ctx.our_url, why, service, replaces=coverage.check_url)], True


def _give_back_url(pool: TargetPool, ctx: PoolContext, findings: list[Finding]) -> str:
    """The check lbhc replaced on the pool, or "" when none is recorded or it no longer
    exists (the cloud provider deletes its node check once no pool uses it): then there is
    nothing to give."""
    url = ctx.ledger.recorded_url(pool.name)
    if url and ctx.cloud.check_gone(url):
        findings.append(
            Finding(
                FindingKind.GIVE_BACK_MISSING,
                f"TargetPool {pool.name}",
                f"target pool {pool.name}: the check lbhc replaced, {resource_name(url)}, "
                "no longer exists, so it cannot be given back yet (the cloud provider deletes "
                "its node check when no pool uses it, and makes it again with its next load "
                "balancer); the record is kept",
            )
        )
        return ""
    return url


# The pool changes, shared with teardown.


def attach_change(
    pool: TargetPool, url: str, reason: str, service: str, *, replaces: str = ""
) -> Attach:
    diff = {"healthChecks": FieldChange(list(pool.health_checks), [url])}
    return Attach(pool.name, url, reason, diff, replaces=replaces, service=service)


def give_back_change(pool: TargetPool, url: str, reason: str, service: str) -> Attach:
    """Puts a recorded check back on a pool left with none."""
    change = attach_change(pool, url, f"giving back {resource_name(url)}: {reason}", service)
    return dataclasses.replace(change, restores=url)


def detach_change(
    pool: TargetPool, url: str, reason: str, service: str, give_back: str = ""
) -> Detach:
    """Takes `url` off the pool and, with `give_back`, puts the recorded check back on."""
    remaining = [u for u in pool.health_checks if resource_path(u) != resource_path(url)]
    if give_back:
        remaining.append(give_back)
        reason = f"{reason}; giving back {resource_name(give_back)}"
    diff = {"healthChecks": FieldChange(list(pool.health_checks), remaining)}
    return Detach(pool.name, url, reason, diff, restores=give_back, service=service)
