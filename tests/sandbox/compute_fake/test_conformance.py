"""The fake against the compute v1 discovery document: routes, field names, types and enums."""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from lbhc.sandbox.compute_fake import COMPUTE_ROUTES, ComputeFake
from lbhc.sandbox.compute_fake.resources import (
    firewalls,
    forwarding_rules,
    health_checks,
    instances,
    target_pools,
)

PROJECT = "proj"
REGION = "us-central1"
N1 = "https://www.googleapis.com/compute/v1/projects/proj/zones/us-central1-a/instances/n1"

CRUD = ("get", "list", "insert", "update", "patch", "delete")
REQUIRED_METHODS = (
    {("httpHealthChecks", m) for m in ("get", "list", "insert", "update", "patch", "delete")}
    | {("firewalls", m) for m in ("get", "list", "insert", "update", "patch", "delete")}
    | {
        ("networks", "get"),
        ("networks", "list"),
        ("networks", "getEffectiveFirewalls"),
        ("forwardingRules", "get"),
        ("forwardingRules", "list"),
        ("forwardingRules", "insert"),
        ("forwardingRules", "delete"),
        ("forwardingRules", "aggregatedList"),
        ("globalOperations", "get"),
        ("globalOperations", "wait"),
        ("regionOperations", "get"),
        ("regionOperations", "wait"),
        ("instances", "get"),
        ("instances", "setMetadata"),
        ("zoneOperations", "get"),
        ("zoneOperations", "wait"),
    }
    | {("healthChecks", m) for m in (*CRUD, "aggregatedList")}
    | {("regionBackendServices", m) for m in (*CRUD, "getHealth")}
    | {("backendServices", "aggregatedList")}
    | {("regionHealthChecks", m) for m in CRUD}
    | {
        ("instanceGroups", m)
        for m in (
            "get",
            "list",
            "insert",
            "delete",
            "listInstances",
            "addInstances",
            "removeInstances",
            "aggregatedList",
        )
    }
    | {
        ("networkEndpointGroups", m)
        for m in (
            "get",
            "list",
            "insert",
            "delete",
            "listNetworkEndpoints",
            "attachNetworkEndpoints",
            "detachNetworkEndpoints",
            "aggregatedList",
        )
    }
    | {
        ("targetPools", m)
        for m in (
            "get",
            "list",
            "insert",
            "delete",
            "addHealthCheck",
            "removeHealthCheck",
            "addInstance",
            "removeInstance",
            "getHealth",
            "aggregatedList",
        )
    }
)


@cache
def discovery() -> dict[str, Any]:
    spec = importlib.util.find_spec("googleapiclient")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    doc: dict[str, Any] = json.loads(
        (root / "discovery_cache" / "documents" / "compute.v1.json").read_text()
    )
    return doc


def schema_problems(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    """Every way `value` departs from the discovery `schema` (names, types, enums), recursively."""
    schemas = discovery()["schemas"]
    if "$ref" in schema:
        schema = schemas[schema["$ref"]]
    kind = schema.get("type")
    problems: list[str] = []
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        if not isinstance(value, dict):
            return [f"{where}: expected object, got {value!r}"]
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                problems += schema_problems(item, props[key], f"{where}.{key}")
            elif extra is not None:
                problems += schema_problems(item, extra, f"{where}[{key!r}]")
            else:
                problems.append(f"{where}.{key}: not a property of the schema")
    elif kind == "array":
        if not isinstance(value, list):
            return [f"{where}: expected array, got {value!r}"]
        for i, item in enumerate(value):
            problems += schema_problems(item, schema["items"], f"{where}[{i}]")
    elif kind == "string":
        if not isinstance(value, str):
            problems.append(f"{where}: expected string, got {value!r}")
        elif schema.get("format") in ("int64", "uint64") and not value.isdigit():
            problems.append(f"{where}: expected a decimal string, got {value!r}")
        elif "enum" in schema and value not in schema["enum"]:
            problems.append(f"{where}: {value!r} not in enum")
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"{where}: expected integer, got {value!r}")
    elif kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool):
            problems.append(f"{where}: expected number, got {value!r}")
    elif kind == "boolean" and not isinstance(value, bool):
        problems.append(f"{where}: expected boolean, got {value!r}")
    return problems


