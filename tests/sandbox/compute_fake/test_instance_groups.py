"""Zonal unmanaged instance groups through the real InstanceGroupsClient and a google-auth
session, over both transports: the group, its members, listInstances paging and filters."""

from __future__ import annotations

import json
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
GROUPS = f"projects/{P}/zones/{Z}/instanceGroups"
DEFAULT_NETWORK = f"{CANONICAL}projects/{P}/global/networks/default"


def vm(name: str, zone: str = Z) -> str:
    return f"{CANONICAL}projects/{P}/zones/{zone}/instances/{name}"


@pytest.fixture
def seeded(fake: ComputeFake) -> ComputeFake:
    for name in ("n1", "n2", "n3"):
        fake.add_instance(P, Z, name)
    fake.add_instance(P, Z, "stopped", status="TERMINATED")
    fake.add_instance(P, "us-central1-b", "far")
    fake.add_network(P, "other")
    fake.add_instance(P, Z, "elsewhere", network="other")
    fake.add_instance_group(P, Z, "ig", instances=[vm("n1")])
    return fake


def membership(clients: Any, verb: str, urls: tuple[str, ...], group: str) -> compute_v1.Operation:
    """instanceGroups.addInstances or removeInstances (`verb` "add" or "remove") of `urls`."""
    call = getattr(clients.instance_groups, f"{verb}_instances_unary")
    body = {"instances": [{"instance": url} for url in urls]}  # InstanceReference each
    resource = {f"instance_groups_{verb}_instances_request_resource": body}
    return call(project=P, zone=Z, instance_group=group, retry=None, **resource)


def add(clients: Any, *urls: str, group: str = "ig") -> compute_v1.Operation:
    return membership(clients, "add", urls, group)


def remove(clients: Any, *urls: str, group: str = "ig") -> compute_v1.Operation:
    return membership(clients, "remove", urls, group)


def listed(clients: Any, state: str = "ALL", **request: Any) -> list[tuple[str, str]]:
    pager = clients.instance_groups.list_instances(
        request=compute_v1.ListInstancesInstanceGroupsRequest(
            project=P,
            zone=Z,
            instance_group="ig",
            instance_groups_list_instances_request_resource=compute_v1.InstanceGroupsListInstancesRequest(
                instance_state=state
            ),
            **request,
        ),
        retry=None,
    )
    return [(item.instance, item.status) for item in pager]


def test_insert_get_list_delete(clients: Any, fake: ComputeFake) -> None:
    body = compute_v1.InstanceGroup(
        name="made",
        description="nodes",
        named_ports=[compute_v1.NamedPort(name="http", port=80)],
        network="global/networks/default",
    )
    op = clients.instance_groups.insert_unary(
        project=P, zone=Z, instance_group_resource=body, retry=None
    )
    assert (op.operation_type, op.zone) == ("insert", ZONE_URL)
    assert op.self_link == f"{ZONE_URL}/operations/{op.name}"
    got = clients.instance_groups.get(project=P, zone=Z, instance_group="made", retry=None)
    assert (got.zone, got.size, got.network) == (ZONE_URL, 0, DEFAULT_NETWORK)
    assert got.self_link == f"{CANONICAL}{GROUPS}/made" and got.fingerprint
    assert [(p.name, p.port) for p in got.named_ports] == [("http", 80)]
    assert [g.name for g in clients.instance_groups.list(project=P, zone=Z, retry=None)] == ["made"]
    clients.instance_groups.delete_unary(project=P, zone=Z, instance_group="made", retry=None)
    assert fake.instance_groups(P, Z) == {}
    with pytest.raises(gexc.NotFound):
        clients.instance_groups.get(project=P, zone=Z, instance_group="made", retry=None)


@pytest.mark.parametrize(
    ("body", "exc_type", "reason"),
    [
        ({"name": "x", "network": "global/networks/nope"}, gexc.NotFound, "notFound"),
        ({"name": "x", "namedPorts": [{"name": "http", "port": 0}]}, gexc.BadRequest, "invalid"),
        ({"name": "x", "instances": []}, gexc.BadRequest, "invalid"),  # not a group field
        ({"name": "ig"}, gexc.Conflict, "alreadyExists"),
        ({}, gexc.BadRequest, "required"),
    ],
)
def test_insert_validation(
    api: Any, seeded: ComputeFake, body: dict[str, Any], exc_type: type, reason: str
) -> None:
    with pytest.raises(exc_type) as info:
        api.call("POST", GROUPS, body)
    assert info.value.errors[0]["reason"] == reason
    assert set(seeded.instance_groups(P, Z)) == {"ig"}


