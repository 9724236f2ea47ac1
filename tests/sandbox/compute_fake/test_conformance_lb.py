"""Backend-service load balancers' resources against the compute v1 discovery document: the
fields the fake accepts, and the JSON it emits for each resource, list and aggregated list."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.compute_fake.resources import (
    backend_health,
    backend_services,
    forwarding_rules,
    instance_groups,
    lb_health_checks,
    network_endpoint_groups,
    network_endpoints,
)
from tests.sandbox.compute_fake.test_conformance import assert_conforms, discovery

P = "proj"
R = "us-central1"
Z = "us-central1-a"
CANONICAL = "https://www.googleapis.com/compute/v1/"
N1 = f"https://www.googleapis.com/compute/v1/projects/{P}/zones/{Z}/instances/n1"
N2 = f"https://www.googleapis.com/compute/v1/projects/{P}/zones/{Z}/instances/n2"


@pytest.mark.parametrize(
    ("kind", "schema"),
    [
        (backend_services.KIND, "BackendService"),
        (lb_health_checks.KIND, "HealthCheck"),
        (instance_groups.KIND, "InstanceGroup"),
        (network_endpoint_groups.KIND, "NetworkEndpointGroup"),
    ],
)
def test_accepted_body_fields_are_schema_properties(kind: Any, schema: str) -> None:
    props = discovery()["schemas"][schema]["properties"]
    assert kind.fields <= set(props)
    assert props["kind"]["default"] == kind.kind


@pytest.mark.parametrize("kind", sorted(lb_health_checks.PROTOCOLS))
def test_each_check_type_has_its_protocol_schema(kind: str) -> None:
    check = discovery()["schemas"]["HealthCheck"]["properties"]
    assert kind in check["type"]["enum"]
    protocol = lb_health_checks.PROTOCOLS[kind]
    schema = discovery()["schemas"][check[protocol.field]["$ref"]]
    assert protocol.fields == set(schema["properties"])


@pytest.mark.parametrize(
    ("kind", "schema"),
    [
        (lb_health_checks.AGGREGATED_KIND, "HealthChecksAggregatedList"),
        (instance_groups.AGGREGATED_KIND, "InstanceGroupAggregatedList"),
        (instance_groups.LIST_INSTANCES_KIND, "InstanceGroupsListInstances"),
        (network_endpoint_groups.AGGREGATED_KIND, "NetworkEndpointGroupAggregatedList"),
        (network_endpoints.LIST_KIND, "NetworkEndpointGroupsListNetworkEndpoints"),
        (backend_services.AGGREGATED_KIND, "BackendServiceAggregatedList"),
        (backend_health.HEALTH_KIND, "BackendServiceGroupHealth"),
        (forwarding_rules.AGGREGATED_KIND, "ForwardingRuleAggregatedList"),
    ],
)
def test_response_kinds_are_the_discovery_defaults(kind: str, schema: str) -> None:
    assert discovery()["schemas"][schema]["properties"]["kind"]["default"] == kind


def test_endpoint_fields_are_the_network_endpoint_schema() -> None:
    props = discovery()["schemas"]["NetworkEndpoint"]["properties"]
    assert set(props) == network_endpoints.ENDPOINT_FIELDS
    neg = discovery()["schemas"]["NetworkEndpointGroup"]["properties"]
    assert network_endpoint_groups.MODELLED_TYPE in neg["networkEndpointType"]["enum"]


def test_backend_fields_are_the_backend_schema() -> None:
    props = set(discovery()["schemas"]["Backend"]["properties"])
    assert props == backend_services.BACKEND_SCHEMA_FIELDS
    service = discovery()["schemas"]["BackendService"]["properties"]
    assert set(service["loadBalancingScheme"]["enum"]) >= backend_services.SCHEMES
    assert set(service["protocol"]["enum"]) >= backend_services.PROTOCOLS


def _get(fake: ComputeFake, path: str, **query: str) -> Any:
    status, _, payload = fake.handle("GET", f"/compute/v1/{path}", query, {}, b"")
    assert status == 200, payload
    return json.loads(payload)


@pytest.fixture
def populated() -> ComputeFake:
    fake = ComputeFake()
    fake.add_network(P, "default")
    fake.add_health_check(P, "hc", httpHealthCheck={"port": 10256, "requestPath": "/healthz"})
    fake.add_health_check(
        P,
        "rhc",
        R,
        description="d",
        tcpHealthCheck={"port": 10256, "proxyHeader": "PROXY_V1", "request": "a"},
        logConfig={"enable": True},
    )
    fake.add_health_check(P, "grpc", R, grpcHealthCheck={"port": 9000, "grpcServiceName": "s"})
    fake.add_health_check(
        P, "serving", R, httpsHealthCheck={"portSpecification": "USE_SERVING_PORT"}
    )
    fake.add_instance(P, Z, "n1")
    fake.add_instance(P, Z, "n2", status="STOPPED")
    fake.add_instance_group(
        P, Z, "ig", instances=[N1, N2], description="d", namedPorts=[{"name": "p", "port": 1}]
    )
    fake.add_instance_group(P, Z, "empty")
    fake.add_network_endpoint_group(
        P,
        Z,
        "neg",
        endpoints=["n1", {"instance": "unseeded", "ipAddress": "10.128.0.99"}],
        description="d",
        subnetwork=f"regions/{R}/subnetworks/default",
    )
    fake.add_network_endpoint_group(P, Z, "empty-neg")
    hc = f"regions/{R}/healthChecks/rhc"
    fake.add_backend_service(
        P,
        R,
        "bs",
        protocol="TCP",
        healthChecks=[hc],
        backends=[{"group": f"{CANONICAL}projects/{P}/zones/{Z}/instanceGroups/ig"}],
        connectionDraining={"drainingTimeoutSec": 30},
        description="d",
    )
    fake.add_backend_service(
        P,
        R,
        "ilb",
        loadBalancingScheme="INTERNAL",
        protocol="UDP",
        healthChecks=["global/healthChecks/hc"],
        backends=[
            {
                "group": f"{CANONICAL}projects/{P}/zones/{Z}/networkEndpointGroups/neg",
                "failover": False,
                "description": "d",
            }
        ],
        network="default",
        sessionAffinity="CLIENT_IP_PROTO",
    )
    services = f"projects/{P}/regions/{R}/backendServices"
    fake.add_forwarding_rule(P, R, "nlb", backend_service=f"{services}/bs", ports=["80", "443"])
    fake.add_forwarding_rule(
        P,
        R,
        "ilb",
        backend_service=f"{services}/ilb",
        load_balancing_scheme="INTERNAL",
        ip_protocol="UDP",
        all_ports=True,
        ip_address=None,
    )
    return fake


@pytest.mark.parametrize(
    ("path", "schema"),
    [
        (f"projects/{P}/global/healthChecks/hc", "HealthCheck"),
        (f"projects/{P}/regions/{R}/healthChecks/rhc", "HealthCheck"),
        (f"projects/{P}/regions/{R}/healthChecks/grpc", "HealthCheck"),
        (f"projects/{P}/regions/{R}/healthChecks/serving", "HealthCheck"),
        (f"projects/{P}/global/healthChecks", "HealthCheckList"),
        (f"projects/{P}/regions/{R}/healthChecks", "HealthCheckList"),
        (f"projects/{P}/aggregated/healthChecks", "HealthChecksAggregatedList"),
        (f"projects/{P}/zones/{Z}/instanceGroups/ig", "InstanceGroup"),
        (f"projects/{P}/zones/{Z}/instanceGroups/empty", "InstanceGroup"),
        (f"projects/{P}/zones/{Z}/instanceGroups", "InstanceGroupList"),
        (f"projects/{P}/aggregated/instanceGroups", "InstanceGroupAggregatedList"),
        (f"projects/{P}/zones/{Z}/networkEndpointGroups/neg", "NetworkEndpointGroup"),
        (f"projects/{P}/zones/{Z}/networkEndpointGroups", "NetworkEndpointGroupList"),
        (f"projects/{P}/aggregated/networkEndpointGroups", "NetworkEndpointGroupAggregatedList"),
        (f"projects/{P}/regions/{R}/backendServices/bs", "BackendService"),
        (f"projects/{P}/regions/{R}/backendServices/ilb", "BackendService"),
        (f"projects/{P}/regions/{R}/backendServices", "BackendServiceList"),
        (f"projects/{P}/aggregated/backendServices", "BackendServiceAggregatedList"),
        (f"projects/{P}/regions/{R}/forwardingRules/nlb", "ForwardingRule"),
        (f"projects/{P}/regions/{R}/forwardingRules/ilb", "ForwardingRule"),
        (f"projects/{P}/aggregated/forwardingRules", "ForwardingRuleAggregatedList"),
    ],
)
def test_emitted_json_conforms(populated: ComputeFake, path: str, schema: str) -> None:
    assert_conforms(_get(populated, path), schema)
    assert_conforms(_get(populated, path, maxResults="1"), schema)  # paged, with warnings


def _post(fake: ComputeFake, path: str, body: Any, **query: str) -> Any:
    raw = json.dumps(body).encode()
    status, _, payload = fake.handle("POST", f"/compute/v1/{path}", query, {}, raw)
    assert status == 200, payload
    return json.loads(payload)


@pytest.mark.parametrize(
    ("path", "body", "schema"),
    [
        (
            f"projects/{P}/zones/{Z}/instanceGroups/ig/listInstances",
            {},
            "InstanceGroupsListInstances",
        ),
        (
            f"projects/{P}/zones/{Z}/networkEndpointGroups/neg/listNetworkEndpoints",
            {"healthStatus": "SKIP"},
            "NetworkEndpointGroupsListNetworkEndpoints",
        ),
        (
            f"projects/{P}/zones/{Z}/networkEndpointGroups/empty-neg/attachNetworkEndpoints",
            {"networkEndpoints": [{"instance": "n1"}]},
            "Operation",
        ),
        (
            f"projects/{P}/regions/{R}/backendServices/bs/getHealth",
            {"group": f"{CANONICAL}projects/{P}/zones/{Z}/instanceGroups/ig"},
            "BackendServiceGroupHealth",
        ),
        (
            f"projects/{P}/regions/{R}/backendServices/ilb/getHealth",
            {"group": f"{CANONICAL}projects/{P}/zones/{Z}/networkEndpointGroups/neg"},
            "BackendServiceGroupHealth",
        ),
        (
            f"projects/{P}/regions/{R}/backendServices/bs",
            None,
            "Operation",
        ),
        (
            f"projects/{P}/zones/{Z}/instanceGroups/empty/addInstances",
            {"instances": [{"instance": N1}]},
            "Operation",
        ),
    ],
)
def test_emitted_json_of_posts_conforms(
    populated: ComputeFake, path: str, body: Any, schema: str
) -> None:
    if body is None:  # a patch
        raw = json.dumps({"description": "e"}).encode()
        status, _, payload = populated.handle("PATCH", f"/compute/v1/{path}", {}, {}, raw)
        assert status == 200, payload
        assert_conforms(json.loads(payload), schema)
        return
    assert_conforms(_post(populated, path, body), schema)
    if schema != "Operation":
        assert_conforms(_post(populated, path, body, maxResults="1"), schema)