def assert_conforms(value: Any, schema_name: str) -> None:
    problems = schema_problems(value, {"$ref": schema_name}, schema_name)
    assert not problems, "\n".join(problems)


# -- routes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", COMPUTE_ROUTES, ids=lambda r: f"{r.resource}.{r.method}")
def test_route_matches_discovery(route: Any) -> None:
    method = discovery()["resources"][route.resource]["methods"].get(route.method)
    assert method is not None, f"{route.resource}.{route.method} is not in the discovery doc"
    assert route.http_method == method["httpMethod"]
    assert route.template in (method.get("flatPath"), method["path"])
    path_params = {n for n, p in method["parameters"].items() if p["location"] == "path"}
    assert set(route.match(route.template.replace("{", "").replace("}", "")) or {}) == path_params


def test_every_required_method_is_routed() -> None:
    assert {(r.resource, r.method) for r in COMPUTE_ROUTES} == REQUIRED_METHODS


def test_discovery_base_path_is_what_the_fake_serves() -> None:
    assert discovery()["servicePath"] == "compute/v1/"


@pytest.mark.parametrize(
    ("kind", "schema"),
    [
        (health_checks.KIND, "HttpHealthCheck"),
        (firewalls.KIND, "Firewall"),
        (target_pools.KIND, "TargetPool"),
        (forwarding_rules.KIND, "ForwardingRule"),
    ],
)
def test_accepted_body_fields_are_schema_properties(kind: Any, schema: str) -> None:
    props = set(discovery()["schemas"][schema]["properties"])
    assert kind.fields <= props
    assert discovery()["schemas"][schema]["properties"]["kind"]["default"] == kind.kind


def test_set_metadata_body_fields_are_metadata_properties() -> None:
    schemas = discovery()["schemas"]
    metadata = schemas["Metadata"]["properties"]
    assert set(metadata) >= instances.METADATA_FIELDS
    assert set(metadata["items"]["items"]["properties"]) >= instances.ITEM_FIELDS
    assert metadata["items"]["items"]["properties"]["key"]["pattern"] == instances.KEY_PATTERN
    assert metadata["kind"]["default"] == instances.METADATA_KIND
    assert schemas["Instance"]["properties"]["kind"]["default"] == instances.KIND.kind
    method = discovery()["resources"]["instances"]["methods"]["setMetadata"]
    assert method["request"] == {"$ref": "Metadata"}
    assert "requestId" in method["parameters"]


# -- emitted JSON ------------------------------------------------------------------------------


def _call(fake: ComputeFake, method: str, path: str, body: Any = None, **query: str) -> Any:
    raw = json.dumps(body).encode() if body is not None else b""
    status, headers, payload = fake.handle(method, f"/compute/v1/{path}", query, {}, raw)
    assert headers["Content-Type"].startswith("application/json")
    return status, json.loads(payload)


