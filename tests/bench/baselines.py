"""The strategies lbhc is compared with. Baselines for the benchmarks, not product code: they
use the same GceClient (same transport, pacing and retries) so the only difference measured
is the strategy.

- PerServiceSync: what a per-Service cloud-provider sync does to keep a check on each load
  balancer: for every LoadBalancer Service, get its target pool and get the health check,
  and attach if missing. lbhc instead reads the shared pair once and lists pools and
  forwarding rules a page of 500 at a time.
- OneAtATime: a service controller with one worker: take a Service from the queue, read its
  pool and the check, attach, wait for the operation to finish, then the next Service.
  lbhc instead attaches up to `max_concurrent_pool_calls` pools at once under its pacing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lbhc.gce import convert
from lbhc.gce.calls import AttemptTimeout
from lbhc.gce.client import GceClient
from lbhc.model.cloud import TargetPool, http_health_check_url
from lbhc.model.cluster import Service
from lbhc.planner.names import target_pool_name


def get_target_pool(gce: GceClient, name: str) -> TargetPool | None:
    """targetPools.get through GceClient's own plumbing. lbhc has no such call (it lists),
    so the baseline reaches into the client for it."""
    project, region = gce.config.project, gce.config.region

    def fetch(timeout: AttemptTimeout) -> Any:
        return gce._pools.get(
            project=project, region=region, target_pool=name, **gce._gapic_kwargs(timeout)
        )

    found = gce._get_or_none("get_target_pool", fetch)
    return convert.target_pool_from_proto(found) if found is not None else None


class PerServiceSync:
    def __init__(self, gce: GceClient, check_name: str) -> None:
        self._gce = gce
        self._check_name = check_name
        self._check_url = http_health_check_url(gce.config.project, check_name)

    def resync(self, services: Iterable[Service]) -> int:
        """One pass over every LoadBalancer Service; returns how many attaches it made."""
        attached = 0
        for service in services:
            if service.spec.type != "LoadBalancer" or service.spec.load_balancer_class:
                continue
            pool = get_target_pool(self._gce, target_pool_name(service.metadata.uid))
            check = self._gce.get_http_health_check(self._check_name)
            if (
                pool is not None
                and check is not None
                and service.spec.external_traffic_policy == "Cluster"
                and self._check_url not in pool.health_checks
            ):
                self._gce.add_health_check(pool.name, self._check_url)
                attached += 1
        return attached


class OneAtATime:
    def __init__(self, gce: GceClient, check_name: str) -> None:
        self._gce = gce
        self._check_name = check_name
        self._check_url = http_health_check_url(gce.config.project, check_name)

    def run(self, pools: Iterable[str]) -> int:
        """Each pool in queue order: read, attach, wait for DONE; returns attaches made."""
        attached = 0
        for name in pools:
            pool = get_target_pool(self._gce, name)
            check = self._gce.get_http_health_check(self._check_name)
            if pool is None or check is None or self._check_url in pool.health_checks:
                continue
            self._gce.add_health_check(name, self._check_url)  # returns once DONE
            attached += 1
        return attached
