"""GceClient: the one module that talks to the Compute API.

Firewalls, target pools, forwarding rules and operations go through google-cloud-compute's
`*_unary` methods (its ExtendedOperation.result() ignores a custom endpoint); legacy
httpHealthChecks, which that library has no client for, go through google-auth's
AuthorizedSession with the same credentials. How each call is made (pacing, a deadline,
timeouts per attempt, retries with jittered backoff on 429, 5xx and 403 rateLimitExceeded,
the one line that explains a failure) is lbhc.gce.calls; every mutation carries one
requestId across its retries so a retried insert cannot happen twice.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from google.api_core import exceptions as core

from lbhc.gce import convert
from lbhc.gce.calls import (
    AttemptTimeout,
    Caller,
    fit_pool,
    identity_of,
    poll_budget_sec,
    said,
)
from lbhc.gce.config import OTHER_CALLERS, GceClientConfig, make_credentials
from lbhc.gce.errors import (
    GceNotCompute,
    GceReadError,
    GceTimeout,
    describe_gce_error,
    is_forbidden,
    is_not_found,
    not_compute_answer,
    operation_error,
)
from lbhc.gce.permissions import PERMISSIONS_BY_CALL
from lbhc.model.backend import (
    BackendService,
    BackendView,
    HealthCheck,
    is_shared_instance_group,
)
from lbhc.model.cloud import (
    CloudSnapshot,
    Firewall,
    ForwardingRule,
    HttpHealthCheck,
    TargetPool,
    health_check_to_json,
    network_url,
    resource_name,
    resource_path,
)
from lbhc.model.firewall import EffectiveFirewall

log = logging.getLogger(__name__)
T = TypeVar("T")
PAGE_SIZE = 500  # the API's maximum
# Partial responses (the `fields` system parameter, sent as its header alias because the
# generated request types have no field for it): only what the planner reads. A pool lists
# every node as an instance URL; at 5,000 nodes and 1,000 pools that is ~500 MB of JSON a
# pass that lbhc would decode and throw away.
POOL_FIELDS = "items(name,region,description,healthChecks,selfLink),nextPageToken"
RULE_FIELDS = (
    "items(name,description,target,IPAddress,backendService,loadBalancingScheme),nextPageToken"
)
BACKEND_SERVICE_FIELDS = (
    "items(name,region,loadBalancingScheme,protocol,healthChecks,backends/group,"
    "connectionDraining,description,selfLink),nextPageToken"
)
CHECK_FIELDS = (
    "items(name,description,host,requestPath,port,checkIntervalSec,timeoutSec,"
    "healthyThreshold,unhealthyThreshold,selfLink),nextPageToken"
)


class GceClient:
    def __init__(
        self,
        config: GceClientConfig,
        credentials: Any | None = None,
        *,
        write_guard: Callable[[], bool] | None = None,
        observer: Callable[[str, str], None] | None = None,
    ) -> None:
        """`write_guard` is asked before every mutation attempt (leader election: a replica
        that may no longer write must not, even mid-retry); `observer(call, result)` sees
        every attempt's outcome (metrics)."""
        from google.auth.transport.requests import AuthorizedSession
        from google.cloud import compute_v1

        self.config = config
        creds = credentials if credentials is not None else make_credentials(config.endpoint)
        self._credentials = creds
        self._calls = Caller(config, creds, write_guard=write_guard, observer=observer)
        options = {"api_endpoint": config.endpoint}
        self._compute = compute_v1
        self._firewalls = compute_v1.FirewallsClient(credentials=creds, client_options=options)
        self._pools = compute_v1.TargetPoolsClient(credentials=creds, client_options=options)
        self._rules = compute_v1.ForwardingRulesClient(credentials=creds, client_options=options)
        self._networks = compute_v1.NetworksClient(credentials=creds, client_options=options)
        # Backend-service load balancers: read, never written.
        self._backend_services = compute_v1.RegionBackendServicesClient(
            credentials=creds, client_options=options
        )
        self._checks = compute_v1.HealthChecksClient(credentials=creds, client_options=options)
        self._region_checks = compute_v1.RegionHealthChecksClient(
            credentials=creds, client_options=options
        )
        self._groups = compute_v1.InstanceGroupsClient(credentials=creds, client_options=options)
        self._instances = compute_v1.InstancesClient(credentials=creds, client_options=options)
        self._global_ops = compute_v1.GlobalOperationsClient(
            credentials=creds, client_options=options
        )
        self._region_ops = compute_v1.RegionOperationsClient(
            credentials=creds, client_options=options
        )
        self._session = AuthorizedSession(creds)
        # Each client has a session of its own; the executor's workers call the pools' and
        # the operations' clients at once.
        for client in (self._session, *self._generated_clients()):
            fit_pool(client, config.max_concurrent_calls + OTHER_CALLERS)
        self._base = config.endpoint.rstrip("/") + f"/compute/v1/projects/{config.project}"
        self._metadata = (("x-lbhc-client-id", config.client_id),) if config.client_id else ()

    def _generated_clients(self) -> tuple[Any, ...]:
        return (
            self._firewalls,
            self._pools,
            self._rules,
            self._networks,
            self._backend_services,
            self._checks,
            self._region_checks,
            self._groups,
            self._instances,
            self._global_ops,
            self._region_ops,
        )

    # ---- plumbing -------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[AttemptTimeout], T], *, mutating: bool) -> T:
        """`fn(timeout)`, paced, within the call's deadline and retried (lbhc.gce.calls)."""
        return self._calls.call(what, fn, mutating=mutating)

    def _gapic_kwargs(self, timeout: AttemptTimeout, field_mask: str = "") -> dict[str, Any]:
        # retry=None: the library would otherwise retry reads for up to 600 s on its own.
        mask = (("x-goog-fieldmask", field_mask),) if field_mask else ()
        return {
            "retry": None,
            "timeout": timeout.for_gapic(),
            "metadata": self._metadata + mask,
        }

    def _http(
        self,
        timeout: AttemptTimeout,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        headers = dict(self._metadata)
        response = self._session.request(
            method,
            self._base + path,
            json=body,
            params=params,
            headers=headers,
            timeout=timeout.for_requests(),
        )
        answer = not_compute_answer(response)
        if answer is not None:  # never retried: a wrong endpoint stays wrong
            raise GceNotCompute(
                f"{self.config.endpoint} is not the Compute API: {method} {path or '/'} "
                f"{answer}; check --gce-endpoint / LBHC_GCE_ENDPOINT"
            )
        if response.status_code >= 400:
            raise core.from_http_response(response)
        answered: dict[str, Any] = response.json() if response.content else {}
        return answered

    def _wait(self, op: Any, *, regional: bool, project: str = "") -> None:
        """Poll with our own operations client until DONE, then judge the error fields.
        `wait` answers within ~2 min, done or not (hence the loop), so a poll may take up to
        operation_poll_timeout_sec, and its deadline is that much longer than a call's. A
        poll with no answer in that time is a silent endpoint, not "not done yet": it is
        retried like any call, and ends the wait with the one line that says so. The whole
        wait ends by operation_timeout_sec."""
        deadline = time.monotonic() + self.config.operation_timeout_sec
        name, region = op.name, self.config.region
        project = project or self.config.project
        metadata = self._metadata

        def poll(timeout: AttemptTimeout) -> Any:
            if regional:
                return self._region_ops.wait(
                    project=project,
                    region=region,
                    operation=name,
                    retry=None,
                    timeout=timeout.for_gapic(),
                    metadata=metadata,
                )
            return self._global_ops.wait(
                project=project,
                operation=name,
                retry=None,
                timeout=timeout.for_gapic(),
                metadata=metadata,
            )

        what = "wait_region_operation" if regional else "wait_global_operation"
        config = self.config
        while op.status != self._compute.Operation.Status.DONE:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timeout = config.operation_timeout_sec
                raise TimeoutError(f"operation {name} not DONE after {timeout:.0f} s")
            op = self._calls.call(
                what,
                poll,
                mutating=False,
                read_timeout=min(config.operation_poll_timeout_sec, remaining),
                budget=min(poll_budget_sec(config), remaining),
            )
        error = operation_error(op)
        if error is not None:
            raise error

    def _mutate(
        self,
        what: str,
        send: Callable[[str, AttemptTimeout], Any],
        *,
        regional: bool,
        project: str = "",
    ) -> None:
        """`send(request id, timeout)`; `project`: where the operation lives (a firewall's
        is the network's project)."""
        request_id = str(uuid.uuid4())  # one id for all retries: the API dedupes on it
        op = self._call(what, functools.partial(send, request_id), mutating=True)
        self._wait(op, regional=regional, project=project)

    def _op_from_json(self, body: dict[str, Any]) -> Any:
        import json

        return self._compute.Operation.from_json(json.dumps(body), ignore_unknown_fields=True)

    def _get_or_none(self, what: str, fetch: Callable[[AttemptTimeout], T]) -> T | None:
        try:
            return self._call(what, fetch, mutating=False)
        except core.GoogleAPICallError as exc:
            if is_not_found(exc):
                return None
            raise

    # ---- legacy HTTP health checks (no generated client exists) -------------------------
    def _legacy_mutation(
        self, what: str, method: str, path: str, body: dict[str, Any] | None = None
    ) -> None:
        self._mutate(
            what,
            lambda rid, timeout: self._op_from_json(
                self._http(timeout, method, path, body, {"requestId": rid})
            ),
            regional=False,
        )

    def get_http_health_check(self, name: str) -> HttpHealthCheck | None:
        path = f"/global/httpHealthChecks/{name}"
        body = self._get_or_none("get_http_health_check", lambda t: self._http(t, "GET", path))
        return convert.health_check_from_json(body) if body is not None else None

    def list_http_health_checks(self) -> list[HttpHealthCheck]:
        """Every legacy check of the project: what the pools really carry (the cloud
        provider's node check, per-Service checks, anyone's), as partial responses."""

        def page(token: str, timeout: AttemptTimeout) -> tuple[list[Any], str]:
            params = {"maxResults": str(PAGE_SIZE), "fields": CHECK_FIELDS}
            if token:
                params["pageToken"] = token
            body = self._http(timeout, "GET", "/global/httpHealthChecks", params=params)
            return body.get("items", []), body.get("nextPageToken", "")

        items = self._list_pages("list_http_health_checks", page)
        return [convert.health_check_from_json(item) for item in items]

    def insert_http_health_check(self, check: HttpHealthCheck) -> None:
        self._legacy_mutation(
            "insert_http_health_check",
            "POST",
            "/global/httpHealthChecks",
            health_check_to_json(check),
        )

    def update_http_health_check(self, check: HttpHealthCheck) -> None:
        self._legacy_mutation(
            "update_http_health_check",
            "PUT",
            f"/global/httpHealthChecks/{check.name}",
            health_check_to_json(check),
        )

    def delete_http_health_check(self, name: str) -> None:
        self._legacy_mutation(
            "delete_http_health_check", "DELETE", f"/global/httpHealthChecks/{name}"
        )

    # ---- firewalls -------------------------------------------------------------------
    def get_firewall(self, name: str) -> Firewall | None:
        project = self.config.firewall_project
        found = self._get_or_none(
            "get_firewall",
            lambda t: self._firewalls.get(project=project, firewall=name, **self._gapic_kwargs(t)),
        )
        return convert.firewall_from_proto(found) if found is not None else None

    def insert_firewall(self, firewall: Firewall) -> None:
        resource = convert.firewall_to_proto(firewall)
        self._mutate(
            "insert_firewall",
            lambda rid, t: self._firewalls.insert_unary(
                request=self._compute.InsertFirewallRequest(
                    project=self.config.firewall_project,
                    firewall_resource=resource,
                    request_id=rid,
                ),
                **self._gapic_kwargs(t),
            ),
            regional=False,
            project=self.config.firewall_project,
        )

    def update_firewall(self, firewall: Firewall) -> None:
        resource = convert.firewall_to_proto(firewall)
        self._mutate(
            "update_firewall",
            lambda rid, t: self._firewalls.update_unary(
                request=self._compute.UpdateFirewallRequest(
                    project=self.config.firewall_project,
                    firewall=firewall.name,
                    firewall_resource=resource,
                    request_id=rid,
                ),
                **self._gapic_kwargs(t),
            ),
            regional=False,
            project=self.config.firewall_project,
        )

    def delete_firewall(self, name: str) -> None:
        self._mutate(
            "delete_firewall",
            lambda rid, t: self._firewalls.delete_unary(
                request=self._compute.DeleteFirewallRequest(
                    project=self.config.firewall_project, firewall=name, request_id=rid
                ),
                **self._gapic_kwargs(t),
            ),
            regional=False,
            project=self.config.firewall_project,
        )

    # ---- the network's effective firewall ------------------------------------------------
    def read_effective_firewall(self) -> EffectiveFirewall:
        """What the nodes' network lets in: its VPC rules and the firewall policies applied to
        it (networks.getEffectiveFirewalls), in the order its network policy is enforced
        (networks.get: networkFirewallPolicyEnforcementOrder). One read each, whatever the
        number of pools."""
        project = self.config.firewall_project
        url = network_url(project, self.config.network)
        network = resource_name(url)
        found = self._call(
            "get_network",
            lambda t: self._networks.get(project=project, network=network, **self._gapic_kwargs(t)),
            mutating=False,
        )
        order = found.network_firewall_policy_enforcement_order
        response = self._call(
            "get_effective_firewalls",
            lambda t: self._networks.get_effective_firewalls(
                project=project, network=network, **self._gapic_kwargs(t)
            ),
            mutating=False,
        )
        after_vpc = order != "BEFORE_CLASSIC_FIREWALL"
        return convert.effective_firewall_from_proto(url, response, after_vpc)

    # ---- target pools and forwarding rules ----------------------------------------------
    def list_target_pools(self) -> list[TargetPool]:
        pages = self._list_regional(
            "list_target_pools",
            self._pools.list,
            self._compute.ListTargetPoolsRequest,
            POOL_FIELDS,
        )
        return [convert.target_pool_from_proto(p) for p in pages]

    def list_forwarding_rules(self) -> list[ForwardingRule]:
        pages = self._list_regional(
            "list_forwarding_rules",
            self._rules.list,
            self._compute.ListForwardingRulesRequest,
            RULE_FIELDS,
        )
        return [convert.forwarding_rule_from_proto(r) for r in pages]

    # ---- backend-service load balancers (read only) --------------------------------------
    def list_backend_services(self) -> list[BackendService]:
        """The region's backend services: a passthrough load balancer's, external or internal,
        is always regional. Pages, whatever the number of Services."""
        pages = self._list_regional(
            "list_backend_services",
            self._backend_services.list,
            self._compute.ListRegionBackendServicesRequest,
            BACKEND_SERVICE_FIELDS,
        )
        return [convert.backend_service_from_proto(b) for b in pages]

    def list_health_checks(self) -> list[HealthCheck]:
        """Non-legacy checks, global (internal load balancers') and the region's (external
        ones'): two lists, in pages."""
        project = self.config.project

        def page(token: str, timeout: AttemptTimeout) -> tuple[list[Any], str]:
            pager = self._checks.list(
                request=self._compute.ListHealthChecksRequest(
                    project=project, max_results=PAGE_SIZE, page_token=token
                ),
                **self._gapic_kwargs(timeout),
            )
            return list(pager.items), pager.next_page_token

        found = self._list_pages("list_health_checks", page)
        found += self._list_regional(
            "list_region_health_checks",
            self._region_checks.list,
            self._compute.ListRegionHealthChecksRequest,
            "",
        )
        return [convert.health_check_from_proto(c) for c in found]

    def list_group_instances(self, group_url: str) -> frozenset[str]:
        """An instance group's members, as paths: read for the few shared groups (one per
        zone for the cloud provider's and ingress-gce's load balancers), not per Service."""
        parts = resource_path(group_url).split("/")  # projects/P/zones/Z/instanceGroups/N
        project, zone, name = parts[1], parts[3], parts[5]

        def page(token: str, timeout: AttemptTimeout) -> tuple[list[Any], str]:
            pager = self._groups.list_instances(
                request=self._compute.ListInstancesInstanceGroupsRequest(
                    project=project,
                    zone=zone,
                    instance_group=name,
                    instance_groups_list_instances_request_resource={"instance_state": "ALL"},
                    max_results=PAGE_SIZE,
                    page_token=token,
                ),
                **self._gapic_kwargs(timeout),
            )
            return list(pager.items), pager.next_page_token

        members = self._list_pages("list_group_instances", page)
        return frozenset(resource_path(m.instance) for m in members)

    def _list_regional(
        self,
        what: str,
        list_call: Callable[..., Any],
        request_type: Callable[..., Any],
        field_mask: str,
    ) -> list[Any]:
        project, region = self.config.project, self.config.region

        def page(token: str, timeout: AttemptTimeout) -> tuple[list[Any], str]:
            pager = list_call(
                request=request_type(
                    project=project, region=region, max_results=PAGE_SIZE, page_token=token
                ),
                **self._gapic_kwargs(timeout, field_mask),
            )
            # The pager hands its first page's fields through.
            return list(pager.items), pager.next_page_token

        return self._list_pages(what, page)

    def _list_pages(
        self, what: str, fetch: Callable[[str, AttemptTimeout], tuple[list[Any], str]]
    ) -> list[Any]:
        """One request per page, each retried on its own; the pager's implicit page fetches
        would bypass pacing and retries. `fetch(token, timeout)` gives (items, next page
        token)."""
        items: list[Any] = []
        token = ""
        while True:
            page, token = self._call(what, functools.partial(fetch, token), mutating=False)
            items.extend(page)
            if not token:
                return items

    def add_health_check(self, pool: str, health_check_url: str) -> None:
        body = {"health_checks": [{"health_check": health_check_url}]}
        self._mutate(
            "add_health_check",
            lambda rid, t: self._pools.add_health_check_unary(
                request=self._compute.AddHealthCheckTargetPoolRequest(
                    **self._pool_request(pool, rid),
                    target_pools_add_health_check_request_resource=body,
                ),
                **self._gapic_kwargs(t),
            ),
            regional=True,
        )

    def remove_health_check(self, pool: str, health_check_url: str) -> None:
        body = {"health_checks": [{"health_check": health_check_url}]}
        self._mutate(
            "remove_health_check",
            lambda rid, t: self._pools.remove_health_check_unary(
                request=self._compute.RemoveHealthCheckTargetPoolRequest(
                    **self._pool_request(pool, rid),
                    target_pools_remove_health_check_request_resource=body,
                ),
                **self._gapic_kwargs(t),
            ),
            regional=True,
        )

    def get_health(self, pool: str, instance_url: str) -> tuple[str, ...]:
        """What GCE's own health checking reports for one instance of a pool: one state
        (HEALTHY / UNHEALTHY) per forwarding rule IP. Read-only; `lbhc status --lb-health`."""
        response = self._call(
            "get_health",
            lambda t: self._pools.get_health(
                request=self._compute.GetHealthTargetPoolRequest(
                    project=self.config.project,
                    region=self.config.region,
                    target_pool=pool,
                    instance_reference_resource={"instance": instance_url},
                ),
                **self._gapic_kwargs(t),
            ),
            mutating=False,
        )
        return tuple(status.health_state for status in response.health_status)

    def backend_health(self, backend: str, group_url: str) -> dict[str, tuple[str, ...]]:
        """What GCE's own health checking reports for every member of one backend group of a
        regional backend service (regionBackendServices.getHealth answers for a whole group
        per call): instance path -> one state per forwarding rule. Read-only."""
        response = self._call(
            "backend_health",
            lambda t: self._backend_services.get_health(
                request=self._compute.GetHealthRegionBackendServiceRequest(
                    project=self.config.project,
                    region=self.config.region,
                    backend_service=backend,
                    resource_group_reference_resource={"group": group_url},
                ),
                **self._gapic_kwargs(t),
            ),
            mutating=False,
        )
        states: dict[str, tuple[str, ...]] = {}
        for status in response.health_status:
            path = resource_path(status.instance)
            states[path] = (*states.get(path, ()), status.health_state)
        return states

    def pool_instances(self, pool: str) -> frozenset[str]:
        """Which instances a pool holds, as paths (`projects/P/zones/Z/instances/N`): a partial
        response of the one field, read only to confirm a getHealth refusal. A pool lists
        every member, so this is never read for all pools."""
        response = self._call(
            "pool_instances",
            lambda t: self._pools.get(
                request=self._compute.GetTargetPoolRequest(
                    project=self.config.project, region=self.config.region, target_pool=pool
                ),
                **self._gapic_kwargs(t, "instances"),
            ),
            mutating=False,
        )
        return frozenset(resource_path(url) for url in response.instances)

    def instance_tags(self, instance_url: str) -> frozenset[str] | None:
        """The network tags a node's VM carries (a partial response of the one field), or
        None when the VM is gone: read for a few nodes at start, to tell whether
        gce.node_tags are the nodes' own."""
        project, zone, name = _instance_parts(instance_url)
        found = self._get_or_none(
            "instance_tags",
            lambda t: self._instances.get(
                project=project, zone=zone, instance=name, **self._gapic_kwargs(t, "tags")
            ),
        )
        if found is None:
            return None
        return frozenset(found.tags.items) if found.tags else frozenset()

    def _pool_request(self, pool: str, request_id: str) -> dict[str, str]:
        return {
            "project": self.config.project,
            "region": self.config.region,
            "target_pool": pool,
            "request_id": request_id,
        }

    # ---- the snapshot ------------------------------------------------------------------
    def read_snapshot(
        self,
        shared_name: str,
        *,
        complete: bool = False,
        backends: bool = False,
        group_members: bool = True,
    ) -> CloudSnapshot:
        """The shared pair by name, and every pool and forwarding rule in the region. A list
        that cannot be read in full becomes a gap (the planner then withholds removals);
        a failed read of a shared resource raises, since nothing sound can be planned.
        `complete`: a list that fails raises GceReadError instead, one line naming it and
        the fix (one-shot commands show nothing from a partial view). `backends`: read the
        backend-service load balancers too, for status; plans never need them.
        `group_members`: with them, the shared instance groups' members (see read_backends)."""
        gaps: list[str] = []
        check = self.get_http_health_check(shared_name)
        firewall: Firewall | None = None
        firewall_unreadable = ""
        try:
            firewall = self.get_firewall(shared_name)
        except core.GoogleAPICallError as exc:
            if not is_forbidden(exc):
                raise
            # A Shared VPC host project lbhc may not read: say what a network admin must do.
            firewall_unreadable = describe_gce_error(exc)
        # Without the checks, coverage is judged by name only; nothing is removed on that.
        checks = self._listed("list_http_health_checks", "health checks", gaps, complete)
        pools = self._listed("list_target_pools", "target pools", gaps, complete)
        rules = self._listed("list_forwarding_rules", "forwarding rules", gaps, complete)
        effective: EffectiveFirewall | None = None
        effective_unreadable = ""
        try:
            effective = self.read_effective_firewall()
        except (core.GoogleAPICallError, OSError) as exc:
            # Not a gap: it withholds only what depends on it (lbhc's firewall's removal),
            # and every pool's reachability reads unknown, with this reason.
            effective_unreadable = describe_gce_error(exc)
        return CloudSnapshot(
            check,
            firewall,
            tuple(pools or ()),
            tuple(rules or ()),
            tuple(gaps),
            health_checks={resource_path(c.self_link): c for c in checks or () if c.self_link},
            health_checks_complete=checks is not None,
            pools_complete=pools is not None,
            firewall_unreadable=firewall_unreadable,
            effective_firewall=effective,
            effective_firewall_unreadable=effective_unreadable,
            backends=self.read_backends(group_members) if backends else BackendView(),
        )

    def read_backends(self, group_members: bool = True) -> BackendView:
        """Backend services, checks and shared instance groups' members: a few list pages a
        pass. Not a gap when it fails: lbhc writes nothing there, and status says why their
        coverage and drain are unknown. `group_members`: the members are judged only for
        nodes leaving (marked for deletion, or labelled for a GKE drain), and a group lists
        every node, one page per 500: without such a node they are not read."""
        try:
            services = tuple(self.list_backend_services())
            checks = {resource_path(c.self_link): c for c in self.list_health_checks()}
            shared = {g for s in services for g in s.backends if is_shared_instance_group(g)}
            groups = sorted(shared) if group_members else []
            members = {resource_path(g): self.list_group_instances(g) for g in groups}
        except (core.GoogleAPICallError, OSError) as exc:
            return BackendView(unreadable=describe_gce_error(exc))
        return BackendView(services, checks, members, unreadable="")

    def _listed(self, call: str, what: str, gaps: list[str], complete: bool) -> list[Any] | None:
        """A listing by the method named `call`, or None and a gap (or, `complete`, a
        GceReadError) when it fails."""
        try:
            listing: list[Any] = getattr(self, call)()
            return listing
        except (core.GoogleAPICallError, OSError) as exc:
            if not complete:
                gaps.append(f"{what} could not be listed: {describe_gce_error(exc)}")
                return None
            if isinstance(exc, GceTimeout):
                raise  # already one line naming the endpoint, the timeouts and the fix
            where = f"project {self.config.project}" + (
                "" if call == "list_http_health_checks" else f", region {self.config.region}"
            )
            if is_forbidden(exc):
                fix = (
                    f"grant {identity_of(self._credentials)} "
                    f"{', '.join(PERMISSIONS_BY_CALL[call])} (README: GCE permissions)"
                )
            else:
                fix = "try again"
            raise GceReadError(f"cannot list {what} in {where}: {said(exc)}; {fix}") from exc


def _instance_parts(instance_url: str) -> tuple[str, str, str]:
    """(project, zone, name) of `.../projects/P/zones/Z/instances/N`."""
    parts = resource_path(instance_url).split("/")
    if len(parts) != 6 or parts[0] != "projects" or parts[2:5:2] != ["zones", "instances"]:
        raise ValueError(f"not an instance URL: {instance_url!r}")
    return parts[1], parts[3], parts[5]
