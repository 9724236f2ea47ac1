"""What GCE's own health checking says of each node in one target pool (targetPools.getHealth,
one call per node): for `lbhc status --lb-health` and the controller's optional sampling."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from lbhc.gce.errors import result_label

NO_POOL = "no pool carries a kube-proxy /healthz check"
NOT_IN_POOL = "not in the pool"  # the cloud provider removed it, or has not added it yet
_HTTP_BAD_REQUEST = 400


class HealthReader(Protocol):
    def get_health(self, pool: str, instance_url: str) -> tuple[str, ...]: ...


def node_health(
    gce: HealthReader, pool: str, instances: Mapping[str, str], concurrency: int
) -> dict[str, str]:
    """Node name -> HEALTHY, UNHEALTHY (in any of the pool's forwarding rules), or why not
    known; `instances` maps node names to their VMs' URLs."""

    def one(node_name: str, instance: str) -> tuple[str, str]:
        try:
            states = gce.get_health(pool, instance)
        except Exception as exc:  # not in the pool (400), or unreadable: say so, go on
            if getattr(exc, "code", None) == _HTTP_BAD_REQUEST:
                return node_name, NOT_IN_POOL
            return node_name, f"unknown ({result_label(exc)})"
        if not states:
            return node_name, "unknown"
        return node_name, "HEALTHY" if all(s == "HEALTHY" for s in states) else "UNHEALTHY"

    if not instances:
        return {}
    with ThreadPoolExecutor(max(1, min(concurrency, len(instances)))) as workers:
        jobs = [workers.submit(one, name, url) for name, url in instances.items()]
        return dict(job.result() for job in jobs)
