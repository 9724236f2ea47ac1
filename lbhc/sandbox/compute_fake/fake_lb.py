"""ComputeFake's seeding and inspection of load balancers' resources beyond target pools:
forwarding rules (to a pool or a backend service), health checks, regional backend services
of passthrough load balancers, zonal instance groups and network endpoint groups. A mixin of
ComputeFake, apart so each file stays small."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from . import operations, urls
from .resources import (
    backend_health,
    backend_services,
    forwarding_rules,
    instance_groups,
    lb_health_checks,
    network_endpoint_groups,
    network_endpoints,
)
from .store import GCE_REGIONS, Store, zone_region
from .validation import check_name


class LoadBalancerSeeding:
    """Seed helpers take camelCase REST fields, validated and defaulted as on insert."""

    _store: Store

    def _seed_scope(self, project: str, name: str, region: str | None, zone: str | None) -> None:
        """Called with the lock held: the name is valid, the region or zone GCE's, the project
        now exists."""
        check_name(name, "name")
        if region is not None and region not in GCE_REGIONS:
            raise ValueError(f"region {region!r} is not a GCE region (store.GCE_REGIONS)")
        if zone is not None and zone_region(zone) is None:
            raise ValueError(f"zone {zone!r} is not a zone of a GCE region")
        self._store.projects.add(project)

    def _lb_snapshot(self, collection: str, project: str, scope: str) -> dict[str, Any]:
        with self._store.lock:
            operations.advance(self._store)
            return self._store.snapshot(collection, project, scope)

    # -- seeding ---------------------------------------------------------------------------

    def add_health_check(
        self, project: str, name: str, region: str | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Seed a global check, or a regional one in `region`: `type` and its protocol object
        (e.g. type="HTTP", httpHealthCheck={"port": 10256, "requestPath": "/healthz"}); `type`
        may be left out when one protocol object is given."""
        with self._store.lock:
            self._seed_scope(project, name, region, None)
            scope = urls.scope_of(region)
            return copy.deepcopy(
                lb_health_checks.seed(self._store, project, scope, name, dict(fields))
            )

    def add_backend_service(
        self, project: str, region: str, name: str, **fields: Any
    ) -> dict[str, Any]:
        """Seed a regional backend service of a passthrough load balancer, validated as on
        insert: loadBalancingScheme (EXTERNAL, the default, or INTERNAL), protocol (TCP, UDP
        or UNSPECIFIED: required), healthChecks (one reference to a seeded check),
        backends ([{"group": full URL of a seeded instance group or NEG}]), and the other
        fields backend_services.KIND lists."""
        with self._store.lock:
            self._seed_scope(project, name, region, None)
            service = backend_services.seed(self._store, project, region, name, dict(fields))
            return copy.deepcopy(service)

    def add_forwarding_rule(
        self,
        project: str,
        region: str,
        name: str,
        target: str = "",
        description: str = "",
        ip_address: str | None = "1.2.3.4",
        port_range: str | None = None,
        ip_protocol: str = "TCP",
        backend_service: str = "",
        load_balancing_scheme: str = "EXTERNAL",
        ports: Iterable[str] = (),
        all_ports: bool = False,
        network: str = "",
    ) -> dict[str, Any]:
        """Seed a rule pointing at a target pool (`target`, which must exist) or at a regional
        backend service (`backend_service`: when it exists its scheme must be the rule's; it
        may be missing, as the sandbox seeds the rules of RBS Services without the backend
        services ingress-gce would own); exactly one of the two. Ports: `port_range` (80-80
        when neither `ports` nor `all_ports` is given to an EXTERNAL rule), `ports` or
        `all_ports`. An INTERNAL rule is on `network` ("default" when empty; not verified);
        `ip_address` None picks one (internal for INTERNAL)."""
        port_list = tuple(ports)
        ported = bool(port_list) or all_ports or load_balancing_scheme == "INTERNAL"
        spec = forwarding_rules.RuleSpec(
            target=target,
            backend_service=backend_service,
            description=description,
            ip_address=ip_address,
            port_range=port_range if port_range is not None or ported else "80-80",
            ip_protocol=ip_protocol,
            scheme=load_balancing_scheme,
            ports=port_list,
            all_ports=all_ports,
            network=network,
        )
        with self._store.lock:
            self._seed_scope(project, name, region, None)
            rule = forwarding_rules.seed(self._store, project, region, name, spec)
            return copy.deepcopy(rule)

    def add_instance_group(
        self, project: str, zone: str, name: str, instances: Iterable[str] = (), **fields: Any
    ) -> dict[str, Any]:
        """Seed an unmanaged group holding `instances` (URLs, full or partial, in `zone`; not
        looked up, as a target pool's are not), with REST fields such as description,
        namedPorts or network; without a network it takes the first seeded member's."""
        with self._store.lock:
            self._seed_scope(project, name, None, zone)
            group = instance_groups.seed(
                self._store, project, zone, name, list(instances), dict(fields)
            )
            return copy.deepcopy(group)

    def add_network_endpoint_group(
        self,
        project: str,
        zone: str,
        name: str,
        endpoints: Iterable[Mapping[str, str] | str] = (),
        **fields: Any,
    ) -> dict[str, Any]:
        """Seed a GCE_VM_IP NEG (network "default" unless `network` says otherwise; not looked
        up) holding `endpoints`: instance names or URLs of seeded instances (their primary IP
        is the endpoint's), or NetworkEndpoint dicts {"instance", "ipAddress"} (the IP is
        needed when the instance was not seeded)."""
        entries = [{"instance": e} if isinstance(e, str) else dict(e) for e in endpoints]
        with self._store.lock:
            self._seed_scope(project, name, None, zone)
            group = network_endpoints.seed(self._store, project, zone, name, entries, dict(fields))
            return copy.deepcopy(group)

    # -- inspection (deep copies; pending operations that are due are completed first) -----

    def health_checks(self, project: str, region: str | None = None) -> dict[str, Any]:
        """The global checks, or the regional ones of `region`."""
        return self._lb_snapshot("healthChecks", project, urls.scope_of(region))

    def instance_groups(self, project: str, zone: str) -> dict[str, Any]:
        return self._lb_snapshot("instanceGroups", project, urls.zone_scope(zone))

    def instance_group_members(self, project: str, zone: str, name: str) -> list[str]:
        """The instance URLs of a group, in the order they joined (KeyError if no group)."""
        with self._store.lock:
            operations.advance(self._store)
            group = self._store.get("instanceGroups", project, urls.zone_scope(zone), name)
            if group is None:
                raise KeyError(f"instance group {project}/{zone}/{name}")
            return [m["instance"] for m in instance_groups.members(self._store, group)]

    def network_endpoint_groups(self, project: str, zone: str) -> dict[str, Any]:
        return self._lb_snapshot("networkEndpointGroups", project, urls.zone_scope(zone))

    def network_endpoints(self, project: str, zone: str, name: str) -> list[dict[str, str]]:
        """The endpoints of a NEG ({"instance": name, "ipAddress"}), in the order attached
        (KeyError if there is no NEG)."""
        with self._store.lock:
            operations.advance(self._store)
            group = self._store.get("networkEndpointGroups", project, urls.zone_scope(zone), name)
            if group is None:
                raise KeyError(f"network endpoint group {project}/{zone}/{name}")
            return copy.deepcopy(network_endpoint_groups.endpoints(self._store, group))

    def backend_services(self, project: str, region: str) -> dict[str, Any]:
        return self._lb_snapshot("backendServices", project, urls.scope_of(region))

    def group_members(self, group_url: str) -> list[str]:
        """The instance URLs of an instance group's or a NEG's members, as
        regionBackendServices.getHealth names them ([] if there is no such group)."""
        ref = urls.parse_ref(group_url, "")
        if ref is None:
            return []
        with self._store.lock:
            group = self._store.get(ref.collection, ref.project, ref.scope, ref.name)
            return [url for url, _ in backend_health.members(self._store, group)] if group else []
