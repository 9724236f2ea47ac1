"""What the demo checks each step against: the fakes' own state, GCE's getHealth over
HTTP, and the Events in the kube-apiserver fake (what kubectl would show)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

from lbhc.gce.client import GceClient
from lbhc.model.cloud import COMPUTE_URL_PREFIX
from lbhc.model.cluster import ClusterSnapshot, Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.sandbox import Sandbox
from lbhc.settings import Settings

T = TypeVar("T")


class StepFailed(AssertionError):
    pass


def wait_until(condition: Callable[[], T], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise StepFailed(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise StepFailed(what)


def read_cluster(settings: Settings) -> ClusterSnapshot:
    """The cluster as `lbhc plan` reads it: through the kubeconfig, over HTTP."""
    from lbhc.kube.client import KubeConfig, KubeReader, make_api_client

    config = KubeConfig(kubeconfig=settings.kubeconfig)
    return KubeReader(make_api_client(config), config).read_snapshot()


class SandboxView:
    def __init__(self, sandbox: Sandbox, gce: GceClient, check_name: str, check_url: str) -> None:
        self._sandbox, self._gce = sandbox, gce
        self.check_name, self.check_url = check_name, check_url

    def pools(self, policy: str) -> list[str]:
        names = []
        for obj in self._sandbox.kube.objects("Service"):
            service = Service.model_validate(obj)
            if service.spec.external_traffic_policy == policy:
                names.append(target_pool_name(service.metadata.uid))
        return sorted(names)

    def carrying(self) -> set[str]:
        pools = self._sandbox.compute.target_pools(
            self._sandbox.spec.project, self._sandbox.spec.region
        )
        return {
            name for name, pool in pools.items() if self.check_url in pool.get("healthChecks", [])
        }

    def shared_exists(self) -> tuple[bool, bool]:
        project = self._sandbox.spec.project
        return (
            self.check_name in self._sandbox.compute.http_health_checks(project),
            self.check_name in self._sandbox.compute.firewalls(project),
        )

    def lb_states(self, node_name_: str, pools: list[str]) -> set[str]:
        spec = self._sandbox.spec
        url = (
            f"{COMPUTE_URL_PREFIX}projects/{spec.project}/zones/{spec.zone}/instances/{node_name_}"
        )
        return {state for pool in pools for state in self._gce.get_health(pool, url)}

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self._sandbox.kube.objects("Event") if e.get("reason") == reason]


def journal_kind(path: str, method: str) -> str:
    if path.endswith("/removeHealthCheck"):
        return "detach"
    if method == "DELETE" and "/httpHealthChecks/" in path:
        return "delete-check"
    if method == "DELETE" and "/firewalls/" in path:
        return "delete-firewall"
    return "other"


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
