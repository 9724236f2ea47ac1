"""Regional target pools, including add/removeHealthCheck, getHealth and aggregatedList
(add/removeInstance are in target_pool_members).

Choices where the real API is not documented precisely:
- addHealthCheck of the check already on the pool is accepted and ends DONE with no change.
- removeHealthCheck of a check not on the pool is accepted and ends DONE with no change.
- Instances are not checked for existence: pools are seeded with instance URLs whether or not
  the instances were seeded (add_instance), as the sandbox seeds them without.
- getHealth of an instance that is not in the pool answers 400 `invalid` on
  `resource.instance`, "Instance is not in the target pool.". Nothing public that we found
  shows the real answer for getHealth: the API reference ("Method: targetPools.getHealth")
  only names the pool as the one "to which the queried instance belongs". The nearest
  documented sibling is targetPools.removeInstance of a non-member, which real GCE answers 400
  `invalid` "Invalid value for field 'resource.instance': '<url>'. Instance is not currently
  attached to this target pool." (seen in cloudfoundry/bosh-google-cpi-release#318; the fake's
  removeInstance answers that); the status and reason follow it, the message is unverified.
- getHealth lists one healthStatus per forwarding rule pointing at the pool (its IP and first
  port), each with the state the health source keeps for that IP (probes go to each rule's
  IP, so health is per IP); a pool no rule points at gets one entry without an IP.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import operations, urls
from ..errors import invalid, invalid_value, not_found
from ..store import Store
from ..validation import (
    check_known_fields,
    check_name,
    opt_str,
    reference_list,
    required_ref,
    str_list,
)
from . import aggregated, common, forwarding_rules, health_checks
from .common import Kind, Request, Response

KIND = Kind(
    collection="targetPools",
    kind="compute#targetPool",
    label="target_pool",
    fields=frozenset(
        {
            "backupPool",
            "creationTimestamp",
            "description",
            "failoverRatio",
            "healthChecks",
            "id",
            "instances",
            "kind",
            "name",
            "region",
            "securityPolicy",
            "selfLink",
            "sessionAffinity",
        }
    ),
)

_AFFINITIES = frozenset({"NONE", "CLIENT_IP", "CLIENT_IP_PROTO"})
_ONE_CHECK = "A target pool can have at most one health check."


def resolve_check(store: Store, project: str, ref: str, field: str) -> str:
    """Canonical URL of an existing legacy httpHealthCheck; others are 400, missing is 404."""
    parsed = urls.parse_ref(ref, project)
    if parsed is None:
        raise invalid_value(field, ref, "Must be a URL to a global httpHealthChecks resource.")
    if parsed.scope != "global" or parsed.collection != health_checks.KIND.collection:
        raise invalid_value(
            field, ref, "Target pools accept only legacy HTTP health checks (httpHealthChecks)."
        )
    if store.get(parsed.collection, parsed.project, "global", parsed.name) is None:
        raise not_found(parsed.path)
    return parsed.url


def resolve_instance(project: str, ref: str, field: str) -> str:
    parsed = urls.parse_ref(ref, project)
    if parsed is None or not parsed.scope.startswith("zones/") or parsed.collection != "instances":
        raise invalid_value(field, ref, "Must be a URL to a zonal instance.")
    return parsed.url


def build(req: Request, body: dict[str, Any]) -> dict[str, Any]:
    check_known_fields(body, KIND.fields, "resource")
    out: dict[str, Any] = {}
    description = opt_str(body, "description", "resource.description")
    if description:
        out["description"] = description
    checks = str_list(body, "healthChecks", "resource.healthChecks")
    if len(checks) > 1:
        raise invalid_value("resource.healthChecks", checks, _ONE_CHECK)
    if checks:
        out["healthChecks"] = [
            resolve_check(req.store, req.project, checks[0], "resource.healthChecks[0]")
        ]
    instances = str_list(body, "instances", "resource.instances")
    if instances:
        out["instances"] = [
            resolve_instance(req.project, ref, f"resource.instances[{i}]")
            for i, ref in enumerate(instances)
        ]
    affinity = opt_str(body, "sessionAffinity", "resource.sessionAffinity") or "NONE"
    if affinity not in _AFFINITIES:
        raise invalid_value("resource.sessionAffinity", affinity, "Unsupported session affinity.")
    out["sessionAffinity"] = affinity
    for key in ("backupPool", "securityPolicy"):
        text = opt_str(body, key, f"resource.{key}")
        if text:
            out[key] = text
    if body.get("failoverRatio") is not None:
        out["failoverRatio"] = float(body["failoverRatio"])
    return out


def seed(
    store: Store,
    project: str,
    region: str,
    name: str,
    *,
    description: str,
    instances: tuple[str, ...] | list[str],
    health_checks_: tuple[str, ...] | list[str],
) -> dict[str, Any]:
    """A pool as a cloud controller would have created it; check refs may be bare names."""

    def check_url(ref: str) -> str:
        parsed = urls.parse_ref(ref if "/" in ref else f"global/httpHealthChecks/{ref}", project)
        if parsed is None:
            raise ValueError(f"not a health check reference: {ref!r}")
        return parsed.url

    fields: dict[str, Any] = {"sessionAffinity": "NONE"}
    if description:
        fields["description"] = description
    if health_checks_:
        fields["healthChecks"] = [check_url(ref) for ref in health_checks_]
    if instances:
        fields["instances"] = [resolve_instance(project, ref, "instances") for ref in instances]
    scope = urls.scope_of(region)
    if store.taken(KIND.collection, project, scope, name):
        raise ValueError(f"target pool {project}/{region}/{name} already exists")
    pool = common.new_resource(store, KIND, project, scope, name, fields)
    store.bucket(KIND.collection, project, scope)[name] = pool
    return pool


def _pool_name(req: Request) -> str:
    return req.params["targetPool"]


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, _pool_name(req))


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    name = check_name(req.json.get("name"))
    return common.insert(req, KIND, name, build(req, req.json))


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, _pool_name(req), forwarding_rules.rule_using)


def handle_add_health_check(req: Request) -> Response:
    store, project, scope, name = req.store, req.project, req.scope, _pool_name(req)
    pool = common.require(store, KIND, project, scope, name)
    refs = reference_list(req.json, "healthChecks", "healthCheck")
    if len(refs) > 1:
        raise invalid_value("resource.healthChecks", len(refs), _ONE_CHECK)
    [(field, ref)] = refs
    url = resolve_check(store, project, ref, field)
    current = pool.get("healthChecks", [])
    if current and url not in current:
        raise invalid_value(field, ref, _ONE_CHECK)

    def apply() -> None:
        live = common.require(store, KIND, project, scope, name)
        attached = live.get("healthChecks", [])
        if url in attached:
            return  # already attached: DONE without change
        if attached:
            raise invalid(_ONE_CHECK)
        resolve_check(store, project, url, field)  # deleted meanwhile: 404
        live["healthChecks"] = [url]

    return common.submit(req, "addHealthCheck", pool["selfLink"], pool["id"], apply)


def handle_remove_health_check(req: Request) -> Response:
    store, project, scope, name = req.store, req.project, req.scope, _pool_name(req)
    pool = common.require(store, KIND, project, scope, name)
    removed: set[str] = set()
    for field, ref in reference_list(req.json, "healthChecks", "healthCheck"):
        parsed = urls.parse_ref(ref, project)
        if parsed is None:
            raise invalid_value(field, ref, "Must be a health check URL.")
        removed.add(parsed.url)

    def apply() -> None:
        live = common.require(store, KIND, project, scope, name)
        kept = [u for u in live.get("healthChecks", []) if u not in removed]
        if kept:
            live["healthChecks"] = kept
        else:
            live.pop("healthChecks", None)  # the real API omits empty repeated fields

    return common.submit(req, "removeHealthCheck", pool["selfLink"], pool["id"], apply)


def handle_get_health(req: Request) -> Response:
    """Runs without the store lock held so a pluggable health source may be slow."""
    store = req.store
    with store.lock:
        operations.advance(store)
        pool = copy.deepcopy(common.require(store, KIND, req.project, req.scope, _pool_name(req)))
        ref = required_ref(req.json, "instance")
        instance = resolve_instance(req.project, ref, "resource.instance")
        if instance not in pool.get("instances", []):
            raise invalid_value("resource.instance", ref, "Instance is not in the target pool.")
        rules = copy.deepcopy(
            forwarding_rules.pointing_at(store, req.project, req.scope, pool["selfLink"])
        )
        fallback = store.instance_health.get(instance)
        source = store.health_source
    statuses: list[dict[str, Any]] = []
    targets: list[dict[str, Any] | None] = list(rules) or [None]
    for rule in targets:
        ip = None if rule is None else str(rule["IPAddress"])
        state: str | None = None
        if not pool.get("healthChecks"):
            state = "HEALTHY"  # a pool without a check treats every instance as healthy
        elif source is not None:
            state = source(pool, instance, ip)  # probes go to each IP: health is per IP
        status: dict[str, Any] = {"healthState": state or fallback or "HEALTHY"}
        status["instance"] = instance
        if rule is not None:
            status["ipAddress"] = rule["IPAddress"]
            if rule.get("portRange"):
                status["port"] = int(str(rule["portRange"]).split("-")[0])
        statuses.append(status)
    return 200, {"kind": "compute#targetPoolInstanceHealth", "healthStatus": statuses}


def handle_aggregated_list(req: Request) -> Response:
    reported = aggregated.scopes(req, regions=True)
    return aggregated.handle(req, KIND.collection, "compute#targetPoolAggregatedList", reported)