@pytest.fixture
def populated(clock: Any) -> tuple[ComputeFake, Any]:
    fake = ComputeFake(clock=clock)
    fake.add_network(PROJECT, "default")
    p, r = PROJECT, REGION
    hc = {"name": "hc", "host": "h", "description": "d", "port": 10256, "requestPath": "/healthz"}
    assert _call(fake, "POST", f"projects/{p}/global/httpHealthChecks", hc)[0] == 200
    assert _call(fake, "POST", f"projects/{p}/global/httpHealthChecks", {"name": "hc2"})[0] == 200
    ingress = {
        "name": "fw-in",
        "description": "d",
        "allowed": [{"IPProtocol": "tcp", "ports": ["10256", "1000-2000"]}],
        "sourceRanges": ["35.191.0.0/16"],
        "targetTags": ["node"],
    }
    egress = {"name": "fw-out", "direction": "EGRESS", "denied": [{"IPProtocol": "all"}]}
    for body in (ingress, egress):
        assert _call(fake, "POST", f"projects/{p}/global/firewalls", body)[0] == 200
    fake.add_target_pool(p, r, "pool", description="x", instances=[N1], health_checks=["hc"])
    fake.add_target_pool(p, "europe-west1", "pool-eu")
    pool = f"projects/{p}/regions/{r}/targetPools/pool"
    rule = {"name": "fr", "target": pool, "portRange": "80", "IPAddress": "10.1.2.3"}
    assert _call(fake, "POST", f"projects/{p}/regions/{r}/forwardingRules", rule)[0] == 200
    fake.add_instance(
        p,
        "us-central1-a",
        "n1",
        network_ip="10.128.0.9",
        metadata={"k": "v"},
        tags=["node"],
        service_accounts=["nodes@proj.iam.gserviceaccount.com"],
    )
    rule_ = {
        "priority": 10,
        "action": "goto_next",
        "direction": "INGRESS",
        "match": {"srcIpRanges": ["35.191.0.0/16"], "layer4Configs": [{"ipProtocol": "all"}]},
    }
    org = {"name": "1", "shortName": "org", "type": "HIERARCHY", "priority": 0, "rules": [rule_]}
    fake.add_firewall_policy(p, "default", org)
    return fake, clock


def test_resources_and_lists_conform(populated: tuple[ComputeFake, Any]) -> None:
    fake, _ = populated
    p, r = PROJECT, REGION
    samples = [
        (f"projects/{p}/global/httpHealthChecks/hc", "HttpHealthCheck"),
        (f"projects/{p}/global/httpHealthChecks", "HttpHealthCheckList"),
        (f"projects/{p}/global/firewalls/fw-in", "Firewall"),
        (f"projects/{p}/global/firewalls/fw-out", "Firewall"),
        (f"projects/{p}/global/firewalls", "FirewallList"),
        (f"projects/{p}/global/networks/default", "Network"),
        (f"projects/{p}/global/networks", "NetworkList"),
        (
            f"projects/{p}/global/networks/default/getEffectiveFirewalls",
            "NetworksGetEffectiveFirewallsResponse",
        ),
        (f"projects/{p}/regions/{r}/targetPools/pool", "TargetPool"),
        (f"projects/{p}/regions/{r}/targetPools", "TargetPoolList"),
        (f"projects/{p}/aggregated/targetPools", "TargetPoolAggregatedList"),
        (f"projects/{p}/regions/{r}/forwardingRules/fr", "ForwardingRule"),
        (f"projects/{p}/regions/{r}/forwardingRules", "ForwardingRuleList"),
        (f"projects/{p}/zones/us-central1-a/instances/n1", "Instance"),
    ]
    for path, schema in samples:
        status, body = _call(fake, "GET", path)
        assert status == 200, body
        assert_conforms(body, schema)
    # A paged list carries nextPageToken; the aggregated list carries per-scope warnings.
    status, paged = _call(fake, "GET", f"projects/{p}/global/firewalls", maxResults="1")
    assert "nextPageToken" in paged
    assert_conforms(paged, "FirewallList")
    _, aggregated = _call(fake, "GET", f"projects/{p}/aggregated/targetPools")
    assert aggregated["items"]["regions/us-east1"]["warning"]["code"] == "NO_RESULTS_ON_PAGE"
    assert aggregated["items"][f"regions/{r}"]["targetPools"][0]["name"] == "pool"


