"""targetPools.addInstance and removeInstance through the real clients, over both transports:
what the reference forms resolve to, what is refused (synchronously, or by the operation when
the pool changed meanwhile), and that each call is a journaled mutation."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.sandbox.compute_fake.conftest import FakeClock

P = "proj"
R = "us-central1"
CANONICAL = "https://www.googleapis.com/compute/v1/"
N1 = f"{CANONICAL}projects/{P}/zones/us-central1-a/instances/n1"
N2 = f"{CANONICAL}projects/{P}/zones/us-central1-b/instances/n2"
N3 = f"{CANONICAL}projects/{P}/zones/us-central1-a/instances/n3"
POOL_PATH = f"projects/{P}/regions/{R}/targetPools/pool"


@pytest.fixture
def seeded(fake: ComputeFake) -> ComputeFake:
    fake.add_target_pool(P, R, "pool", instances=[N1, N2])
    return fake


def members(fake: ComputeFake) -> list[str]:
    return list(fake.target_pools(P, R)["pool"].get("instances", []))


def membership(clients: Any, verb: str, refs: tuple[str, ...], pool: str) -> compute_v1.Operation:
    """targetPools.addInstance or removeInstance (`verb` "add" or "remove") of `refs`."""
    call = getattr(clients.target_pools, f"{verb}_instance_unary")
    body = {"instances": [{"instance": ref} for ref in refs]}  # InstanceReference each
    resource = {f"target_pools_{verb}_instance_request_resource": body}
    return call(project=P, region=R, target_pool=pool, retry=None, **resource)


def add(clients: Any, *refs: str, pool: str = "pool") -> compute_v1.Operation:
    return membership(clients, "add", refs, pool)


def remove(clients: Any, *refs: str, pool: str = "pool") -> compute_v1.Operation:
    return membership(clients, "remove", refs, pool)


@pytest.mark.parametrize(
    "ref",
    [
        N3,
        f"https://compute.googleapis.com/compute/v1/projects/{P}/zones/us-central1-a/instances/n3",
        f"projects/{P}/zones/us-central1-a/instances/n3",
        "zones/us-central1-a/instances/n3",
    ],
)
def test_add_instance_accepts_every_reference_form(
    clients: Any, seeded: ComputeFake, ref: str
) -> None:
    op = add(clients, ref)
    assert op.operation_type == "addInstance"
    assert op.region == f"{CANONICAL}projects/{P}/regions/{R}"
    assert op.target_link == CANONICAL + POOL_PATH
    assert op.status == compute_v1.Operation.Status.DONE and not op.error.errors
    assert members(seeded) == [N1, N2, N3]


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ((N3, N3), [N1, N2, N3]),  # a repeat in one request: added once
        ((N1,), [N1, N2]),  # already a member: DONE, unchanged (the module's choice)
        ((N3, "zones/us-central1-b/instances/n2"), [N1, N2, N3]),
    ],
)
def test_add_instance_appends_only_new_members(
    clients: Any, seeded: ComputeFake, refs: tuple[str, ...], expected: list[str]
) -> None:
    op = add(clients, *refs)
    assert not op.error.errors
    assert members(seeded) == expected


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ((N1,), [N2]),
        (("zones/us-central1-b/instances/n2",), [N1]),  # any form of a member's URL
        ((N1, N2), []),  # the last one out: the field is omitted
    ],
)
def test_remove_instance(
    clients: Any, seeded: ComputeFake, refs: tuple[str, ...], expected: list[str]
) -> None:
    op = remove(clients, *refs)
    assert op.operation_type == "removeInstance"
    assert op.status == compute_v1.Operation.Status.DONE and not op.error.errors
    assert members(seeded) == expected
    if not expected:
        assert "instances" not in seeded.target_pools(P, R)["pool"]


@pytest.mark.parametrize(
    ("call", "refs", "exc_type", "reason", "message"),
    [
        (
            remove,
            (N3,),
            gexc.BadRequest,
            "invalid",
            f"Invalid value for field 'resource.instance': '{N3}'. "
            "Instance is not currently attached to this target pool.",
        ),
        (  # refused whole: n1 stays
            remove,
            (N1, N3),
            gexc.BadRequest,
            "invalid",
            "Instance is not currently attached to this target pool.",
        ),
        (add, (), gexc.BadRequest, "required", "'resource.instances'"),
        (remove, (), gexc.BadRequest, "required", "'resource.instances'"),
        (add, ("not a url",), gexc.BadRequest, "invalid", "Must be a URL to a zonal instance."),
        (add, ("global/instances/n3",), gexc.BadRequest, "invalid", "resource.instances[0]"),
        (remove, ("regions/us-central1/instances/n1",), gexc.BadRequest, "invalid", "zonal"),
        (add, (f"projects/{P}/zones/us-central1-a/disks/d",), gexc.BadRequest, "invalid", "zonal"),
    ],
)
def test_refusals(
    clients: Any,
    seeded: ComputeFake,
    call: Any,
    refs: tuple[str, ...],
    exc_type: type,
    reason: str,
    message: str,
) -> None:
    with pytest.raises(exc_type) as info:
        call(clients, *refs)
    assert info.value.errors[0]["reason"] == reason
    assert message in info.value.errors[0]["message"]
    assert members(seeded) == [N1, N2]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"instances": [{"instance": N3, "port": 80}]}, "invalid"),  # unknown field
        ({"instance": N3}, "invalid"),  # the getHealth shape, not this one's
        ({"instances": [{}]}, "required"),
        ({"instances": [N3]}, "invalid"),  # a bare string, not an InstanceReference
    ],
)
@pytest.mark.parametrize("verb", ["addInstance", "removeInstance"])
def test_malformed_bodies(
    api: Any, seeded: ComputeFake, verb: str, body: dict[str, Any], reason: str
) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        api.call("POST", f"{POOL_PATH}/{verb}", body)
    assert info.value.errors[0]["reason"] == reason
    assert members(seeded) == [N1, N2]


@pytest.mark.parametrize("call", [add, remove])
def test_a_missing_pool_is_not_found(clients: Any, seeded: ComputeFake, call: Any) -> None:
    with pytest.raises(gexc.NotFound):
        call(clients, N1, pool="ghost")


def test_membership_calls_are_journaled_mutations(clients: Any, seeded: ComputeFake) -> None:
    add(clients, N3)
    remove(clients, N1)
    with pytest.raises(gexc.BadRequest):
        remove(clients, N1)
    journal = [(e.method, e.path.rsplit("/", 1)[-1], e.status) for e in seeded.mutating_requests()]
    assert journal == [
        ("POST", "addInstance", 200),
        ("POST", "removeInstance", 200),
        ("POST", "removeInstance", 400),
    ]
    assert seeded.mutating_requests()[0].body == {"instances": [{"instance": N3}]}


def test_a_removal_raced_by_another_fails_in_its_operation(
    make_clients: Any, clock: FakeClock
) -> None:
    """Both requests pass the check while n1 is a member; the second operation, applied after
    the first took n1 out, ends with the error instead."""
    fake = ComputeFake(operation_latency=1.0, clock=clock)
    fake.add_target_pool(P, R, "pool", instances=[N1, N2])
    with ComputeFakeServer(fake) as server:
        clients = make_clients(server.url)
        first, second = remove(clients, N1), remove(clients, N1)
        assert first.status != compute_v1.Operation.Status.DONE
        clock.advance(5)
        done = [
            clients.region_ops.get(project=P, region=R, operation=op.name, retry=None)
            for op in (first, second)
        ]
    assert not done[0].error.errors
    assert done[1].http_error_status_code == 400
    assert done[1].error.errors[0].code == "INVALID_FIELD_VALUE"
    assert "not currently attached" in done[1].error.errors[0].message
    assert members(fake) == [N2]
