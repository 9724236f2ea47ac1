"""What the demo checks each step against: the fakes' own state, GCE's getHealth over
HTTP, and the Events in the kube-apiserver fake (what kubectl would show)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

from lbhc.gce.client import GceClient
from lbhc.gce.convert import health_check_from_json
from lbhc.model.cloud import COMPUTE_URL_PREFIX, HttpHealthCheck
from lbhc.model.cluster import ClusterSnapshot, Service
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import probes_kube_proxy_healthz
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
    from lbhc.kube.client import KubeReader, make_api_client

    config = settings.kube_config()
    return KubeReader(make_api_client(config), config).read_snapshot()


class SandboxView:
    def __init__(
        self,
        sandbox: Sandbox,
        gce: GceClient,
        check_name: str,
        check_url: str,
        config: PlannerConfig,
    ) -> None:
        self._sandbox, self._gce, self._config = sandbox, gce, config
        self.check_name, self.check_url = check_name, check_url

    def pools(self, policy: str) -> list[str]:
        """The target pools of `policy` Services (a backend-service LB has none)."""
        existing = self._pool_checks()
        names = []
        for obj in self._sandbox.kube.objects("Service"):
            service = Service.model_validate(obj)
            name = target_pool_name(service.metadata.uid)
            if service.spec.external_traffic_policy == policy and name in existing:
                names.append(name)
        return sorted(names)

    def _pool_checks(self) -> dict[str, list[str]]:
        spec = self._sandbox.spec
        pools = self._sandbox.compute.target_pools(spec.project, spec.region)
        return {name: list(pool.get("healthChecks", [])) for name, pool in pools.items()}

    def carrying(self, url: str | None = None) -> set[str]:
        """Pools carrying lbhc's check (or the check at `url`)."""
        wanted = url or self.check_url
        return {name for name, checks in self._pool_checks().items() if wanted in checks}

    def unchecked(self, pools: list[str]) -> list[str]:
        """Of `pools`, those carrying no check at all."""
        checks = self._pool_checks()
        return sorted(name for name in pools if not checks.get(name))

    def kube_proxy_checked(self) -> dict[str, HttpHealthCheck]:
        """Pool -> the check it carries that probes kube-proxy's health port and path (lbhc's
        or the cloud provider's), as lbhc's planner judges it: the pools that drain a node
        being deleted."""
        spec = self._sandbox.spec
        checks = self._sandbox.compute.http_health_checks(spec.project)
        by_url = {check["selfLink"]: health_check_from_json(check) for check in checks.values()}
        found = {}
        for name, carried in self._pool_checks().items():
            known = (by_url[url] for url in carried if url in by_url)
            check = next((c for c in known if probes_kube_proxy_healthz(c, self._config)), None)
            if check is not None:
                found[name] = check
        return found

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

    def backend_states(self, node_name_: str) -> dict[str, str]:
        """Backend service -> the node's state in its group of the node's zone, as GCE's
        getHealth answers (HEALTHY, UNHEALTHY), or "out" when the group does not list it."""
        spec = self._sandbox.spec
        url = f"projects/{spec.project}/zones/{spec.zone}/instances/{node_name_}"
        found: dict[str, str] = {}
        # Only the services: their getHealth lists the members, so the groups need no listing.
        for backend in self._gce.read_backends(group_members=False).services:
            for group in backend.backends:
                if f"/zones/{spec.zone}/" not in group:
                    continue
                states = self._gce.backend_health(backend.name, group).get(url)
                if states is None:
                    found[backend.name] = "out"
                else:
                    healthy = all(s == "HEALTHY" for s in states)
                    found[backend.name] = "HEALTHY" if healthy else "UNHEALTHY"
        return found

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