def test_operations_and_health_conform(populated: tuple[ComputeFake, Any]) -> None:
    fake, clock = populated
    p, r = PROJECT, REGION
    pool = f"projects/{p}/regions/{r}/targetPools/pool"
    fake.operation_latency = 10.0
    _, pending = _call(fake, "DELETE", f"projects/{p}/global/firewalls/fw-out")
    assert pending["status"] == "PENDING"
    assert_conforms(pending, "Operation")
    clock.advance(6)
    _, running = _call(fake, "GET", f"projects/{p}/global/operations/{pending['name']}")
    assert running["status"] == "RUNNING"
    assert_conforms(running, "Operation")
    fake.faults.fail_operations(times=1, operation_type="removeHealthCheck")
    remove = {"healthChecks": [{"healthCheck": "global/httpHealthChecks/hc"}]}
    _, regional = _call(fake, "POST", f"{pool}/removeHealthCheck", remove)
    clock.advance(10)
    _, failed = _call(fake, "POST", f"projects/{p}/regions/{r}/operations/{regional['name']}/wait")
    assert failed["status"] == "DONE" and failed["error"]["errors"]
    assert_conforms(failed, "Operation")
    _, health = _call(fake, "POST", f"{pool}/getHealth", {"instance": N1})
    assert health["healthStatus"][0]["ipAddress"] == "10.1.2.3"
    assert health["healthStatus"][0]["port"] == 80
    assert_conforms(health, "TargetPoolInstanceHealth")


def test_zone_operations_conform(populated: tuple[ComputeFake, Any]) -> None:
    fake, clock = populated
    zone = f"projects/{PROJECT}/zones/us-central1-a"
    fake.operation_latency = 10.0
    _, instance = _call(fake, "GET", f"{zone}/instances/n1")
    body = {"fingerprint": instance["metadata"]["fingerprint"], "items": [{"key": "a"}]}
    _, pending = _call(fake, "POST", f"{zone}/instances/n1/setMetadata", body)
    assert pending["status"] == "PENDING" and pending["zone"].endswith(zone)
    assert_conforms(pending, "Operation")
    clock.advance(6)
    _, running = _call(fake, "GET", f"{zone}/operations/{pending['name']}")
    assert running["status"] == "RUNNING"
    assert_conforms(running, "Operation")
    # Same fingerprint again: accepted now, fails at DONE since the first one lands first.
    _, second = _call(fake, "POST", f"{zone}/instances/n1/setMetadata", body)
    clock.advance(10)
    _, done = _call(fake, "POST", f"{zone}/operations/{pending['name']}/wait")
    _, failed = _call(fake, "POST", f"{zone}/operations/{second['name']}/wait")
    assert done["status"] == failed["status"] == "DONE"
    assert failed["httpErrorStatusCode"] == 412
    for op in (done, failed):
        assert_conforms(op, "Operation")
    _, changed = _call(fake, "GET", f"{zone}/instances/n1")
    assert changed["metadata"]["items"] == [{"key": "a"}]
    assert_conforms(changed, "Instance")
    status, stale = _call(fake, "POST", f"{zone}/instances/n1/setMetadata", body)
    assert status == 412 and stale["error"]["errors"][0]["reason"] == "conditionNotMet"


@pytest.mark.parametrize(
    ("value", "schema", "expected"),
    [
        ({"name": "x", "requestPth": "/"}, "HttpHealthCheck", "requestPth: not a property"),
        ({"port": "80"}, "HttpHealthCheck", "expected integer"),
        ({"id": "abc"}, "HttpHealthCheck", "expected a decimal string"),
        ({"direction": "SIDEWAYS"}, "Firewall", "not in enum"),
        ({"logConfig": {"enabled": False}}, "Firewall", "logConfig.enabled: not a property"),
        ({"items": {"regions/x": {"pools": []}}}, "TargetPoolAggregatedList", "pools"),
        ({"error": {"errors": [{"reason": "x"}]}}, "Operation", "reason: not a property"),
    ],
)
def test_the_schema_check_can_fail(value: Any, schema: str, expected: str) -> None:
    problems = schema_problems(value, {"$ref": schema}, schema)
    assert any(expected in problem for problem in problems), problems
