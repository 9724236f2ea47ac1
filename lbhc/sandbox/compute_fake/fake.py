"""ComputeFake: the public face of the fake (seeding, inspection, configuration, dispatch)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import app, operations, urls
from .fake_lb import LoadBalancerSeeding
from .faults import Faults
from .journal import JournalEntry
from .resources import common, firewalls, networks, target_pools
from .resources import health_checks as hc_resource
from .resources import instances as instance_resource
from .store import GCE_REGIONS, HealthSource, Store
from .validation import check_name

_HEALTH_STATES = frozenset({"HEALTHY", "UNHEALTHY"})
_IN_USE_MODES = frozenset({"http", "operation"})


class ComputeFake(LoadBalancerSeeding):
    """A stateful in-memory Compute API v1 subset; serve it with ComputeFakeServer or responses.
    Backend-service load balancers are seeded and inspected through LoadBalancerSeeding."""

    def __init__(
        self,
        operation_latency: float = 0.0,
        wait_timeout: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        projects: Iterable[str] = (),
    ) -> None:
        """`projects`: those that exist (as add_project); seeding a resource adds its own.
        A fake that knows of none answers for any project."""
        self.faults = Faults(clock)
        self._store = Store(
            clock=clock,
            wall_now=time.time(),
            operation_latency=operation_latency,
            wait_timeout=wait_timeout,
            faults=self.faults,
        )
        for project in projects:
            self.add_project(project)

    # -- configuration -------------------------------------------------------------------------

    @property
    def operation_latency(self) -> float:
        return self._store.operation_latency

    @operation_latency.setter
    def operation_latency(self, seconds: float) -> None:
        with self._store.lock:
            self._store.operation_latency = seconds

    @property
    def wait_timeout(self) -> float:
        return self._store.wait_timeout

    @wait_timeout.setter
    def wait_timeout(self, seconds: float) -> None:
        with self._store.lock:
            self._store.wait_timeout = seconds

    @property
    def in_use_delete_mode(self) -> str:
        return self._store.in_use_delete_mode

    @in_use_delete_mode.setter
    def in_use_delete_mode(self, mode: str) -> None:
        if mode not in _IN_USE_MODES:
            raise ValueError(f"in_use_delete_mode must be one of {sorted(_IN_USE_MODES)}")
        with self._store.lock:
            self._store.in_use_delete_mode = mode

    @property
    def health_source(self) -> HealthSource | None:
        """callable(lb_dict, instance_url, ip_address) -> "HEALTHY" | "UNHEALTHY" | None
        (None: fall back), asked once per forwarding rule IP that points at the load balancer
        (probes go to each IP, so health is per IP), or once with ip_address None when none
        does. `lb_dict` is the target pool for targetPools.getHealth, the backend service (kind
        compute#backendService) for regionBackendServices.getHealth: either way its
        healthChecks[0] is the check and its selfLink the load balancer."""
        return self._store.health_source

    @health_source.setter
    def health_source(self, source: HealthSource | None) -> None:
        with self._store.lock:
            self._store.health_source = source

    @property
    def default_instance_tags(self) -> tuple[str, ...]:
        """Network tags the health prober's firewall check assumes for a pool instance that
        was never seeded with add_instance (target pools take instance URLs unchecked, and
        the sandbox seeds its nodes that way): say what tags the cloud's VMs carry."""
        with self._store.lock:
            return self._store.default_instance_tags

    @default_instance_tags.setter
    def default_instance_tags(self, tags: Iterable[str]) -> None:
        with self._store.lock:
            self._store.default_instance_tags = tuple(dict.fromkeys(tags))

    @property
    def default_instance_service_accounts(self) -> tuple[str, ...]:
        """Service account emails assumed, like default_instance_tags, for unseeded instances."""
        with self._store.lock:
            return self._store.default_instance_service_accounts

    @default_instance_service_accounts.setter
    def default_instance_service_accounts(self, emails: Iterable[str]) -> None:
        with self._store.lock:
            self._store.default_instance_service_accounts = tuple(dict.fromkeys(emails))

    def set_instance_health(self, instance_url: str, state: str) -> None:
        if state not in _HEALTH_STATES:
            raise ValueError(f"state must be one of {sorted(_HEALTH_STATES)}")
        if "projects/" not in instance_url:
            raise ValueError("instance_url must name its project (projects/P/zones/Z/instances/I)")
        project = instance_url.split("projects/", 1)[1].split("/", 1)[0]
        url = target_pools.resolve_instance(project, instance_url, "instance")
        with self._store.lock:
            self._store.instance_health[url] = state

    def instance_health_override(self, instance_url: str) -> str | None:
        """The state set_instance_health gave this instance (its canonical URL), if any: what
        getHealth falls back to when the health source has no answer."""
        with self._store.lock:
            return self._store.instance_health.get(instance_url)

    # -- dispatch ------------------------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | str | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | str | None = b"",
    ) -> tuple[int, dict[str, str], bytes]:
        """Serve one request; `path` is like "/compute/v1/projects/p/global/firewalls"."""
        return app.handle(self._store, method, path, query, headers, body)

    # -- seeding -------------------------------------------------------------------------------

    def add_project(self, project: str) -> None:
        """Make a project exist. Once any does, a request naming another is answered as GCE
        answers for a project that does not exist (404); seeding a resource adds its project."""
        with self._store.lock:
            self._store.projects.add(project)

    @property
    def projects(self) -> frozenset[str]:
        with self._store.lock:
            return frozenset(self._store.projects)

    def _seeding(self, project: str, region: str | None = None) -> None:
        """Called with the lock held: the project now exists; a region must be GCE's."""
        if region is not None and region not in GCE_REGIONS:
            raise ValueError(f"region {region!r} is not a GCE region (store.GCE_REGIONS)")
        self._store.projects.add(project)

    def add_network(self, project: str, name: str) -> dict[str, Any]:
        check_name(name, "name")
        with self._store.lock:
            self._seeding(project)
            if self._store.taken("networks", project, "global", name):
                raise ValueError(f"network {project}/{name} already exists")
            return copy.deepcopy(networks.seed(self._store, project, name))

    def set_network_firewall_policy_enforcement_order(
        self, project: str, network: str, order: str
    ) -> None:
        """AFTER_CLASSIC_FIREWALL (GCE's default: VPC rules before the network firewall policy)
        or BEFORE_CLASSIC_FIREWALL; networks.get shows it and the prober obeys it."""
        if order not in networks.ENFORCEMENT_ORDERS:
            raise ValueError(f"order must be one of {sorted(networks.ENFORCEMENT_ORDERS)}")
        with self._store.lock:
            found = self._store.get("networks", project, "global", network)
            if found is None:
                raise ValueError(f"network {project}/{network} was not seeded")
            found["networkFirewallPolicyEnforcementOrder"] = order

    def add_firewall_policy(self, project: str, network: str, policy: dict[str, Any]) -> None:
        """Put a firewall policy in effect on a seeded network, as an organization admin
        associating a hierarchical policy (type HIERARCHY) or a project owner associating a
        global network policy (type NETWORK) would. `policy` has the fields
        networks.getEffectiveFirewalls shows (name, shortName, displayName, type, priority,
        rules: FirewallPolicyRule dicts). Hierarchical policies are evaluated in the order they
        are added (add the organization's first); a network has at most one NETWORK policy."""
        checked = networks.check_policy(policy)
        with self._store.lock:
            if self._store.get("networks", project, "global", network) is None:
                raise ValueError(f"network {project}/{network} was not seeded")
            policies = self._store.firewall_policies.setdefault((project, network), [])
            if checked["type"] == "NETWORK" and any(p["type"] == "NETWORK" for p in policies):
                raise ValueError(f"network {project}/{network} already has a network policy")
            policies.append(checked)

    def firewall_policies(self, project: str, network: str) -> list[dict[str, Any]]:
        """The policies in effect on a network, in evaluation order."""
        with self._store.lock:
            return networks.effective_policies(self._store, project, network)

    def add_http_health_check(self, project: str, name: str, **fields: Any) -> dict[str, Any]:
        """Seed a legacy check (camelCase REST fields, defaults as on insert)."""
        check_name(name, "name")
        with self._store.lock:
            self._seeding(project)
            if self._store.taken("httpHealthChecks", project, "global", name):
                raise ValueError(f"httpHealthCheck {project}/{name} already exists")
            built = hc_resource.build(fields, {})
            check = common.new_resource(
                self._store, hc_resource.KIND, project, "global", name, built
            )
            self._store.bucket("httpHealthChecks", project, "global")[name] = check
            return copy.deepcopy(check)

    def add_firewall(self, project: str, name: str, **fields: Any) -> dict[str, Any]:
        """Seed a firewall rule (camelCase REST fields, validated and defaulted as on insert:
        network "default", INGRESS, priority 1000); its network must have been seeded."""
        check_name(name, "name")
        with self._store.lock:
            self._seeding(project)
            return copy.deepcopy(firewalls.seed(self._store, project, name, fields))

    def add_target_pool(
        self,
        project: str,
        region: str,
        name: str,
        description: str = "",
        instances: Iterable[str] = (),
        health_checks: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Seed a pool as a cloud controller would; check references are not verified."""
        check_name(name, "name")
        with self._store.lock:
            self._seeding(project, region)
            pool = target_pools.seed(
                self._store,
                project,
                region,
                name,
                description=description,
                instances=list(instances),
                health_checks_=list(health_checks),
            )
            return copy.deepcopy(pool)

    def add_instance(
        self,
        project: str,
        zone: str,
        name: str,
        network_ip: str | None = None,
        metadata: Mapping[str, str] | None = None,
        tags: Iterable[str] = (),
        network: str = "default",
        description: str = "",
        machine_type: str = instance_resource.DEFAULT_MACHINE_TYPE,
        service_accounts: Iterable[str] = (),
        status: str = "RUNNING",
    ) -> dict[str, Any]:
        """Seed a VM (RUNNING unless `status` says otherwise): one interface on `network` (a
        name or reference; not verified) with `network_ip` (the project's next free
        10.128.0.x when None), instance metadata items in the order given, network tags, the
        service accounts it runs as (emails)."""
        check_name(name, "name")
        with self._store.lock:
            self._seeding(project)
            instance = instance_resource.seed(
                self._store,
                project,
                zone,
                name,
                network_ip=network_ip,
                network=network,
                metadata=dict(metadata or {}),
                tags=list(tags),
                description=description,
                machine_type=machine_type,
                service_accounts=list(service_accounts),
                status=status,
            )
            return copy.deepcopy(instance)

    # -- inspection (deep copies; pending operations that are due are completed first) ---------

    def _snapshot(self, collection: str, project: str, scope: str) -> dict[str, dict[str, Any]]:
        with self._store.lock:
            operations.advance(self._store)
            return self._store.snapshot(collection, project, scope)

    def http_health_checks(self, project: str) -> dict[str, dict[str, Any]]:
        return self._snapshot("httpHealthChecks", project, "global")

    def firewalls(self, project: str) -> dict[str, dict[str, Any]]:
        return self._snapshot("firewalls", project, "global")

    def networks(self, project: str) -> dict[str, dict[str, Any]]:
        return self._snapshot("networks", project, "global")

    def target_pools(self, project: str, region: str) -> dict[str, dict[str, Any]]:
        return self._snapshot("targetPools", project, urls.scope_of(region))

    def forwarding_rules(self, project: str, region: str) -> dict[str, dict[str, Any]]:
        return self._snapshot("forwardingRules", project, urls.scope_of(region))

    def instances(self, project: str, zone: str) -> dict[str, dict[str, Any]]:
        return self._snapshot("instances", project, urls.zone_scope(zone))

    def instance_metadata(self, project: str, zone: str, name: str) -> dict[str, str]:
        """An instance's metadata items as {key: value} (KeyError if there is no instance)."""
        metadata = self.instances(project, zone)[name]["metadata"]
        return {item["key"]: item.get("value", "") for item in metadata.get("items", [])}

    def all_resources(self, collection: str) -> list[dict[str, Any]]:
        """Every resource of `collection` in every project and scope, for observers that span
        them (the health prober), ordered by (project, scope, name)."""
        with self._store.lock:
            operations.advance(self._store)
            buckets = self._store._buckets  # Store offers no cross-project view; read only
            return [
                copy.deepcopy(buckets[key][name])
                for key in sorted(buckets)
                if key[0] == collection
                for name in sorted(buckets[key])
            ]

    def operations(self, project: str) -> list[dict[str, Any]]:
        """Every operation of the project (global, regional, zonal), oldest first, as shown."""
        with self._store.lock:
            operations.advance(self._store)
            ops = [op for op in self._store.operations.values() if op.project == project]
            ops.sort(key=lambda op: op.created)
            return [operations.render(self._store, op) for op in ops]

    def end_stalls(self) -> int:
        """Let every stalled operation finish (Faults.stall_operations), as a stuck backend
        recovering: each completes at its latency, effect applied. Returns how many."""
        with self._store.lock:
            stalled = [op for op in self._store.pending if op.stall]
            for op in stalled:
                op.stall = 0.0
            operations.advance(self._store)
            return len(stalled)

    @property
    def waiters(self) -> int:
        """How many operations `wait` requests are blocked right now (for tests to sync on)."""
        with self._store.lock:
            return self._store.waiters

    @property
    def journal(self) -> list[JournalEntry]:
        with self._store.lock:
            return list(self._store.journal)

    def mutating_requests(self) -> list[JournalEntry]:
        return [entry for entry in self.journal if entry.mutating]

    def clear_journal(self) -> None:
        with self._store.lock:
            self._store.journal.clear()
