"""Who wrote what, from the fakes' journals (every request, answered or refused): lbhc may
write only its own check and firewall and attach/detach on pools of this cluster's Services;
the cloud provider (the legacy emulator: deletes of those Services' load balancers; today's:
its own load balancers, node check and firewalls) and GKE's ingress-gce (its backend-service
load balancers) never lbhc's check or firewall; the soak's
oracle nothing; and lbhc's writes to Kubernetes go only to its Lease and to Events."""

from __future__ import annotations

import re
from collections.abc import Iterable

from lbhc.sandbox.compute_fake.journal import JournalEntry as GceEntry
from lbhc.sandbox.kube_fake.journal import JournalEntry as KubeEntry
from lbhc.sandbox.upstream.compute import INGRESS_GCE_USER_AGENT
from lbhc.sandbox.upstream.compute import USER_AGENT as CLOUD_PROVIDER_AGENT

_POOL_CALL = re.compile(r"/regions/[^/]+/targetPools/([^/]+)/(addHealthCheck|removeHealthCheck)$")
_LB_DELETE = re.compile(r"/regions/[^/]+/(forwardingRules|targetPools)/([^/]+)$")
_KUBE_WRITES_ALLOWED = (
    re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/lbhc-system/leases(/[^/]+)?$"),
    re.compile(r"^/apis/events\.k8s\.io/v1/namespaces/[^/]+/events(/[^/]+)?$"),
)
_KUBE_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_EMULATED_CONTROLLERS = frozenset({CLOUD_PROVIDER_AGENT, INGRESS_GCE_USER_AGENT})


def wrong_gce_writes(
    entries: Iterable[GceEntry], *, identity: str, check_name: str, service_pools: set[str]
) -> list[str]:
    wrong = []
    for entry in entries:
        if not entry.mutating:
            continue
        if entry.client_id == identity and _lbhc_may(entry, check_name, service_pools):
            continue
        if entry.client_id == "" and entry.user_agent in _EMULATED_CONTROLLERS:
            if not _names_ours(entry, check_name):
                continue  # today's cloud provider or ingress-gce, on their own resources
        elif entry.client_id == "" and entry.method == "DELETE":
            deleted = _LB_DELETE.search(entry.path)
            if deleted and deleted.group(2) in service_pools:
                continue  # the cloud provider removing a deleted Service's load balancer
        wrong.append(f"{entry.client_id or 'no client id'}: {entry.method} {entry.path}")
    return wrong


def _names_ours(entry: GceEntry, check_name: str) -> bool:
    """A write to lbhc's check or firewall, or one adding/removing lbhc's check on a pool."""
    if entry.path.rstrip("/").endswith(f"/{check_name}"):
        return True
    if (entry.body or {}).get("name") == check_name:
        return True
    refs = [  # a pool's insert lists URLs; add/removeHealthCheck wraps each in an object
        str(ref.get("healthCheck", "") if isinstance(ref, dict) else ref)
        for ref in (entry.body or {}).get("healthChecks") or []
    ]
    return any(ref.endswith(f"/global/httpHealthChecks/{check_name}") for ref in refs)


def _lbhc_may(entry: GceEntry, check_name: str, service_pools: set[str]) -> bool:
    path, body = entry.path, entry.body or {}
    for collection in ("httpHealthChecks", "firewalls"):
        if path.endswith(f"/global/{collection}/{check_name}") and entry.method != "POST":
            return True
        if path.endswith(f"/global/{collection}") and entry.method == "POST":
            return body.get("name") == check_name
    call = _POOL_CALL.search(path)
    if call is None or call.group(1) not in service_pools:
        return False
    refs = [str(ref.get("healthCheck", "")) for ref in body.get("healthChecks") or []]
    return bool(refs) and all(
        ref.endswith(f"/global/httpHealthChecks/{check_name}") for ref in refs
    )


def wrong_kube_writes(entries: Iterable[KubeEntry]) -> list[str]:
    """Writes that came over HTTP (only lbhc writes that way: the sandbox's actors call the
    fake in process, with no User-Agent) to anything but lbhc's Lease and Events."""
    return [
        f"{entry.user_agent}: {entry.method} {entry.path}"
        for entry in entries
        if entry.method in _KUBE_WRITE_METHODS
        and entry.user_agent
        and not any(allowed.match(entry.path) for allowed in _KUBE_WRITES_ALLOWED)
    ]
