"""The kill -9 trials' own instruments, shown to work: the kill switch kills at the moment
it claims (against a stand-in victim process), and the judge sees the failures the trials
exist to catch (written by hand through the fake's API, as a misbehaving lbhc would)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from lbhc.planner.shared import ownership_description
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from tests.chaos import kill9_checks as checks
from tests.chaos.kill9_monitor import SafetyMonitor
from tests.chaos.kill9_scenario import Scenario, build
from tests.chaos.kill9_switch import (
    HookedComputeServer,
    KillPoint,
    KillSwitch,
    Moment,
    is_mutation,
    phase_of,
)
from tests.chaos.kill9_world import (
    CLUSTER_ID,
    DESIRED_FIREWALL,
    Seeded,
    insert_firewall,
    seed_world,
)
from tests.chaos.process import LbhcProcess
from tests.controller.harness import NAME, PROJECT, REGION, URL
from tests.waiting import wait_for

BASE = f"/compute/v1/projects/{PROJECT}"


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[LbhcProcess]:
    """A process to kill that is not lbhc: the switch's semantics, not lbhc's, are tested."""
    popen = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    process = LbhcProcess("victim", popen, tmp_path / "victim.log")
    try:
        yield process
    finally:
        process.kill9()


def _post(url: str, path: str, body: dict[str, object]) -> requests.Response:
    return requests.post(url + path, json=body, headers={"x-lbhc-client-id": "victim"}, timeout=30)


def _check(name: str) -> dict[str, object]:
    return {"name": name, "port": 10256, "requestPath": "/healthz"}


@pytest.mark.parametrize(
    ("moment", "lands"), [("unsent", False), ("landed", True), ("polling", True)]
)
def test_the_switch_kills_at_the_kth_mutation_at_its_moment(
    victim: LbhcProcess, moment: Moment, lands: bool
) -> None:
    fake = ComputeFake(operation_latency=0.5 if moment == "polling" else 0.0)
    fake.add_network(PROJECT, "default")
    switch = KillSwitch(URL, fake)
    switch.arm(victim, KillPoint(2, moment))
    with HookedComputeServer(fake, switch) as server:
        assert _post(server.url, f"{BASE}/global/httpHealthChecks", _check("first")).ok
        assert victim.alive()
        second = _post(server.url, f"{BASE}/global/httpHealthChecks", _check("second"))
        if moment == "polling":
            assert victim.alive()  # not yet: at its first look at the operation
            wait = f"{BASE}/global/operations/{second.json()['name']}/wait"
            assert _post(server.url, wait, {}).status_code == 503  # never served
    assert switch.kill is not None and not victim.alive()
    assert (switch.kill.phase, switch.kill.mutations_sent) == ("ensure", 2)
    served = [e.path for e in fake.journal]
    assert served == [f"{BASE}/global/httpHealthChecks"] * (2 if lands else 1)
    if lands:  # the operation outlives its client
        wait_for(lambda: "second" in fake.http_health_checks(PROJECT), what="the insert")
    else:
        assert "second" not in fake.http_health_checks(PROJECT)


def _world(scenario: Scenario) -> tuple[ComputeFake, checks.Untouchable, Seeded]:
    compute = ComputeFake()
    seeded = seed_world(scenario, KubeFake(), compute, seed=1)
    compute.clear_journal()
    return compute, checks.untouchable(compute, scenario, seeded), seeded


def _call(compute: ComputeFake, method: str, path: str, body: object = None) -> None:
    status, _, answer = compute.handle(
        method, path, body=json.dumps(body) if body is not None else b""
    )
    assert status == 200, answer


def test_the_judge_sees_foreign_writes_leaks_and_duplicates() -> None:
    scenario = build(12, "attach")
    assert scenario.check == "absent" and scenario.firewall == "absent"
    compute, before, seeded = _world(scenario)
    stranger = seeded.role("other_cluster")[0]
    _call(
        compute,
        "POST",
        f"{BASE}/regions/{REGION}/targetPools/{stranger}/removeHealthCheck",
        {
            "healthChecks": [
                {"healthCheck": compute.target_pools(PROJECT, REGION)[stranger]["healthChecks"][0]}
            ]
        },
    )
    mark = ownership_description(CLUSTER_ID)
    for method, path, body in (
        ("POST", f"{BASE}/global/httpHealthChecks", {**_check(NAME), "description": mark}),
        ("DELETE", f"{BASE}/global/httpHealthChecks/{NAME}", None),
        ("POST", f"{BASE}/global/httpHealthChecks", {**_check(NAME), "description": mark}),
        ("POST", f"{BASE}/global/httpHealthChecks", {**_check("lbhc-leak"), "description": mark}),
    ):
        _call(compute, method, path, body)
    verdict = checks.touched(before, checks.untouchable(compute, scenario, seeded), compute.journal)
    assert f"pool:{stranger} changed" in verdict.foreign_touched
    assert any(stranger in p and "removeHealthCheck" in p for p in verdict.foreign_touched)
    assert verdict.churn == []
    assert "leaked HttpHealthCheck lbhc-leak" in checks.leaked(compute, scenario, seeded)
    assert f"missing Firewall {NAME}" in checks.missing(compute, scenario, seeded)
    assert checks.duplicates(compute) == [f"httpHealthChecks/{NAME} inserted 2 times"]


def test_the_kth_operation_can_be_made_to_outlive_the_victim(victim: LbhcProcess) -> None:
    fake = ComputeFake(operation_latency=0.0)
    switch = KillSwitch(URL, fake)
    switch.arm(victim, KillPoint(1, "landed", latency=30.0))
    with HookedComputeServer(fake, switch) as server:
        answer = _post(server.url, f"{BASE}/global/httpHealthChecks", _check("slow")).json()
        assert answer["status"] != "DONE" and not victim.alive()
        assert _post(server.url, f"{BASE}/global/httpHealthChecks", _check("fast")).ok
    assert fake.operation_latency == 0.0  # only the k-th operation was slowed
    assert set(fake.http_health_checks(PROJECT)) == {"fast"}
    assert switch.kill is not None and switch.kill.landed_at is not None


def test_the_monitor_sees_a_check_through_a_closed_port_and_a_firewall_pulled_under_it() -> None:
    scenario = build(12, "attach")
    compute, _, seeded = _world(scenario)
    monitor = SafetyMonitor(compute)
    mark = ownership_description(CLUSTER_ID)
    _call(compute, "POST", f"{BASE}/global/httpHealthChecks", {**_check(NAME), "description": mark})
    monitor.check()
    assert monitor.violations == []  # a check nobody uses yet probes nothing
    pool = seeded.role("attach")[0]
    attach = f"{BASE}/regions/{REGION}/targetPools/{pool}/addHealthCheck"
    _call(compute, "POST", attach, {"healthChecks": [{"healthCheck": URL}]})
    monitor.check()
    assert monitor.violations == [f"pool {pool} carries our check while our firewall is absent"]
    insert_firewall(compute, NAME, {**DESIRED_FIREWALL, "description": mark})
    monitor.check()
    _call(compute, "DELETE", f"{BASE}/global/firewalls/{NAME}")
    monitor.check()
    assert monitor.violations[1:] == [f"firewall gone while pools ['{pool}'] carry the check"]


@pytest.mark.parametrize(
    ("method", "path", "body", "phase"),
    [
        ("POST", f"{BASE}/global/firewalls?requestId=r", b"{}", "ensure"),
        ("PUT", f"{BASE}/global/httpHealthChecks/{NAME}?requestId=r", b"{}", "ensure"),
        (
            "POST",
            f"{BASE}/regions/{REGION}/targetPools/p/addHealthCheck?requestId=r",
            b"",
            "attach",
        ),
        ("POST", f"{BASE}/regions/r/targetPools/p/removeHealthCheck", URL.encode(), "detach"),
        ("POST", f"{BASE}/regions/r/targetPools/p/removeHealthCheck?requestId=r", b"x", "replace"),
        ("DELETE", f"{BASE}/global/firewalls/{NAME}?requestId=r", b"", "delete"),
    ],
)
def test_mutations_are_told_apart_by_step(method: str, path: str, body: bytes, phase: str) -> None:
    assert is_mutation(method, path)
    assert phase_of(method, path, body, URL) == phase


def test_operation_waits_and_get_health_are_not_mutations() -> None:
    assert not is_mutation("POST", f"{BASE}/global/operations/op-1/wait?alt=json")
    assert not is_mutation("POST", f"{BASE}/regions/r/targetPools/p/getHealth?alt=json")
    assert not is_mutation("GET", f"{BASE}/global/firewalls/{NAME}")
