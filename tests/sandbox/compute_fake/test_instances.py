"""Zonal instances (get, setMetadata) and zone operations, through the real clients over both
transports: the fingerprint's optimistic locking, errors, the operation's life, faults."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.compute_fake.resources.instances import STALE_FINGERPRINT
from tests.waiting import wait_for

P = "proj"
Z = "us-central1-a"
CANONICAL = "https://www.googleapis.com/compute/v1/"
ZONE_URL = f"{CANONICAL}projects/{P}/zones/{Z}"
N1_URL = f"{ZONE_URL}/instances/n1"
N1_PATH = f"projects/{P}/zones/{Z}/instances/n1"
LATENCY = 10.0
Status = compute_v1.Operation.Status


@pytest.fixture
def fake(clock: Any) -> ComputeFake:
    """Overrides the shared fixture: an injected clock, and n1 with two metadata items."""
    fake = ComputeFake(clock=clock)
    fake.add_network(P, "default")
    fake.add_instance(
        P,
        Z,
        "n1",
        network_ip="10.128.0.7",
        metadata={"startup-script": "echo hi", "enable-oslogin": "TRUE"},
        tags=["lbhc-node"],
    )
    return fake


def get(clients: Any, name: str = "n1", zone: str = Z) -> compute_v1.Instance:
    return clients.instances.get(project=P, zone=zone, instance=name, retry=None)


def set_metadata(
    clients: Any,
    fingerprint: str | None,
    items: dict[str, str],
    name: str = "n1",
    request_id: str | None = None,
) -> compute_v1.Operation:
    metadata = compute_v1.Metadata(
        items=[compute_v1.Items(key=k, value=v) for k, v in items.items()]
    )
    if fingerprint is not None:
        metadata.fingerprint = fingerprint
    request = compute_v1.SetMetadataInstanceRequest(
        project=P, zone=Z, instance=name, metadata_resource=metadata
    )
    if request_id is not None:
        request.request_id = request_id
    return clients.instances.set_metadata_unary(request=request, retry=None)


def test_a_seeded_instance_as_the_api_shows_it(clients: Any, fake: ComputeFake) -> None:
    vm = get(clients)
    assert (vm.name, vm.status, vm.zone, vm.self_link) == ("n1", "RUNNING", ZONE_URL, N1_URL)
    assert vm.machine_type == f"{ZONE_URL}/machineTypes/e2-small"
    nic = vm.network_interfaces[0]
    assert nic.network_i_p == "10.128.0.7"
    assert nic.network == f"{CANONICAL}projects/{P}/global/networks/default"
    assert list(vm.tags.items) == ["lbhc-node"]
    assert [(i.key, i.value) for i in vm.metadata.items] == [
        ("startup-script", "echo hi"),
        ("enable-oslogin", "TRUE"),
    ]
    assert vm.metadata.fingerprint
    assert fake.instance_metadata(P, Z, "n1") == {
        "startup-script": "echo hi",
        "enable-oslogin": "TRUE",
    }
    # Seeding picks the project's next free address when none is given.
    assert fake.add_instance(P, "us-central1-b", "n2")["networkInterfaces"][0]["networkIP"] == (
        "10.128.0.2"
    )
    bare = fake.add_instance(P, Z, "n3")
    assert "items" not in bare["metadata"] and "items" not in bare["tags"]  # empty: omitted


def test_get_of_a_missing_instance_is_404(clients: Any) -> None:
    with pytest.raises(gexc.NotFound) as info:
        get(clients, "nope")
    assert info.value.errors[0]["reason"] == "notFound"
    assert f"projects/{P}/zones/{Z}/instances/nope" in info.value.message
    with pytest.raises(gexc.NotFound):
        get(clients, "n1", zone="us-central1-b")  # instances are zonal


@pytest.mark.parametrize("zone", ["us-central1", "mars1-a", "us-central1-ab"])
def test_a_zone_gce_does_not_have_is_400_unknown_zone(clients: Any, zone: str) -> None:
    """In the real API's words (inspec/inspec-gcp#301: a region given as the zone)."""
    with pytest.raises(gexc.BadRequest) as info:
        get(clients, "n1", zone=zone)
    assert info.value.errors[0]["reason"] == "invalid"
    assert info.value.message.endswith(f"Invalid value for field 'zone': '{zone}'. Unknown zone.")


