"""Per target pool: should it carry the shared check, and what must change for that."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lbhc.model.cloud import ForwardingRule, TargetPool, parse_description, resource_path
from lbhc.model.cluster import Service
from lbhc.model.plan import Action, Change, FieldChange, Kind
from lbhc.planner.config import PlannerConfig
from lbhc.planner.names import target_pool_name
from lbhc.planner.services import ineligibility, unclear_opt_out

SERVICE_NAME_KEY = "kubernetes.io/service-name"


@dataclass(frozen=True)
class PoolClaim:
    """A LoadBalancer Service and the pool the cloud provider named after it."""

    service: Service
    pool: TargetPool
    eligible_reason: str | None  # None: eligible; else why not


def claims(description: str, service_key: str) -> bool:
    """Fast path for the cloud provider's exact compact JSON; decode anything else."""
    # Service keys are DNS names and a slash: nothing in them needs JSON escaping.
    if description == f'{{"{SERVICE_NAME_KEY}":"{service_key}"}}':
        return True
    return parse_description(description).get(SERVICE_NAME_KEY) == service_key


def claimed_service(pool: TargetPool, rule: ForwardingRule | None) -> str | None:
    """`ns/name` the cloud provider wrote into the pool's or forwarding rule's description."""
    for description in (pool.description, rule.description if rule else ""):
        value = parse_description(description).get(SERVICE_NAME_KEY)
        if isinstance(value, str):
            return value
    return None


def match_pools(
    services: Iterable[Service],
    pools: Mapping[str, TargetPool],
    rules: Mapping[str, ForwardingRule],
    config: PlannerConfig,
    warnings: list[str],
) -> dict[str, PoolClaim]:
    """Pools (by name) that a LoadBalancer Service of this cluster provably owns."""
    found: dict[str, PoolClaim] = {}
    for service in services:
        if service.spec.type != "LoadBalancer" or not service.metadata.uid:
            continue
        pool = pools.get(target_pool_name(service.metadata.uid))
        if pool is None:
            continue  # not provisioned yet, or not a target-pool LB: nothing to do
        rule = rules.get(pool.name)
        reason = ineligibility(service, config)
        if (unclear := unclear_opt_out(service, config)) is not None:
            warnings.append(unclear)
        confirmed = claims(pool.description, service.key) or (
            rule is not None and claims(rule.description, service.key)
        )
        if not confirmed:
            claimed = claimed_service(pool, rule)
            if reason is None:
                owner = f"claims {claimed}" if claimed else f"has no {SERVICE_NAME_KEY}"
                warnings.append(
                    f"target pool {pool.name} is named after Service {service.key} but {owner}; "
                    "left alone"
                )
            continue
        found[pool.name] = PoolClaim(service, pool, reason)
    return found


def carries(pool: TargetPool, health_check_url: str) -> bool:
    if not pool.health_checks:
        return False
    wanted = resource_path(health_check_url)
    return any(resource_path(url) == wanted for url in pool.health_checks)


def plan_pool_changes(
    pools: Iterable[TargetPool],
    claims: Mapping[str, PoolClaim],
    health_check_url: str,
    *,
    attach_allowed: bool,
    withdraw_reason: str | None,
    config: PlannerConfig,
    warnings: list[str],
) -> list[Change]:
    """Attach/detach per pool a Service of this cluster provably owns. `withdraw_reason`
    (fallback) detaches our check from all of them; `attach_allowed` False adds it nowhere new.
    A pool no Service of ours claims is never changed, even if it carries our check: it may
    belong to another cluster that shares our id, or to someone who attached it by hand."""
    changes: list[Change] = []
    for pool in sorted(pools, key=lambda p: p.name):
        claim = claims.get(pool.name)
        has_ours = carries(pool, health_check_url)
        if claim is None:
            if has_ours:
                warnings.append(
                    f"target pool {pool.name} carries our health check but no Service of this "
                    "cluster claims it; left alone (is another cluster using the same cluster id?)"
                )
            continue
        wanted = claim.eligible_reason is None
        if has_ours:
            reason = withdraw_reason or claim.eligible_reason
            if reason is not None:
                changes.append(_detach(pool, health_check_url, reason, claim.service.key))
        elif wanted and withdraw_reason is None and attach_allowed:
            changes.extend(_attach(pool, claim, health_check_url, config, warnings))
    return changes


def _attach(
    pool: TargetPool,
    claim: PoolClaim,
    health_check_url: str,
    config: PlannerConfig,
    warnings: list[str],
) -> list[Change]:
    service = claim.service.key
    diff = {"healthChecks": FieldChange(list(pool.health_checks), [health_check_url])}
    if not pool.health_checks:
        reason = f"Service {service} (externalTrafficPolicy=Cluster) has no health check"
        return [
            Change(
                Action.ATTACH,
                Kind.TARGET_POOL,
                pool.name,
                reason,
                diff,
                health_check_url=health_check_url,
                service=service,
            )
        ]
    foreign = pool.health_checks[0]
    if config.replace_foreign_health_checks:
        reason = f"Service {service}: replacing foreign health check {resource_path(foreign)}"
        return [
            Change(
                Action.ATTACH,
                Kind.TARGET_POOL,
                pool.name,
                reason,
                diff,
                health_check_url=health_check_url,
                replaces=foreign,
                service=service,
            )
        ]
    warnings.append(
        f"target pool {pool.name} (Service {service}) carries a health check lbhc does not own "
        f"({resource_path(foreign)}); left alone"
    )
    return []


def _detach(pool: TargetPool, health_check_url: str, reason: str, service: str) -> Change:
    remaining = [
        url for url in pool.health_checks if resource_path(url) != resource_path(health_check_url)
    ]
    diff = {"healthChecks": FieldChange(list(pool.health_checks), remaining)}
    return Change(
        Action.DETACH,
        Kind.TARGET_POOL,
        pool.name,
        reason,
        diff,
        health_check_url=health_check_url,
        service=service,
    )
