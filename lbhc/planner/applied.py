"""The cloud as it is after the changes that were carried out: what the controller judges
drain and coverage from once a pass has applied its plan, instead of waiting a resync to
see its own attaches."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TypeVar

from lbhc.model.cloud import (
    CloudSnapshot,
    EffectiveFirewall,
    Firewall,
    HttpHealthCheck,
    TargetPool,
    resource_path,
)
from lbhc.model.plan import Attach, Change, Delete, Detach, Ensure, Kind

Resource = TypeVar("Resource", HttpHealthCheck, Firewall)


def cloud_after(cloud: CloudSnapshot, done: Iterable[Change]) -> CloudSnapshot:
    pools = {pool.name: pool for pool in cloud.target_pools}
    check, firewall = cloud.health_check, cloud.firewall
    effective = cloud.effective_firewall
    for change in done:
        match change:
            case Attach() | Detach() if change.name in pools:
                pools[change.name] = _pool_after(pools[change.name], change)
            case Ensure(desired=HttpHealthCheck() as desired):
                check = _with_link(desired, check)
            case Ensure(desired=Firewall() as desired):
                firewall = _with_link(desired, firewall)
                effective = _in_network(effective, desired.name, firewall)
            case Delete(kind=Kind.HTTP_HEALTH_CHECK):
                check = None
            case Delete(kind=Kind.FIREWALL):
                firewall = None
                effective = _in_network(effective, change.name, None)
    return dataclasses.replace(
        cloud,
        health_check=check,
        firewall=firewall,
        target_pools=tuple(pools.values()),
        effective_firewall=effective,
    )


def _in_network(
    effective: EffectiveFirewall | None, name: str, rule: Firewall | None
) -> EffectiveFirewall | None:
    """The network's rules with lbhc's as it now is (or gone): the pools it admits are judged
    admitted in the same pass that made it."""
    if effective is None:
        return None
    others = tuple(r for r in effective.rules if r.name != name)
    return dataclasses.replace(effective, rules=(*others, rule) if rule else others)


def _pool_after(pool: TargetPool, change: Attach | Detach) -> TargetPool:
    if isinstance(change, Attach):
        return dataclasses.replace(pool, health_checks=(change.health_check_url,))
    removed = resource_path(change.health_check_url)
    kept = tuple(u for u in pool.health_checks if resource_path(u) != removed)
    if change.restores:
        kept = (change.restores,)
    return dataclasses.replace(pool, health_checks=kept)


def _with_link(desired: Resource, current: Resource | None) -> Resource:
    """What an ensure leaves: the desired resource, keeping the link of the one it updated."""
    link = current.self_link if current is not None else desired.self_link
    return dataclasses.replace(desired, self_link=link)
