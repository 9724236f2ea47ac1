"""Is the cloud where lbhc's planner says it should be? Judged apart from the running
controller, as `lbhc plan` would judge it: the cluster read over HTTP by lbhc's KubeReader,
the cloud by a read-only GceClient with its own client id, then `plan()`, which must have
nothing left to do and nothing withheld. Plus the same promises restated without the
planner: one check and one firewall of ours exactly while an eligible Service exists, on
exactly the eligible pools (none in fallback), and nothing else of ours anywhere."""

from __future__ import annotations

from dataclasses import dataclass

from lbhc.gce.client import GceClient
from lbhc.kube.client import KubeConfig, KubeReader, make_api_client
from lbhc.model.cloud import resource_path
from lbhc.model.cluster import Service
from lbhc.model.plan import Plan
from lbhc.planner.names import target_pool_name
from lbhc.planner.planner import plan, shared_name
from lbhc.planner.shared import is_owned
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.upstream.nodes import NodeView, stable_node_set
from lbhc.sandbox.upstream.services import Handler, ServiceView, handler
from lbhc.settings import Settings

ORACLE = "soak-oracle"  # its GCE client id: it must never appear on a mutation


@dataclass(frozen=True)
class Verdict:
    plan: Plan | None  # None while the cloud provider is still catching up
    gaps: tuple[str, ...] = ()
    unsettled: tuple[str, ...] = ()

    @property
    def converged(self) -> bool:
        p = self.plan
        return p is not None and not self.gaps and not p.changes and not p.withheld

    def describe(self) -> str:
        if self.unsettled:
            return "cloud provider catching up: " + "; ".join(self.unsettled[:3])
        if self.plan is None:
            return "no plan"
        left = [f"{c.action} {c.kind} {c.name} ({c.reason})" for c in self.plan.changes]
        left += [f"withheld {c.action} {c.kind} {c.name}" for c in self.plan.withheld]
        return "; ".join([*self.gaps, *left][:6]) or "converged"


class Oracle:
    def __init__(
        self,
        settings: Settings,
        kube_url: str,
        kube: KubeFake,
        compute: ComputeFake,
        *,
        current: bool = True,
    ) -> None:
        """`current`: the sandbox runs today's cloud provider (SandboxSpec.current)."""
        self._config = settings.planner_config()
        self._kube, self._compute, self._current = kube, compute, current
        self._project, self._region = settings.gce.project, settings.gce.region
        kube_config = KubeConfig(host=kube_url)
        self._reader = KubeReader(
            make_api_client(kube_config),
            kube_config,
            settings.kube_proxy.namespace,
            settings.kube_proxy.selector,
            daemonset_selector=None,
        )
        self._gce = GceClient(settings.gce_client_config(read_only=True, client_id=ORACLE))

    def verdict(self) -> Verdict:
        unsettled = cloud_provider_lag(
            self._kube, self._compute, self._project, self._region, current=self._current
        )
        if unsettled:
            return Verdict(None, unsettled=tuple(unsettled))
        cluster = self._reader.read_snapshot()
        _, name = shared_name(cluster, self._config)
        cloud = self._gce.read_snapshot(name)
        return Verdict(plan(cluster, cloud, self._config), cluster.gaps + cloud.gaps)


def cloud_provider_lag(
    kube: KubeFake, compute: ComputeFake, project: str, region: str, *, current: bool = True
) -> list[str]:
    """What the service controller has still to do: a load balancer for each LoadBalancer
    Service, none for a deleted one. Until then the planner's view is a moment in between
    (a Service without its pool is not eligible yet), not a state to judge. With no node in
    its stable node set (every one tainted or being deleted) the current profile's controller
    cannot make one ("cannot EnsureLoadBalancer() with no hosts"): that is a state, not lag.
    The legacy one gives every node to a pool it makes."""
    pools = compute.target_pools(project, region)
    rules = compute.forwarding_rules(project, region)
    no_hosts = current and not stable_node_set(NodeView.of(n) for n in kube.objects("Node"))
    lag = []
    for obj in kube.objects("Service"):
        service = Service.model_validate(obj)
        if service.spec.type != "LoadBalancer" or service.spec.load_balancer_class:
            continue
        if handler(ServiceView.of(obj)) is not Handler.TARGET_POOL:
            continue  # a backend-service or internal LB: never a target pool to wait for
        name = target_pool_name(service.metadata.uid)
        if service.metadata.deletion_timestamp:
            lag.append(f"{service.key} is being deleted")
        elif (name not in pools or name not in rules) and not no_hosts:
            lag.append(f"{service.key} has no load balancer yet")
    return lag


