"""Zonal GCE_VM_IP network endpoint groups through the real NetworkEndpointGroupsClient and a
google-auth session, over both transports: the NEG, attach/detach and listNetworkEndpoints."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake
from tests.sandbox.compute_fake.conftest import aggregated_names

P = "proj"
Z = "us-central1-a"
CANONICAL = "https://www.googleapis.com/compute/v1/"
ZONE_URL = f"{CANONICAL}projects/{P}/zones/{Z}"
NEGS = f"projects/{P}/zones/{Z}/networkEndpointGroups"
DEFAULT_NETWORK = f"{CANONICAL}projects/{P}/global/networks/default"


@pytest.fixture
def seeded(fake: ComputeFake) -> ComputeFake:
    for i, name in enumerate(("n1", "n2", "n3"), start=11):
        fake.add_instance(P, Z, name, network_ip=f"10.128.0.{i}")
    fake.add_instance(P, "us-central1-b", "far")
    fake.add_network(P, "other")
    fake.add_instance(P, Z, "elsewhere", network="other", network_ip="10.0.0.9")
    fake.add_network_endpoint_group(P, Z, "neg", endpoints=["n1"])
    return fake


def endpoint(instance: str, ip: str = "") -> compute_v1.NetworkEndpoint:
    return compute_v1.NetworkEndpoint(instance=instance, ip_address=ip)


def endpoints_call(
    clients: Any, verb: str, endpoints: tuple[compute_v1.NetworkEndpoint, ...]
) -> compute_v1.Operation:
    """attachNetworkEndpoints or detachNetworkEndpoints (`verb` "attach" or "detach")."""
    call = getattr(clients.network_endpoint_groups, f"{verb}_network_endpoints_unary")
    body = {"network_endpoints": list(endpoints)}
    resource = {f"network_endpoint_groups_{verb}_endpoints_request_resource": body}
    return call(project=P, zone=Z, network_endpoint_group="neg", retry=None, **resource)


def attach(clients: Any, *endpoints: compute_v1.NetworkEndpoint) -> compute_v1.Operation:
    return endpoints_call(clients, "attach", endpoints)


def detach(clients: Any, *endpoints: compute_v1.NetworkEndpoint) -> compute_v1.Operation:
    return endpoints_call(clients, "detach", endpoints)


def listed(clients: Any, **request: Any) -> list[tuple[str, str]]:
    pager = clients.network_endpoint_groups.list_network_endpoints(
        request=compute_v1.ListNetworkEndpointsNetworkEndpointGroupsRequest(
            project=P, zone=Z, network_endpoint_group="neg", **request
        ),
        retry=None,
    )
    return [(e.network_endpoint.instance, e.network_endpoint.ip_address) for e in pager]


def test_insert_get_list_delete(clients: Any, fake: ComputeFake) -> None:
    body = compute_v1.NetworkEndpointGroup(
        name="made",
        network_endpoint_type="GCE_VM_IP",
        network="global/networks/default",
        subnetwork=f"projects/{P}/regions/us-central1/subnetworks/default",
        description="k8s",
    )
    op = clients.network_endpoint_groups.insert_unary(
        project=P, zone=Z, network_endpoint_group_resource=body, retry=None
    )
    assert (op.operation_type, op.zone) == ("insert", ZONE_URL)
    got = clients.network_endpoint_groups.get(
        project=P, zone=Z, network_endpoint_group="made", retry=None
    )
    assert (got.network_endpoint_type, got.network, got.size) == ("GCE_VM_IP", DEFAULT_NETWORK, 0)
    assert got.subnetwork.endswith("/regions/us-central1/subnetworks/default")
    assert (got.zone, got.self_link) == (ZONE_URL, f"{CANONICAL}{NEGS}/made")
    names = [g.name for g in clients.network_endpoint_groups.list(project=P, zone=Z, retry=None)]
    assert names == ["made"]
    clients.network_endpoint_groups.delete_unary(
        project=P, zone=Z, network_endpoint_group="made", retry=None
    )
    assert fake.network_endpoint_groups(P, Z) == {}


@pytest.mark.parametrize(
    ("body", "exc_type", "reason", "words"),
    [
        ({"name": "x", "network": "default"}, gexc.BadRequest, "invalid", "GCE_VM_IP"),
        (
            {"name": "x", "networkEndpointType": "GCE_VM_IP_PORT", "network": "default"},
            gexc.BadRequest,
            "invalid",
            "models only",
        ),
        ({"name": "x", "networkEndpointType": "GCE_VM_IP"}, gexc.BadRequest, "required", "network"),
        (
            {"name": "x", "networkEndpointType": "GCE_VM_IP", "network": "nope"},
            gexc.NotFound,
            "notFound",
            "networks/nope",
        ),
        (
            {
                "name": "x",
                "networkEndpointType": "GCE_VM_IP",
                "network": "default",
                "defaultPort": 80,
            },
            gexc.BadRequest,
            "invalid",
            "Default port",
        ),
        (
            {
                "name": "x",
                "networkEndpointType": "GCE_VM_IP",
                "network": "default",
                "subnetwork": f"projects/{P}/regions/europe-west1/subnetworks/s",
            },
            gexc.BadRequest,
            "invalid",
            "subnetwork",
        ),
        (
            {"name": "neg", "networkEndpointType": "GCE_VM_IP", "network": "default"},
            gexc.Conflict,
            "alreadyExists",
            "already exists",
        ),
    ],
)
def test_insert_validation(
    api: Any, seeded: ComputeFake, body: dict[str, Any], exc_type: type, reason: str, words: str
) -> None:
    with pytest.raises(exc_type) as info:
        api.call("POST", NEGS, body)
    assert info.value.errors[0]["reason"] == reason
    assert words in info.value.message
    assert set(seeded.network_endpoint_groups(P, Z)) == {"neg"}


def test_attach_detach_and_list(clients: Any, seeded: ComputeFake) -> None:
    op = attach(clients, endpoint("n2"), endpoint(f"{ZONE_URL}/instances/n3", "10.128.0.13"))
    assert (op.operation_type, op.zone, op.target_link) == (
        "attachNetworkEndpoints",
        ZONE_URL,
        f"{CANONICAL}{NEGS}/neg",
    )
    assert listed(clients) == [("n1", "10.128.0.11"), ("n2", "10.128.0.12"), ("n3", "10.128.0.13")]
    assert seeded.network_endpoint_groups(P, Z)["neg"]["size"] == 3
    op = attach(clients, endpoint("n2"))  # attached already: unchanged
    assert not op.error.errors and seeded.network_endpoint_groups(P, Z)["neg"]["size"] == 3
    op = detach(clients, endpoint("n1"), endpoint("n3", "10.128.0.13"))
    assert op.operation_type == "detachNetworkEndpoints" and not op.error.errors
    assert seeded.network_endpoints(P, Z, "neg") == [{"instance": "n2", "ipAddress": "10.128.0.12"}]
    assert seeded.network_endpoint_groups(P, Z)["neg"]["size"] == 1


@pytest.mark.parametrize(
    ("verb", "body", "exc_type", "reason", "words"),
    [
        ("attach", {"instance": "ghost"}, gexc.NotFound, "notFound", f"zones/{Z}/instances/ghost"),
        ("attach", {"instance": "n2", "port": 80}, gexc.BadRequest, "invalid", "Port cannot"),
        (
            "attach",
            {"instance": "n2", "ipAddress": "10.9.9.9"},
            gexc.BadRequest,
            "invalid",
            "primary",
        ),
        ("attach", {"instance": "elsewhere"}, gexc.BadRequest, "invalid", "network"),
        (
            "attach",
            {"instance": f"projects/{P}/zones/us-central1-b/instances/far"},
            gexc.BadRequest,
            "invalid",
            "zone",
        ),
        ("attach", {"ipAddress": "10.128.0.12"}, gexc.BadRequest, "required", "instance"),
        ("attach", {"instance": "n2", "fqdn": "x.example"}, gexc.BadRequest, "invalid", "fqdn"),
        ("detach", {"instance": "n2"}, gexc.BadRequest, "invalid", "not attached"),
        ("detach", {"instance": "n1", "ipAddress": "10.9.9.9"}, gexc.BadRequest, "invalid", "not"),
        ("detach", {"instance": "ghost"}, gexc.NotFound, "notFound", "instances/ghost"),
    ],
)
def test_endpoint_validation(
    api: Any,
    seeded: ComputeFake,
    verb: str,
    body: dict[str, Any],
    exc_type: type,
    reason: str,
    words: str,
) -> None:
    path = f"{NEGS}/neg/{verb}NetworkEndpoints"
    with pytest.raises(exc_type) as info:
        api.call("POST", path, {"networkEndpoints": [body]})
    assert info.value.errors[0]["reason"] == reason
    assert words in info.value.message
    assert seeded.network_endpoints(P, Z, "neg") == [{"instance": "n1", "ipAddress": "10.128.0.11"}]


def test_an_endpoint_seeded_for_an_unseeded_instance_can_be_detached(
    clients: Any, fake: ComputeFake
) -> None:
    fake.add_network_endpoint_group(
        P, Z, "neg", endpoints=[{"instance": "node-1", "ipAddress": "10.128.0.50"}]
    )
    assert listed(clients) == [("node-1", "10.128.0.50")]
    detach(clients, endpoint("node-1"))
    assert fake.network_endpoints(P, Z, "neg") == []
    with pytest.raises(ValueError, match="ipAddress"):
        fake.add_network_endpoint_group(P, Z, "other", endpoints=["node-2"])


def test_list_network_endpoints_pages_and_refuses_what_is_not_modelled(
    clients: Any, api: Any, fake: ComputeFake
) -> None:
    entries = [{"instance": f"node-{i:02d}", "ipAddress": f"10.128.1.{i}"} for i in range(25)]
    fake.add_network_endpoint_group(P, Z, "neg", endpoints=entries)
    fake.clear_journal()
    assert listed(clients, max_results=10) == [(e["instance"], e["ipAddress"]) for e in entries]
    pages = [e for e in fake.journal if e.path.endswith("/listNetworkEndpoints")]
    assert len(pages) == 3 and not any(e.mutating for e in pages)
    path = f"{NEGS}/neg/listNetworkEndpoints"
    masked = api.call(
        "POST", path, {}, params={"fields": "items/networkEndpoint/instance", "maxResults": 2}
    )
    assert masked == {"items": [{"networkEndpoint": {"instance": f"node-0{i}"}} for i in (0, 1)]}
    for body, params in (({"healthStatus": "SHOW"}, {}), ({}, {"orderBy": "name"})):
        with pytest.raises(gexc.BadRequest) as info:
            api.call("POST", path, body, params=params)
        assert "compute fake" in info.value.message


def test_aggregated_list(clients: Any, seeded: ComputeFake) -> None:
    seeded.add_network_endpoint_group(P, "us-east1-b", "east")
    seen = aggregated_names(clients.network_endpoint_groups, "network_endpoint_groups")
    assert seen[f"zones/{Z}"] == ["neg"] and seen["zones/us-east1-b"] == ["east"]
    assert seen["zones/europe-west1-c"] == []
