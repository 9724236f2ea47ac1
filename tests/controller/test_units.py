"""Small pieces of the controller that need no server: the cache's notion of change and
freshness, the coalescing trigger, durations and booleans as Kubernetes components take them."""

from __future__ import annotations

import argparse
import threading

import pytest

from lbhc.controller.trigger import Trigger
from lbhc.durations import duration_text, parse_bool, parse_duration
from lbhc.kube.cache import ClusterCache
from lbhc.kube.resources import Resource
from lbhc.model.cluster import Node


def node_json(rv: str, **extra: object) -> Node:
    body: dict[str, object] = {"metadata": {"name": "n1", "resourceVersion": rv}}
    body.update(extra)
    return Node.model_validate(body)


def test_heartbeat_is_not_a_change_but_readiness_and_a_taint_are() -> None:
    cache = ClusterCache("uid")
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-25T10:00:00Z"}
    cache.replace(Resource.NODES, [node_json("1", status={"conditions": [ready]})])
    # A heartbeat: new resourceVersion and heartbeat time, the same Ready status.
    beat = {**ready, "lastHeartbeatTime": "2026-11-25T10:00:10Z"}
    heartbeat = node_json("2", status={"conditions": [beat]})
    assert cache.apply(Resource.NODES, "MODIFIED", heartbeat) is False
    not_ready = node_json("2", status={"conditions": [{**beat, "status": "False"}]})
    assert cache.apply(Resource.NODES, "MODIFIED", not_ready) is True
    assert cache.apply(Resource.NODES, "MODIFIED", heartbeat) is True
    tainted = node_json(
        "3", spec={"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}
    )
    assert cache.apply(Resource.NODES, "MODIFIED", tainted) is True
    assert cache.apply(Resource.NODES, "DELETED", tainted) is True
    assert cache.apply(Resource.NODES, "DELETED", tainted) is False


def test_snapshot_has_gaps_until_synced_and_while_a_watch_is_down() -> None:
    cache = ClusterCache("uid")
    assert len(cache.snapshot().gaps) == 3 and not cache.snapshot().versions_complete
    for resource in Resource:
        cache.replace(resource, [])
    assert cache.snapshot().complete and cache.snapshot().versions_complete
    cache.mark_problem(Resource.SERVICES, "watch failed: HTTP 500")
    snapshot = cache.snapshot()
    assert snapshot.gaps == ("services watch failed: HTTP 500",)
    assert snapshot.versions_complete  # nodes and pods are still current
    cache.mark_problem(Resource.NODES, "relist in progress")
    assert not cache.snapshot().versions_complete
    cache.mark_connected(Resource.NODES)
    cache.mark_connected(Resource.SERVICES)
    assert cache.snapshot().complete


def test_an_undecodable_object_is_a_gap_until_readable_or_deleted() -> None:
    cache = ClusterCache("uid")
    for resource in Resource:
        cache.replace(resource, [])
    cache.apply(Resource.NODES, "ADDED", node_json("1"))
    # Its next version cannot be read: the old one is no longer current, so it goes.
    assert cache.mark_undecodable(Resource.NODES, "n1", "spec.taints.0.key: Field required")
    snapshot = cache.snapshot()
    assert snapshot.nodes == ()
    assert snapshot.gaps == (
        "nodes: 1 object(s) could not be decoded (n1: spec.taints.0.key: Field required)",
    )
    assert not snapshot.versions_complete
    assert not cache.mark_undecodable(Resource.NODES, "n1", "spec.taints.0.key: Field required")
    assert cache.apply(Resource.NODES, "MODIFIED", node_json("3"))  # readable again
    assert cache.snapshot().complete and cache.snapshot().versions_complete
    cache.mark_undecodable(Resource.NODES, "n1", "bad")
    assert cache.forget(Resource.NODES, "n1")  # deleted while unreadable
    assert cache.snapshot().complete and not cache.forget(Resource.NODES, "n1")
    cache.replace(Resource.SERVICES, [], {"default/web": "metadata.annotations.x: bad"})
    assert cache.snapshot().gaps == (
        "services: 1 object(s) could not be decoded (default/web: metadata.annotations.x: bad)",
    )
    assert cache.snapshot().versions_complete  # a Service says nothing about versions


def test_trigger_coalesces_a_burst_into_one_wakeup() -> None:
    trigger = Trigger()
    for i in range(50):
        trigger.fire(f"event {i}")
    reasons = trigger.wait(timeout=1.0, coalesce=0.0)
    assert len(reasons) == 50
    assert trigger.wait(timeout=0.05, coalesce=0.0) == []


def test_trigger_wakes_a_waiting_loop() -> None:
    trigger = Trigger()
    got: list[list[str]] = []
    waiter = threading.Thread(target=lambda: got.append(trigger.wait(timeout=10.0, coalesce=0.0)))
    waiter.start()
    trigger.fire("service added")
    waiter.join(timeout=5)
    assert got == [["service added"]]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("250ms", 0.25), ("1.5s", 1.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(300.0, "5m"), (3600.0, "1h"), (5400.0, "90m"), (2.0, "2s"), (90.0, "90s"), (0.25, "250ms")],
)
def test_a_duration_is_shown_as_it_is_written_and_reads_back(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["30", "5 m", "m", "", "1d", "-5s"])
def test_invalid_durations_say_what_is_expected(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="like 30s, 5m or 1h30m"):
        parse_duration(text)


@pytest.mark.parametrize(("text", "value"), [("true", True), ("false", False), ("0", False)])
def test_booleans(text: str, value: bool) -> None:
    assert parse_bool(text) is value


def test_run_flags_follow_kubernetes_conventions() -> None:
    from lbhc.cli.parser import build_parser

    args = build_parser().parse_args(
        [
            "run",
            "--leader-elect=false",
            "--dry-run",
            "--resync-period",
            "30s",
            "--leader-elect-lease-duration",
            "20s",
        ]
    )
    assert (args.leader_elect, args.dry_run, args.resync_period) == (False, True, 30.0)
    assert args.leader_elect_lease_duration == 20.0
    # Not given: None, so LBHC_* and the file decide, then the settings model's defaults.
    defaults = build_parser().parse_args(["run"])
    assert (defaults.leader_elect, defaults.dry_run, defaults.log_format) == (None, None, None)
    from lbhc.settings import Settings

    model = Settings(gce={"project": "p", "region": "us-central1", "node_tags": ["t"]})
    assert (model.leader_election.enabled, model.controller.dry_run, model.log.format) == (
        True,
        False,
        "json",
    )


def test_closing_the_trigger_ends_a_backoff_wait_at_once() -> None:
    import time

    trigger = Trigger()
    trigger.delay_until(time.monotonic() + 60)  # a failed pass asked for a long backoff
    trigger.fire("retry after failure")
    closer = threading.Timer(0.1, trigger.close)
    closer.start()
    started = time.monotonic()
    trigger.wait(timeout=120, coalesce=0.0)
    assert time.monotonic() - started < 10  # shutdown did not wait out the backoff


def test_lease_seconds_round_up_so_no_one_takes_over_early() -> None:
    from lbhc.controller.leader import LeaseConfig

    config = LeaseConfig(
        "ns", "lbhc", "me", lease_duration=1.9, renew_deadline=1.5, retry_period=0.5
    )
    assert config.lease_seconds == 2 > config.renew_deadline
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        LeaseConfig("ns", "lbhc", "me", lease_duration=10, renew_deadline=10, retry_period=2)
