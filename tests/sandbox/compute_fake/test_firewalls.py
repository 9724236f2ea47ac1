"""Firewalls through the real google-cloud-compute FirewallsClient, over both transports."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake

P = "proj"
CANONICAL = "https://www.googleapis.com/compute/v1/"
HC_SOURCES = ["35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"]


def rule(name: str = "fw", **overrides: Any) -> compute_v1.Firewall:
    fields: dict[str, Any] = {
        "name": name,
        "allowed": [compute_v1.Allowed(I_p_protocol="tcp", ports=["10256"])],
        "source_ranges": HC_SOURCES,
        "target_tags": ["gke-node"],
    }
    fields.update(overrides)
    return compute_v1.Firewall(**fields)


def test_insert_get_list(clients: Any, fake: ComputeFake) -> None:
    op = clients.firewalls.insert_unary(project=P, firewall_resource=rule(), retry=None)
    assert op.status == compute_v1.Operation.Status.DONE
    assert op.operation_type == "insert"
    got = clients.firewalls.get(project=P, firewall="fw", retry=None)
    assert got.network == f"{CANONICAL}projects/{P}/global/networks/default"
    assert (got.direction, got.priority) == ("INGRESS", 1000)
    assert list(got.source_ranges) == HC_SOURCES
    assert got.allowed[0].I_p_protocol == "tcp" and list(got.allowed[0].ports) == ["10256"]
    assert got.self_link == f"{CANONICAL}projects/{P}/global/firewalls/fw"
    stored = fake.firewalls(P)["fw"]
    assert stored["kind"] == "compute#firewall" and stored["targetTags"] == ["gke-node"]
    names = [f.name for f in clients.firewalls.list(project=P, retry=None)]
    assert names == ["fw"]


def test_source_ranges_default_to_anywhere(clients: Any, fake: ComputeFake) -> None:
    body = compute_v1.Firewall(name="open", allowed=[compute_v1.Allowed(I_p_protocol="icmp")])
    clients.firewalls.insert_unary(project=P, firewall_resource=body, retry=None)
    assert fake.firewalls(P)["open"]["sourceRanges"] == ["0.0.0.0/0"]


def test_network_in_other_forms_is_stored_as_full_url(clients: Any, fake: ComputeFake) -> None:
    fake.add_network(P, "vpc")
    for name, ref in (("a", "global/networks/vpc"), ("b", f"projects/{P}/global/networks/vpc")):
        body = rule(name, network=ref)
        clients.firewalls.insert_unary(project=P, firewall_resource=body, retry=None)
        assert fake.firewalls(P)[name]["network"] == f"{CANONICAL}projects/{P}/global/networks/vpc"


@pytest.mark.parametrize(
    ("overrides", "exc_type", "reason"),
    [
        ({"name": "Bad"}, gexc.BadRequest, "invalid"),
        ({"network": "global/networks/missing"}, gexc.NotFound, "notFound"),
        ({"allowed": [compute_v1.Allowed(ports=["10256"])]}, gexc.BadRequest, "required"),
        (
            {"allowed": [compute_v1.Allowed(I_p_protocol="tcp", ports=["x"])]},
            gexc.BadRequest,
            "invalid",
        ),
        (
            {"allowed": [compute_v1.Allowed(I_p_protocol="tcp", ports=["2000-1000"])]},
            gexc.BadRequest,
            "invalid",
        ),
        (
            {"allowed": [compute_v1.Allowed(I_p_protocol="tcp", ports=["70000"])]},
            gexc.BadRequest,
            "invalid",
        ),
        ({"allowed": [compute_v1.Allowed(I_p_protocol="gopher")]}, gexc.BadRequest, "invalid"),
        ({"allowed": []}, gexc.BadRequest, "invalid"),  # neither allowed nor denied
        ({"source_ranges": ["35.191.0.0/33"]}, gexc.BadRequest, "invalid"),
        ({"source_ranges": ["not-a-cidr"]}, gexc.BadRequest, "invalid"),
        ({"direction": "SIDEWAYS"}, gexc.BadRequest, "invalid"),
        ({"priority": 70000}, gexc.BadRequest, "invalid"),
        ({"name": "dup"}, gexc.Conflict, "alreadyExists"),
    ],
)
def test_insert_validation(
    clients: Any, fake: ComputeFake, overrides: dict[str, Any], exc_type: type, reason: str
) -> None:
    clients.firewalls.insert_unary(project=P, firewall_resource=rule("dup"), retry=None)
    with pytest.raises(exc_type) as info:
        body = rule(**overrides)
        clients.firewalls.insert_unary(project=P, firewall_resource=body, retry=None)
    assert info.value.errors[0]["reason"] == reason
    assert set(fake.firewalls(P)) == {"dup"}


def test_patch_merges_and_update_replaces(clients: Any, fake: ComputeFake) -> None:
    clients.firewalls.insert_unary(project=P, firewall_resource=rule(), retry=None)
    original = fake.firewalls(P)["fw"]
    patch = compute_v1.Firewall(target_tags=["other-node"])
    op = clients.firewalls.patch_unary(
        project=P, firewall="fw", firewall_resource=patch, retry=None
    )
    assert op.operation_type == "patch"
    patched = fake.firewalls(P)["fw"]
    assert patched["targetTags"] == ["other-node"]
    assert patched["sourceRanges"] == HC_SOURCES and patched["id"] == original["id"]
    body = compute_v1.Firewall(name="fw", allowed=[compute_v1.Allowed(I_p_protocol="udp")])
    clients.firewalls.update_unary(project=P, firewall="fw", firewall_resource=body, retry=None)
    updated = fake.firewalls(P)["fw"]
    assert updated["allowed"] == [{"IPProtocol": "udp"}]
    assert "targetTags" not in updated and updated["sourceRanges"] == ["0.0.0.0/0"]
    assert updated["network"] == original["network"]  # omitted network is unchanged, not default


def test_network_cannot_change(clients: Any, fake: ComputeFake) -> None:
    fake.add_network(P, "vpc")
    clients.firewalls.insert_unary(project=P, firewall_resource=rule(), retry=None)
    with pytest.raises(gexc.BadRequest):
        patch = compute_v1.Firewall(network="global/networks/vpc")
        clients.firewalls.patch_unary(project=P, firewall="fw", firewall_resource=patch, retry=None)


def test_delete(clients: Any, fake: ComputeFake) -> None:
    clients.firewalls.insert_unary(project=P, firewall_resource=rule(), retry=None)
    op = clients.firewalls.delete_unary(project=P, firewall="fw", retry=None)
    assert op.operation_type == "delete"
    assert fake.firewalls(P) == {}
    with pytest.raises(gexc.NotFound):
        clients.firewalls.delete_unary(project=P, firewall="fw", retry=None)


def test_egress_defaults(clients: Any, fake: ComputeFake) -> None:
    body = compute_v1.Firewall(
        name="out", direction="EGRESS", denied=[compute_v1.Denied(I_p_protocol="all")]
    )
    clients.firewalls.insert_unary(project=P, firewall_resource=body, retry=None)
    stored = fake.firewalls(P)["out"]
    assert stored["destinationRanges"] == ["0.0.0.0/0"] and "sourceRanges" not in stored
    assert stored["denied"] == [{"IPProtocol": "all"}]
