"""Which target pools a Service of this cluster provably owns: the cloud provider names a pool
"a" + the Service UID and writes the Service into its (or its forwarding rule's) description."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lbhc.model.cloud import ForwardingRule, TargetPool, parse_description, resource_path
from lbhc.model.cluster import Service
from lbhc.model.plan import Finding, FindingKind
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
    findings: list[Finding],
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
            findings.append(Finding(FindingKind.UNCLEAR_OPT_OUT, f"Service {service.key}", unclear))
        confirmed = claims(pool.description, service.key) or (
            rule is not None and claims(rule.description, service.key)
        )
        if not confirmed:
            claimed = claimed_service(pool, rule)
            if reason is None:
                owner = f"claims {claimed}" if claimed else f"has no {SERVICE_NAME_KEY}"
                findings.append(
                    Finding(
                        FindingKind.POOL_NOT_CLAIMED,
                        f"TargetPool {pool.name}",
                        f"target pool {pool.name} is named after Service {service.key} but "
                        f"{owner}; left alone",
                    )
                )
            continue
        found[pool.name] = PoolClaim(service, pool, reason)
    return found


def carries(pool: TargetPool, health_check_url: str) -> bool:
    if not pool.health_checks:
        return False
    wanted = resource_path(health_check_url)
    return any(resource_path(url) == wanted for url in pool.health_checks)