def test_set_metadata_replaces_the_items_and_moves_the_fingerprint(
    clients: Any, fake: ComputeFake
) -> None:
    before = get(clients).metadata.fingerprint
    op = set_metadata(clients, before, {"startup-script": "echo hi", "lbhc-e2e-node-state": "x"})
    assert (op.status, op.operation_type) == (Status.DONE, "setMetadata")
    assert (op.zone, op.target_link) == (ZONE_URL, N1_URL)
    assert op.self_link == f"{ZONE_URL}/operations/{op.name}"
    assert op.target_id == get(clients).id
    assert not op.http_error_status_code and not op.error.errors
    after = get(clients).metadata
    assert after.fingerprint != before
    # The body is the whole new metadata: enable-oslogin, left out, is gone.
    assert fake.instance_metadata(P, Z, "n1") == {
        "startup-script": "echo hi",
        "lbhc-e2e-node-state": "x",
    }
    # Even an unchanged set of items gets a new fingerprint.
    set_metadata(clients, after.fingerprint, {"startup-script": "echo hi"})
    assert get(clients).metadata.fingerprint != after.fingerprint
    # Removing every item leaves metadata without items.
    set_metadata(clients, get(clients).metadata.fingerprint, {})
    assert fake.instance_metadata(P, Z, "n1") == {}
    assert "items" not in fake.instances(P, Z)["n1"]["metadata"]


@pytest.mark.parametrize("fingerprint", ["c3RhbGUtZnA=", None], ids=["stale", "missing"])
def test_set_metadata_with_a_stale_or_missing_fingerprint_is_412(
    clients: Any, fake: ComputeFake, fingerprint: str | None
) -> None:
    before = fake.instances(P, Z)["n1"]["metadata"]
    with pytest.raises(gexc.PreconditionFailed) as info:
        set_metadata(clients, fingerprint, {"k": "v"})
    assert info.value.code == 412
    assert info.value.errors[0]["reason"] == "conditionNotMet"
    assert info.value.message.endswith(f": {STALE_FINGERPRINT}")
    assert fake.instances(P, Z)["n1"]["metadata"] == before
    assert fake.operations(P) == []
    assert [e.status for e in fake.mutating_requests()] == [412]


def test_set_metadata_on_a_missing_instance_is_404(clients: Any, fake: ComputeFake) -> None:
    with pytest.raises(gexc.NotFound) as info:
        set_metadata(clients, "c3RhbGUtZnA=", {"k": "v"}, name="gone")
    assert info.value.errors[0]["reason"] == "notFound"
    assert fake.operations(P) == []


@pytest.mark.parametrize(
    ("body", "reason", "says"),
    [
        ({"items": [{"key": "not a key", "value": "v"}]}, "invalid", "resource.items[0].key"),
        (
            {"items": [{"key": "k", "value": "a"}, {"key": "k", "value": "b"}]},
            "invalid",
            "Metadata has duplicate keys: k",
        ),
        ({"items": [{"key": "k", "vaule": "v"}]}, "invalid", 'Unknown name "vaule"'),
        ({"itemz": []}, "invalid", 'Unknown name "itemz"'),
        ({"items": [{"key": "k", "value": "x" * (256 * 1024 + 1)}]}, "invalid", "at most"),
        ({"items": "k=v"}, "invalid", "Expected a list"),
    ],
)
def test_set_metadata_validates_the_body(
    api: Any, fake: ComputeFake, body: dict[str, Any], reason: str, says: str
) -> None:
    body = {"fingerprint": fake.instances(P, Z)["n1"]["metadata"]["fingerprint"], **body}
    with pytest.raises(gexc.BadRequest) as info:
        api.call("POST", f"{N1_PATH}/setMetadata", body)
    assert info.value.errors[0]["reason"] == reason
    assert says in info.value.message
    assert fake.operations(P) == []


def test_the_zone_operation_goes_pending_running_done(
    clients: Any, fake: ComputeFake, clock: Any
) -> None:
    fake.operation_latency = LATENCY
    op = set_metadata(clients, get(clients).metadata.fingerprint, {"k": "v"})
    assert op.status == Status.PENDING
    assert "k" not in fake.instance_metadata(P, Z, "n1")  # lands at DONE
    clock.advance(LATENCY / 2)
    running = clients.zone_ops.get(project=P, zone=Z, operation=op.name, retry=None)
    assert running.status == Status.RUNNING
    clock.advance(LATENCY / 2)
    done = clients.zone_ops.get(project=P, zone=Z, operation=op.name, retry=None)
    assert (done.status, done.progress) == (Status.DONE, 100)
    assert fake.instance_metadata(P, Z, "n1") == {"k": "v"}
    assert [o["name"] for o in fake.operations(P)] == [op.name]
    # Zone operations live in their zone only.
    with pytest.raises(gexc.NotFound):
        clients.zone_ops.get(project=P, zone="us-central1-b", operation=op.name, retry=None)
    with pytest.raises(gexc.NotFound):
        clients.region_ops.get(project=P, region="us-central1", operation=op.name, retry=None)


