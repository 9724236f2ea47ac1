"""A target pool's instances brought to the hosts the service controller gives it, as
kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer_external.go updateTargetPool
does (called by updateExternalLoadBalancer on a node sync, and by ensureTargetPoolAndHealthCheck
for a pool that exists or was created with only the first hosts): the pool is read, instances
compared by their /zones/ZONE/instances/NAME path (hostURLToComparablePath), the missing added
and then the extra removed, at most maxInstancesPerTargetPoolUpdate per call, and the pool read
again to check it holds as many instances as there are hosts.

Upstream sends the comparable path itself ("/zones/..."); the emulator sends full URLs, as it
does when it creates a pool: the fake's reference parser takes the documented forms only.
Upstream removes in Go map order; the emulator in URL order, so runs repeat."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

from lbhc.sandbox.compute_fake import ComputeFake

from .compute import ComputeRequestError, ComputeWriter

# gce.go: maxTargetPoolCreateInstances, maxInstancesPerTargetPoolUpdate.
MAX_CREATE_INSTANCES = 200
MAX_INSTANCES_PER_UPDATE = 1000


class Cut(NamedTuple):
    """A node taken out of a pool by removeInstance, and when (time.time()), for tests and
    the demo to see when the cloud provider stopped the pool sending to it."""

    node: str
    pool: str
    at: float


def comparable_path(url: str) -> str:
    """hostURLToComparablePath: the URL from "/zones/" on ("" if it has none)."""
    index = url.find("/zones/")
    return "" if index < 0 else url[index:]


class PoolHosts:
    def __init__(
        self, compute: ComputeFake, writer: ComputeWriter, project: str, region: str
    ) -> None:
        self._compute, self._w = compute, writer
        self._project, self._region = project, region
        self.cuts: list[Cut] = []

    def _instances(self, pool: str) -> list[str]:
        """GetTargetPool's instances (the fake's own state: no journal entry)."""
        found = self._compute.target_pools(self._project, self._region).get(pool)
        if found is None:
            path = f"projects/{self._project}/regions/{self._region}/targetPools/{pool}"
            raise ComputeRequestError(404, "notFound", f"The resource '{path}' was not found")
        return [str(url) for url in found.get("instances", [])]

    def update(self, pool: str, hosts: Sequence[str]) -> None:
        """updateTargetPool: `hosts` are the instance URLs the pool should hold."""
        existing = {comparable_path(url): url for url in self._instances(pool)}
        to_add: list[str] = []
        for host in hosts:
            link = comparable_path(host)
            if link not in existing:
                to_add.append(host)
            existing.pop(link, None)
        to_remove = sorted(existing.values())
        for batch in _batches(to_add):
            self._w.add_instances(pool, batch)
        for batch in _batches(to_remove):
            self._w.remove_instances(pool, batch)
            now = time.time()
            self.cuts.extend(Cut(url.rsplit("/", 1)[-1], pool, now) for url in batch)
        held = len(self._instances(pool))
        if held != len(hosts):
            raise RuntimeError(
                f"unexpected number of instances ({held}) in target pool {pool} after update "
                f"(expected {len(hosts)})"
            )


def _batches(urls: list[str]) -> list[list[str]]:
    step = MAX_INSTANCES_PER_UPDATE
    return [urls[i : i + step] for i in range(0, len(urls), step)]