def test_an_unknown_zone_is_refused(api: Any) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        api.call("GET", f"projects/{P}/zones/us-central1/instanceGroups")
    assert "Unknown zone." in info.value.message


def test_add_and_remove_instances(clients: Any, seeded: ComputeFake) -> None:
    op = add(clients, vm("n2"), f"projects/{P}/zones/{Z}/instances/n3")
    assert (op.operation_type, op.zone, op.target_link) == (
        "addInstances",
        ZONE_URL,
        f"{CANONICAL}{GROUPS}/ig",
    )
    assert seeded.instance_group_members(P, Z, "ig") == [vm("n1"), vm("n2"), vm("n3")]
    group = seeded.instance_groups(P, Z)["ig"]
    assert group["size"] == 3 and group["network"] == DEFAULT_NETWORK
    op = remove(clients, vm("n1"), vm("n3"))
    assert op.operation_type == "removeInstances" and not op.error.errors
    assert seeded.instance_group_members(P, Z, "ig") == [vm("n2")]
    assert seeded.instance_groups(P, Z)["ig"]["size"] == 1


def test_a_group_made_without_a_network_takes_its_first_members_network(
    clients: Any, seeded: ComputeFake
) -> None:
    """test_add_and_remove_instances' group has its network from the fixture's seed; this one
    has none until an instance joins, and then every other must be on that network."""
    seeded.add_instance_group(P, Z, "fresh")
    assert "network" not in seeded.instance_groups(P, Z)["fresh"]
    with pytest.raises(gexc.BadRequest) as info:
        add(clients, vm("elsewhere"), vm("n1"), group="fresh")
    assert "network" in info.value.message
    assert "network" not in seeded.instance_groups(P, Z)["fresh"]  # refused whole
    add(clients, vm("elsewhere"), group="fresh")
    other = f"{CANONICAL}projects/{P}/global/networks/other"
    assert seeded.instance_groups(P, Z)["fresh"]["network"] == other
    with pytest.raises(gexc.BadRequest):
        add(clients, vm("n1"), group="fresh")


def test_adding_a_member_again_is_member_already_exists(clients: Any, seeded: ComputeFake) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        add(clients, vm("n2"), vm("n1"))
    assert info.value.errors[0]["reason"] == "memberAlreadyExists"
    assert info.value.message.endswith(
        f"Resource 'projects/{P}/zones/{Z}/instances/n1' is already a member of '{GROUPS}/ig'."
    )
    assert seeded.instance_group_members(P, Z, "ig") == [vm("n1")]  # refused whole


@pytest.mark.parametrize(
    ("verb", "url", "exc_type", "reason", "words"),
    [
        ("add", vm("ghost"), gexc.NotFound, "notFound", f"projects/{P}/zones/{Z}/instances/ghost"),
        ("add", vm("far", "us-central1-b"), gexc.BadRequest, "invalid", "same zone"),
        ("add", vm("elsewhere"), gexc.BadRequest, "invalid", "network"),
        ("add", "not a url", gexc.BadRequest, "invalid", "zonal instance"),
        ("remove", vm("ghost"), gexc.NotFound, "notFound", "instances/ghost"),
        ("remove", vm("n2"), gexc.BadRequest, "invalid", "not a member"),
    ],
)
def test_membership_validation(
    clients: Any,
    seeded: ComputeFake,
    verb: str,
    url: str,
    exc_type: type,
    reason: str,
    words: str,
) -> None:
    with pytest.raises(exc_type) as info:
        membership(clients, verb, (url,), "ig")
    assert info.value.errors[0]["reason"] == reason
    assert words in info.value.message
    assert seeded.instance_group_members(P, Z, "ig") == [vm("n1")]


def test_an_empty_request_is_required(api: Any, seeded: ComputeFake) -> None:
    for verb in ("addInstances", "removeInstances"):
        with pytest.raises(gexc.BadRequest) as info:
            api.call("POST", f"{GROUPS}/ig/{verb}", {"instances": []})
        assert info.value.errors[0]["reason"] == "required"


