"""updateTargetPool as the emulated cloud provider runs it, through the Compute fake over HTTP:
additions before removals, at most maxInstancesPerTargetPoolUpdate instances a call, members
compared by their /zones/ path, each removal recorded as a cut, and the count checked after."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.upstream.compute import USER_AGENT, ComputeWriter
from lbhc.sandbox.upstream.pool_hosts import MAX_INSTANCES_PER_UPDATE, PoolHosts

P, R = "proj", "us-central1"
BASE = "https://www.googleapis.com/compute/v1/"


def vm(name: str, project: str = P) -> str:
    return f"{BASE}projects/{project}/zones/us-central1-a/instances/{name}"


def vms(prefix: str, count: int) -> list[str]:
    return [vm(f"{prefix}{i:04d}") for i in range(count)]


@pytest.fixture
def fake() -> Iterator[tuple[ComputeFake, PoolHosts]]:
    compute = ComputeFake()
    with ComputeFakeServer(compute) as server:
        writer = ComputeWriter(server.url, P, R)
        yield compute, PoolHosts(compute, writer, P, R)
        writer.close()


def calls(compute: ComputeFake) -> list[tuple[str, int]]:
    """(verb, instances in the call) for each membership call, in order."""
    out = []
    for entry in compute.mutating_requests():
        assert entry.user_agent == USER_AGENT and entry.client_id == ""
        out.append((entry.path.rsplit("/", 1)[-1], len((entry.body or {})["instances"])))
    return out


@pytest.mark.parametrize(
    ("desc", "members", "hosts", "expected_calls", "cut"),
    [
        ("nothing to do", [vm("a"), vm("b")], [vm("b"), vm("a")], [], []),
        ("one cut", [vm("a"), vm("b")], [vm("a")], [("removeInstance", 1)], ["b"]),
        (
            "added first, then removed",
            [vm("a"), vm("b")],
            [vm("a"), vm("c")],
            [("addInstance", 1), ("removeInstance", 1)],
            ["b"],
        ),
        (
            "compared by /zones/ path: another project's URL is the same member",
            [vm("a", project="other")],
            [vm("a")],
            [],
            [],
        ),
        (
            "no hosts: every member removed",
            [vm("a"), vm("b")],
            [],
            [("removeInstance", 2)],
            ["a", "b"],
        ),
        (
            "batched by maxInstancesPerTargetPoolUpdate",
            vms("old", MAX_INSTANCES_PER_UPDATE + 1),
            vms("new", MAX_INSTANCES_PER_UPDATE + 2),
            [
                ("addInstance", MAX_INSTANCES_PER_UPDATE),
                ("addInstance", 2),
                ("removeInstance", MAX_INSTANCES_PER_UPDATE),
                ("removeInstance", 1),
            ],
            [f"old{i:04d}" for i in range(MAX_INSTANCES_PER_UPDATE + 1)],
        ),
    ],
)
def test_update(
    fake: tuple[ComputeFake, PoolHosts],
    desc: str,
    members: list[str],
    hosts: list[str],
    expected_calls: list[tuple[str, int]],
    cut: list[str],
) -> None:
    compute, pool_hosts = fake
    compute.add_target_pool(P, R, "pool", instances=members)
    before = time.time()
    pool_hosts.update("pool", hosts)
    assert calls(compute) == expected_calls, desc
    held = compute.target_pools(P, R)["pool"].get("instances", [])
    assert sorted(url.rsplit("/", 1)[-1] for url in held) == sorted(
        url.rsplit("/", 1)[-1] for url in hosts
    )
    assert [c.node for c in pool_hosts.cuts] == cut
    assert all(c.pool == "pool" and before <= c.at <= time.time() for c in pool_hosts.cuts)


def test_a_missing_pool_is_an_error_and_nothing_is_written(
    fake: tuple[ComputeFake, PoolHosts],
) -> None:
    compute, pool_hosts = fake
    with pytest.raises(Exception, match="not found"):
        pool_hosts.update("ghost", [vm("a")])
    assert calls(compute) == []