def eligible_pools(
    kube: KubeFake, compute: ComputeFake, project: str, region: str, url: str
) -> set[str]:
    """The README's rule, restated: a LoadBalancer Service of Cluster policy, no class, not
    being deleted, whose pool exists and carries lbhc's check or none (in coexist mode a pool
    the cloud provider's check, or any other, covers is not lbhc's to touch)."""
    pools = compute.target_pools(project, region)
    found = set()
    for obj in kube.objects("Service"):
        service = Service.model_validate(obj)
        spec = service.spec
        if spec.type != "LoadBalancer" or spec.load_balancer_class:
            continue
        if spec.external_traffic_policy != "Cluster" or service.metadata.deletion_timestamp:
            continue
        name = target_pool_name(service.metadata.uid)
        if name in pools and pools[name].get("healthChecks", []) in ([], [url]):
            found.add(name)
    return found


@dataclass(frozen=True)
class Ours:
    checks: frozenset[str]  # names of checks carrying our ownership mark
    firewalls: frozenset[str]
    carrying: frozenset[str]  # pools carrying our check
    # Pools carrying another check on kube-proxy's port (the cloud provider's): lbhc's rule
    # may stay for them, since the cloud provider pins its own to one load balancer's IP.
    others_on_port: frozenset[str] = frozenset()


def ours(compute: ComputeFake, project: str, region: str, cluster_id: str, url: str) -> Ours:
    def owned(resources: dict[str, dict[str, object]]) -> frozenset[str]:
        return frozenset(
            name
            for name, r in resources.items()
            if is_owned(str(r.get("description", "")), cluster_id)
        )

    wanted = resource_path(url)
    pools = compute.target_pools(project, region).items()
    carrying = frozenset(
        name
        for name, pool in pools
        if any(resource_path(str(u)) == wanted for u in pool.get("healthChecks", []))
    )
    checks = compute.http_health_checks(project)
    on_port = {
        resource_path(str(c.get("selfLink", "")))
        for c in checks.values()
        if c.get("port") == 10256 and resource_path(str(c.get("selfLink", ""))) != wanted
    }
    others = frozenset(
        name
        for name, pool in pools
        if any(resource_path(str(u)) in on_port for u in pool.get("healthChecks", []))
    )
    return Ours(owned(checks), owned(compute.firewalls(project)), carrying, others)


def shared_problems(
    found: Ours, eligible: set[str], name: str, fallback: bool
) -> tuple[list[str], int]:
    """What breaks the promises in a converged state, and how many resources of ours are
    leaked (exist while nothing needs them, or under another name)."""
    problems: list[str] = []
    strays = (found.checks | found.firewalls) - {name}
    leaked = len(found.checks - {name}) + len(found.firewalls - {name})
    if strays:
        problems.append(f"resources of ours under other names: {sorted(strays)}")
    if not eligible:
        # lbhc's rule stays while other owners' pools on the port may need it for their probes.
        firewalls = found.firewalls if not found.others_on_port else found.firewalls - {name}
        leaked += len(found.checks & {name}) + len(firewalls & {name}) + len(found.carrying)
        if found.checks or firewalls or found.carrying:
            problems.append(
                f"no eligible Service, yet checks {sorted(found.checks)}, firewalls "
                f"{sorted(found.firewalls)}, pools carrying ours {sorted(found.carrying)}"
            )
        return problems, leaked
    if fallback:
        if found.carrying:
            problems.append(f"fallback, yet pools carry the check: {sorted(found.carrying)}")
        return problems, leaked
    if found.checks != {name} or found.firewalls != {name}:
        problems.append(
            f"eligible Services exist: expected exactly check and firewall {name}, got checks "
            f"{sorted(found.checks)} and firewalls {sorted(found.firewalls)}"
        )
    if found.carrying != eligible:
        problems.append(
            f"pools carrying the check {sorted(found.carrying)} != eligible {sorted(eligible)}"
        )
    return problems, leaked
