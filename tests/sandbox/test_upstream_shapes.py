"""The upstream pieces the current profile is built from, table by table: names, how an
existing check is merged (raise-only), which controller a Service belongs to, and the Compute
fake's backend-service forwarding rules (RBS) against the discovery document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lbhc.sandbox.compute_fake import ComputeError, ComputeFake, ComputeFakeServer
from lbhc.sandbox.upstream import names, shapes
from lbhc.sandbox.upstream.compute import ComputeWriter
from lbhc.sandbox.upstream.netlb import ExternalLoadBalancers, Project
from lbhc.sandbox.upstream.services import Handler, ServiceView, handler
from tests.sandbox.compute_fake.test_conformance import assert_conforms

P, R = "proj", "us-central1"
UID = "0123456789abcdef"
NODES = f"k8s-{UID}-node"
SVC_UID = "1234-aaaa-bbbb-cccc-1234567890abcdef"
FW_DESCRIPTION = '{"kubernetes.io/service-name":"n/s", "kubernetes.io/service-ip":"1.2.3.4"}'
HOST = f"https://www.googleapis.com/compute/v1/projects/{P}/zones/{R}-a/instances/n1"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (names.nodes_health_check_name(UID), NODES),
        (names.health_check_firewall_name(UID, NODES, True), f"{NODES}-http-hc"),
        (names.health_check_firewall_name(UID, "a1b2", False), "k8s-a1b2-http-hc"),
        (names.firewall_name("a1b2"), "k8s-fw-a1b2"),
        (names.load_balancer_name(SVC_UID), "a1234aaaabbbbcccc1234567890abcde"),
        (names.firewall_description("n/s", "1.2.3.4"), FW_DESCRIPTION),
        (names.cluster_firewall_description(UID), f'{{"kubernetes.io/cluster-id":"{UID}"}}'),
    ],
)
def test_names(name: str, expected: str) -> None:
    assert name == expected


@pytest.mark.parametrize(
    ("ports", "ranges"),
    [([80], ["80"]), ([443, 80, 81, 82], ["80-82", "443"]), ([80, 80, 8080], ["80", "8080"])],
)
def test_port_ranges(ports: list[int], ranges: list[str]) -> None:
    assert shapes.port_ranges(ports) == ranges


WANTED = shapes.http_health_check(NODES, "/healthz", 10256)


@pytest.mark.parametrize(
    ("current", "update", "merged"),
    [
        ({}, False, {}),  # as wanted
        ({"checkIntervalSec": 2, "unhealthyThreshold": 2}, True, {}),  # raised to the defaults
        ({"checkIntervalSec": 30, "timeoutSec": 5}, False, None),  # higher: someone's choice
        ({"checkIntervalSec": 30, "healthyThreshold": 0}, True, {"checkIntervalSec": 30}),
        ({"description": "mine"}, True, {}),
        ({"port": 10257}, True, {}),
    ],
)
def test_an_existing_check_is_merged_raise_only(
    current: dict[str, Any], update: bool, merged: dict[str, Any] | None
) -> None:
    existing = {**WANTED, **current}
    assert shapes.health_check_needs_update(existing, WANTED) is update
    if merged is not None:
        assert shapes.merged_health_check(existing, WANTED) == {**WANTED, **merged}


RBS_ON = {names.RBS_ANNOTATION: "enabled"}


def annotated(key: str, value: str) -> ServiceView:
    return service(metadata={"annotations": {key: value}})


def service(**overrides: Any) -> ServiceView:
    meta = {"name": "s", "namespace": "ns", "uid": "u-1", **overrides.pop("metadata", {})}
    spec = {"type": "LoadBalancer", "ports": [{"port": 80}], **overrides}
    return ServiceView.of({"metadata": meta, "spec": spec})


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        (service(), Handler.TARGET_POOL),
        (service(loadBalancerClass=names.LEGACY_EXTERNAL_CLASS), Handler.TARGET_POOL),
        (service(loadBalancerClass=names.RBS_CLASS), Handler.RBS),
        (service(loadBalancerClass="example.com/lb"), Handler.ELSEWHERE),
        (service(loadBalancerClass=names.LEGACY_INTERNAL_CLASS), Handler.INTERNAL),
        (annotated(names.RBS_ANNOTATION, "enabled"), Handler.RBS),
        (annotated(names.RBS_ANNOTATION, "no"), Handler.TARGET_POOL),
        (service(metadata={"finalizers": [names.NETLB_FINALIZER_V2]}), Handler.RBS),
        # The cloud provider's own finalizer keeps the Service its own (shouldProcessNetLB).
        (
            service(metadata={"annotations": RBS_ON, "finalizers": [names.NETLB_FINALIZER_V1]}),
            Handler.TARGET_POOL,
        ),
        (annotated("networking.gke.io/load-balancer-type", "Internal"), Handler.INTERNAL),
        (annotated("cloud.google.com/load-balancer-type", "internal"), Handler.INTERNAL),
    ],
)
def test_who_handles_a_service(svc: ServiceView, expected: Handler) -> None:
    assert handler(svc) is expected


@pytest.mark.parametrize(
    ("policy", "port", "expected"),
    [("Local", 32000, ("/healthz", 32000)), ("Local", 0, ("", 0)), ("Cluster", 32000, ("", 0))],
)
def test_health_check_path_port(policy: str, port: int, expected: tuple[str, int]) -> None:
    svc = service(externalTrafficPolicy=policy, healthCheckNodePort=port)
    assert svc.health_check_path_port() == expected


# -- ensure against a Compute fake, synchronously ------------------------------------------------


@pytest.fixture
def lbs() -> Iterator[tuple[ComputeFake, ExternalLoadBalancers]]:
    fake = ComputeFake()
    fake.add_network(P, "default")
    with ComputeFakeServer(fake) as server:
        writer = ComputeWriter(server.url, P, R)
        yield fake, ExternalLoadBalancers(fake, writer, Project(P, R, UID, "ks-uid", ("tag",)))
        writer.close()


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        ({"checkIntervalSec": 5, "timeoutSec": 1}, {"checkIntervalSec": 8, "timeoutSec": 1}),
        ({"checkIntervalSec": 20, "timeoutSec": 10}, {"checkIntervalSec": 20, "timeoutSec": 10}),
    ],
)
def test_ensure_merges_an_existing_nodes_check_raise_only(
    lbs: tuple[ComputeFake, ExternalLoadBalancers],
    existing: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    fake, external = lbs
    fields = {k: v for k, v in WANTED.items() if k != "name"}
    fake.add_http_health_check(P, NODES, **{**fields, **existing})
    ip = external.ensure(service(), [HOST])
    check = fake.http_health_checks(P)[NODES]
    assert {k: check[k] for k in expected} == expected
    assert fake.target_pools(P, R)["au1"]["healthChecks"] == [check["selfLink"]]
    assert fake.forwarding_rules(P, R)["au1"]["IPAddress"] == ip == "203.0.113.10"
    updates = [e.method for e in fake.mutating_requests() if "httpHealthChecks" in e.path]
    assert updates == (["PUT"] if existing["checkIntervalSec"] < 8 else [])


def test_ensure_never_backfills_an_existing_pool(
    lbs: tuple[ComputeFake, ExternalLoadBalancers],
) -> None:
    fake, external = lbs
    pool = fake.add_target_pool(P, R, "au1", instances=[HOST])
    fake.add_forwarding_rule(P, R, "au1", target=pool["selfLink"], ip_address="203.0.113.50")
    assert external.ensure(service(), [HOST]) == "203.0.113.50"
    assert "healthChecks" not in fake.target_pools(P, R)["au1"]
    # ... yet it ensures the nodes check and its firewall (the tpExists branch).
    assert NODES in fake.http_health_checks(P)
    assert fake.firewalls(P)[f"{NODES}-http-hc"]["destinationRanges"] == ["203.0.113.50"]
    assert not any("targetPools" in e.path or "forwardingRules" in e.path for e in fake.journal)


@pytest.mark.parametrize("mode", ["http", "operation"])
def test_a_check_in_use_is_kept_with_its_firewall_either_way_the_refusal_comes(
    lbs: tuple[ComputeFake, ExternalLoadBalancers], mode: str
) -> None:
    fake, external = lbs
    first, second = service(), service(metadata={"uid": "u-2", "name": "t"})
    external.ensure(first, [HOST])
    external.ensure(second, [HOST])
    fake.in_use_delete_mode = mode
    external.ensure_deleted(first)
    assert NODES in fake.http_health_checks(P)  # the second pool still carries it
    assert f"{NODES}-http-hc" in fake.firewalls(P)
    external.ensure_deleted(second)
    assert NODES not in fake.http_health_checks(P)
    assert f"{NODES}-http-hc" not in fake.firewalls(P)
    assert external.deleted_pools == ["au1", "au2"]
    external.ensure_deleted(second)  # again: everything already gone is fine
    assert external.deleted_pools == ["au1", "au2"] and fake.firewalls(P) == {}


def test_ensure_fails_without_hosts(lbs: tuple[ComputeFake, ExternalLoadBalancers]) -> None:
    with pytest.raises(RuntimeError, match="no hosts"):
        lbs[1].ensure(service(), [])


# -- backend-service forwarding rules in the Compute fake ---------------------------------------

BACKEND = f"projects/{P}/regions/{R}/backendServices/k8s2-x"
RULES = f"projects/{P}/regions/{R}/forwardingRules"
POOL = f"projects/{P}/regions/{R}/targetPools/p"


def call(fake: ComputeFake, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    raw = json.dumps(body).encode() if body is not None else b""
    status, _, payload = fake.handle(method, f"/compute/v1/{path}", {}, {}, raw)
    return status, json.loads(payload)


def test_a_backend_service_rule_conforms_to_the_discovery_document() -> None:
    fake = ComputeFake()
    body = {"name": "k8s2-tcp-x", "backendService": BACKEND, "IPAddress": "203.0.113.9"}
    assert call(fake, "POST", RULES, body)[0] == 200
    status, rule = call(fake, "GET", f"{RULES}/k8s2-tcp-x")
    assert status == 200 and "target" not in rule
    assert rule["backendService"] == f"https://www.googleapis.com/compute/v1/{BACKEND}"
    assert_conforms(rule, "ForwardingRule")
    seeded = fake.add_forwarding_rule(P, R, "seeded", backend_service=BACKEND)
    assert_conforms(seeded, "ForwardingRule")


@pytest.mark.parametrize(
    ("body", "reason", "message"),
    [
        ({}, "required", "resource.target"),
        ({"backendService": BACKEND, "target": POOL}, "invalid", "Exactly one"),
        ({"backendService": BACKEND.replace(R, "europe-west1")}, "invalid", "same region"),
        ({"backendService": f"projects/{P}/global/backendServices/b"}, "invalid", "same region"),
        ({"backendService": POOL}, "invalid", "backend service URL"),
    ],
)
def test_a_rule_needs_exactly_one_backend(body: dict[str, Any], reason: str, message: str) -> None:
    status, error = call(ComputeFake(), "POST", RULES, {"name": "r", **body})
    assert status == 400
    assert error["error"]["errors"][0]["reason"] == reason
    assert message in error["error"]["message"]


def test_seeding_a_rule_needs_exactly_one_backend() -> None:
    with pytest.raises(ComputeError, match="Exactly one"):
        ComputeFake().add_forwarding_rule(P, R, "r")
