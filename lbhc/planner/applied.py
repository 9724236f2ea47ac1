"""The cloud as it is after the changes that were carried out: what the controller judges
drain and coverage from once a pass has applied its plan, instead of waiting a resync to
see its own attaches."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TypeVar

from lbhc.model.cloud import CloudSnapshot, Firewall, HttpHealthCheck, TargetPool, resource_path
from lbhc.model.plan import Action, Change, Kind

Resource = TypeVar("Resource", HttpHealthCheck, Firewall)


def cloud_after(cloud: CloudSnapshot, done: Iterable[Change]) -> CloudSnapshot:
    pools = {pool.name: pool for pool in cloud.target_pools}
    check, firewall = cloud.health_check, cloud.firewall
    for change in done:
        if change.kind is Kind.TARGET_POOL and change.name in pools:
            pools[change.name] = _pool_after(pools[change.name], change)
        elif change.kind is Kind.HTTP_HEALTH_CHECK:
            check = _resource_after(check, change, HttpHealthCheck)
        elif change.kind is Kind.FIREWALL:
            firewall = _resource_after(firewall, change, Firewall)
    return dataclasses.replace(
        cloud, health_check=check, firewall=firewall, target_pools=tuple(pools.values())
    )


def _pool_after(pool: TargetPool, change: Change) -> TargetPool:
    if change.action is Action.ATTACH:
        return dataclasses.replace(pool, health_checks=(change.health_check_url,))
    removed = resource_path(change.health_check_url)
    kept = tuple(u for u in pool.health_checks if resource_path(u) != removed)
    if change.restores:
        kept = (change.restores,)
    return dataclasses.replace(pool, health_checks=kept)


def _resource_after(
    current: Resource | None, change: Change, kind: type[Resource]
) -> Resource | None:
    if change.action is Action.DELETE:
        return None
    desired = change.desired
    if not isinstance(desired, kind):
        return current
    link = current.self_link if current is not None else desired.self_link
    return dataclasses.replace(desired, self_link=link)
