"""A seeded world of backend-service load balancers for the Compute fake's tests: VMs in two
zones of one region, an instance group per zone, a GCE_VM_IP NEG, checks."""

from __future__ import annotations

from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake

P = "proj"
R = "us-central1"
ZA, ZB = "us-central1-a", "us-central1-b"
CANONICAL = "https://www.googleapis.com/compute/v1/"
REGION_URL = f"{CANONICAL}projects/{P}/regions/{R}"
SERVICES = f"projects/{P}/regions/{R}/backendServices"
RULES = f"projects/{P}/regions/{R}/forwardingRules"
HC = f"{REGION_URL}/healthChecks/hc"
GLOBAL_HC = f"{CANONICAL}projects/{P}/global/healthChecks/ghc"


def vm(name: str, zone: str = ZA) -> str:
    return f"{CANONICAL}projects/{P}/zones/{zone}/instances/{name}"


def group(name: str, zone: str = ZA, collection: str = "instanceGroups") -> str:
    return f"{CANONICAL}projects/{P}/zones/{zone}/{collection}/{name}"


IG_A, IG_B = group("ig-a"), group("ig-b", ZB)
NEG = group("neg", collection="networkEndpointGroups")


def seed(fake: ComputeFake) -> ComputeFake:
    fake.add_instance(P, ZA, "n1", network_ip="10.128.0.11")
    fake.add_instance(P, ZA, "n2", network_ip="10.128.0.12")
    fake.add_instance(P, ZB, "n3", network_ip="10.128.0.13")
    fake.add_instance_group(P, ZA, "ig-a", instances=[vm("n1"), vm("n2")])
    fake.add_instance_group(P, ZB, "ig-b", instances=[vm("n3", ZB)])
    fake.add_instance_group(P, ZA, "ig-empty")
    fake.add_network_endpoint_group(P, ZA, "neg", endpoints=["n1", "n2"])
    fake.add_health_check(P, "hc", R, tcpHealthCheck={"port": 10256})
    fake.add_health_check(P, "ghc", httpHealthCheck={"port": 10256, "requestPath": "/healthz"})
    fake.add_health_check(P, "serving", R, tcpHealthCheck={"portSpecification": "USE_SERVING_PORT"})
    return fake


def service_body(name: str = "bs", **fields: Any) -> dict[str, Any]:
    """An EXTERNAL TCP service over both instance groups, checked by the regional check."""
    body: dict[str, Any] = {
        "name": name,
        "loadBalancingScheme": "EXTERNAL",
        "protocol": "TCP",
        "healthChecks": [HC],
        "backends": [{"group": IG_A}, {"group": IG_B}],
    }
    body.update(fields)
    return body


def service_fields(**fields: Any) -> dict[str, Any]:
    """service_body without the name, for ComputeFake.add_backend_service."""
    body = service_body(**fields)
    del body["name"]
    return body