def test_a_member_seeded_without_an_instance_can_be_removed(
    clients: Any, seeded: ComputeFake
) -> None:
    seeded.add_instance_group(P, Z, "bare", instances=[vm("unseeded")])
    remove(clients, vm("unseeded"), group="bare")
    assert seeded.instance_group_members(P, Z, "bare") == []


def test_list_instances_states_and_filters(clients: Any, api: Any, seeded: ComputeFake) -> None:
    add(clients, vm("n2"), vm("stopped"))
    assert listed(clients) == [
        (vm("n1"), "RUNNING"),
        (vm("n2"), "RUNNING"),
        (vm("stopped"), "TERMINATED"),
    ]
    assert listed(clients, "RUNNING") == [(vm("n1"), "RUNNING"), (vm("n2"), "RUNNING")]
    assert listed(clients, filter='instance eq ".*/n2"') == [(vm("n2"), "RUNNING")]
    path = f"{GROUPS}/ig/listInstances"
    for params in ({"orderBy": "name"}, {"filter": 'status = "RUNNING"'}):
        with pytest.raises(gexc.BadRequest) as info:
            api.call("POST", path, {}, params=params)
        assert info.value.errors[0]["reason"] == "invalid"
    with pytest.raises(gexc.BadRequest):
        api.call("POST", path, {"instanceState": "STOPPED"})
    masked = api.call("POST", path, {}, params={"fields": "items/instance"})
    assert masked == {"items": [{"instance": vm(n)} for n in ("n1", "n2", "stopped")]}
    with pytest.raises(gexc.BadRequest) as info:
        api.call("POST", path, {}, params={"fields": "items/name"})  # a member has no name
    assert info.value.errors[0]["reason"] == "invalidParameter"
    mutations = [e.path.rsplit("/", 1)[1] for e in seeded.mutating_requests()]
    assert mutations == ["addInstances"]  # listInstances is a read


def test_list_instances_pages(clients: Any, fake: ComputeFake) -> None:
    names = [f"node-{i:02d}" for i in range(25)]
    fake.add_instance_group(P, Z, "ig", instances=[vm(n) for n in names])
    fake.clear_journal()
    assert [url for url, _ in listed(clients, max_results=10)] == [vm(n) for n in names]
    pages = [e for e in fake.journal if e.path.endswith("/listInstances")]
    assert [e.query.get("maxResults") for e in pages] == ["10"] * 3
    assert not any(e.mutating for e in pages)


def test_empty_group_lists_no_items(api: Any, fake: ComputeFake) -> None:
    fake.add_instance_group(P, Z, "empty")
    assert api.call("POST", f"{GROUPS}/empty/listInstances", {}) == {
        "kind": "compute#instanceGroupsListInstances"
    }


def test_aggregated_list(clients: Any, api: Any, seeded: ComputeFake) -> None:
    seeded.add_instance_group(P, "europe-west1-b", "eu")
    seen = aggregated_names(clients.instance_groups, "instance_groups")
    assert seen[f"zones/{Z}"] == ["ig"] and seen["zones/europe-west1-b"] == ["eu"]
    assert seen["zones/us-east1-b"] == []
    raw = api.call("GET", f"projects/{P}/aggregated/instanceGroups", params={"fields": "items"})
    assert raw["items"]["zones/us-west1-a"]["warning"]["code"] == "NO_RESULTS_ON_PAGE"
    assert not any(scope.startswith("regions/") for scope in raw["items"])


def test_membership_is_checked_again_when_the_operation_lands(clock: Any) -> None:
    fake = ComputeFake(clock=clock, operation_latency=10.0)
    fake.add_instance(P, Z, "n1")
    fake.add_instance_group(P, Z, "ig")

    def post(verb: str) -> dict[str, Any]:
        body = json.dumps({"instances": [{"instance": vm("n1")}]})
        status, _, payload = fake.handle("POST", f"/compute/v1/{GROUPS}/ig/{verb}", {}, {}, body)
        assert status == 200, payload
        result: dict[str, Any] = json.loads(payload)
        return result

    first, second = post("addInstances"), post("addInstances")  # both before either lands
    assert first["status"] == second["status"] == "PENDING"
    clock.advance(10)
    ops = {op["name"]: op for op in fake.operations(P)}
    assert "error" not in ops[first["name"]]
    assert ops[second["name"]]["error"]["errors"][0]["code"] == "MEMBER_ALREADY_EXISTS"
    assert fake.instance_group_members(P, Z, "ig") == [vm("n1")]