def test_zone_operations_wait_blocks_until_done(
    clients: Any, fake: ComputeFake, clock: Any
) -> None:
    fake.operation_latency = LATENCY
    op = set_metadata(clients, get(clients).metadata.fingerprint, {"k": "v"})
    result: list[compute_v1.Operation] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            clients.zone_ops.wait(project=P, zone=Z, operation=op.name, retry=None, timeout=30)
        )
    )
    waiter.start()
    wait_for(lambda: fake.waiters == 1, 5, "the wait to start")
    clock.advance(LATENCY)
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    assert result[0].status == Status.DONE
    assert fake.instance_metadata(P, Z, "n1") == {"k": "v"}


def test_two_writers_with_one_fingerprint_only_the_first_lands(
    clients: Any, fake: ComputeFake, clock: Any
) -> None:
    """Both pass the check at request time while the first is pending; the second's
    operation finds the fingerprint moved and fails, its items not applied."""
    fake.operation_latency = LATENCY
    fingerprint = get(clients).metadata.fingerprint
    first = set_metadata(clients, fingerprint, {"writer": "one"})
    second = set_metadata(clients, fingerprint, {"writer": "two"})
    clock.advance(LATENCY)
    ok = clients.zone_ops.get(project=P, zone=Z, operation=first.name, retry=None)
    lost = clients.zone_ops.get(project=P, zone=Z, operation=second.name, retry=None)
    assert not ok.error.errors
    assert (lost.status, lost.http_error_status_code) == (Status.DONE, 412)
    assert lost.http_error_message == "PRECONDITION FAILED"
    assert [(e.code, e.message) for e in lost.error.errors] == [
        ("CONDITION_NOT_MET", STALE_FINGERPRINT)
    ]
    assert fake.instance_metadata(P, Z, "n1") == {"writer": "one"}


def test_faults_apply_to_set_metadata(clients: Any, fake: ComputeFake) -> None:
    fingerprint = get(clients).metadata.fingerprint
    fake.faults.fail_requests(times=1, status=503, path_contains="/setMetadata")
    with pytest.raises(gexc.ServiceUnavailable):
        set_metadata(clients, fingerprint, {"k": "v"})  # mutations are not retried
    assert "k" not in fake.instance_metadata(P, Z, "n1")

    fake.faults.fail_operations(
        times=1, status=403, reason="forbidden", message="no", operation_type="setMetadata"
    )
    failed = set_metadata(clients, fingerprint, {"k": "v"})
    assert (failed.status, failed.http_error_status_code) == (Status.DONE, 403)
    assert [(e.code, e.message) for e in failed.error.errors] == [("FORBIDDEN", "no")]
    assert "k" not in fake.instance_metadata(P, Z, "n1")
    assert get(clients).metadata.fingerprint == fingerprint  # nothing changed

    set_metadata(clients, fingerprint, {"k": "v"})  # the faults are spent
    assert fake.instance_metadata(P, Z, "n1") == {"k": "v"}


def test_a_lost_response_is_answered_again_by_request_id(clients: Any, fake: ComputeFake) -> None:
    """The write landed but its answer was lost: the retry with the same requestId gets the
    original operation, not a 412 for the fingerprint the write itself moved."""
    fingerprint = get(clients).metadata.fingerprint
    rid = str(uuid.uuid4())
    fake.faults.fail_requests(times=1, status=503, path_contains="/setMetadata", after_apply=True)
    with pytest.raises(gexc.ServiceUnavailable):
        set_metadata(clients, fingerprint, {"k": "v"}, request_id=rid)
    assert fake.instance_metadata(P, Z, "n1") == {"k": "v"}
    again = set_metadata(clients, fingerprint, {"k": "v"}, request_id=rid)
    assert again.status == Status.DONE and not again.error.errors
    assert len(fake.operations(P)) == 1
    with pytest.raises(gexc.PreconditionFailed):
        set_metadata(clients, fingerprint, {"k": "v"}, request_id=str(uuid.uuid4()))


def test_seeding_rejects_what_the_api_would_not_hold(fake: ComputeFake) -> None:
    with pytest.raises(ValueError, match="already exists"):
        fake.add_instance(P, Z, "n1")
    with pytest.raises(ValueError, match="metadata key"):
        fake.add_instance(P, Z, "n9", metadata={"not a key": "v"})
    with pytest.raises(ValueError):
        fake.add_instance(P, Z, "n9", network_ip="10.0.0.300")
