"""The enforce mode's care, as a table over a recording patcher (a fake that records calls),
and the patch's optimistic concurrency against the kube-apiserver fake over HTTP."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.controller.awareness import KubeProxyReporter
from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.controller.readiness_enforcer import ReadinessEnforcer
from lbhc.kube.client import KubeApi, KubeConfig, make_api_client
from lbhc.planner.readiness import ProbePatch
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import kube_proxy_daemonset, namespace

PATCH = ProbePatch("kube-system", "kube-proxy", "7", "kube-proxy", "/livez")
LBHC_COVERAGE = {"coverage": "lbhc", "load_balancer": "target-pool"}


@dataclass
class RecordingPatcher:
    fail_with: int | None = None
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def patch_daemonset(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((namespace, name, body))
        if self.fail_with is not None:
            raise ApiException(status=self.fail_with, reason="refused")
        return {}


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def enforcer(
    patcher: RecordingPatcher, clock: Clock, *, leader: bool = True, settle: float = 30.0
) -> tuple[ReadinessEnforcer, list[EventSpec], list[str]]:
    events: list[EventSpec] = []
    passes: list[str] = []
    made = ReadinessEnforcer(
        patcher,
        Metrics(),
        events.append,
        lambda: leader,
        passes.append,
        settle_sec=settle,
        clock=clock,
    )
    return made, events, passes


def test_a_path_must_hold_for_the_settle_time_before_it_is_patched() -> None:
    patcher, clock = RecordingPatcher(), Clock()
    made, events, _ = enforcer(patcher, clock, settle=30)
    assert made.enforce((PATCH,), complete_view=True) and patcher.calls == []
    clock.now += 29
    made.enforce((PATCH,), complete_view=True)
    assert patcher.calls == []
    clock.now += 2
    made.enforce((PATCH,), complete_view=True)
    assert [body for *_, body in patcher.calls] == [PATCH.body()]
    assert [e.reason for e in events] == ["ReadinessProbePatched"]


def test_a_path_that_changes_starts_the_wait_again() -> None:
    patcher, clock = RecordingPatcher(), Clock()
    made, *_ = enforcer(patcher, clock, settle=30)
    made.enforce((PATCH,), complete_view=True)
    clock.now += 20
    made.enforce((), complete_view=True)  # no longer wanted
    clock.now += 20
    made.enforce((PATCH,), complete_view=True)
    assert patcher.calls == []


@pytest.mark.parametrize(
    ("complete", "leader"), [(False, True), (True, False)], ids=["partial-view", "not-leader"]
)
def test_nothing_is_sent_on_a_partial_view_or_without_the_lease(
    complete: bool, leader: bool
) -> None:
    patcher, clock = RecordingPatcher(), Clock()
    made, *_ = enforcer(patcher, clock, leader=leader, settle=0)
    assert made.enforce((PATCH,), complete_view=complete)
    assert patcher.calls == []


def test_at_most_two_patches_per_daemonset_per_hour() -> None:
    patcher, clock = RecordingPatcher(), Clock()
    made, events, _ = enforcer(patcher, clock, settle=0)
    for _ in range(4):  # someone keeps reverting it
        made.enforce((PATCH,), complete_view=True)
        clock.now += 60
    assert len(patcher.calls) == 2
    assert [e.reason for e in events][-1] == "ReadinessPatchRateLimited"
    clock.now += 3600
    made.enforce((PATCH,), complete_view=True)
    assert len(patcher.calls) == 3


@pytest.mark.parametrize(
    ("status", "retry", "reason"),
    [(409, True, "ReadinessPatchConflict"), (403, False, "ReadinessPatchFailed")],
)
def test_only_a_lost_race_asks_for_a_retry(status: int, retry: bool, reason: str) -> None:
    patcher, clock = RecordingPatcher(fail_with=status), Clock()
    made, events, _ = enforcer(patcher, clock, settle=0)
    assert made.enforce((PATCH,), complete_view=True) is not retry
    assert [e.reason for e in events] == [reason]
    assert events[0].type == "Warning"


def test_a_stale_resource_version_is_refused_by_the_api() -> None:
    """The patch carries the resourceVersion lbhc read: a write in between makes it a 409,
    and the DaemonSet keeps the other writer's change."""
    fake = KubeFake()
    fake.upsert(namespace("kube-system"))
    stored = fake.upsert(kube_proxy_daemonset(resource_version="1"))
    read_at = stored["metadata"]["resourceVersion"]
    fake.patch("DaemonSet", "kube-system", "kube-proxy", {"metadata": {"labels": {"x": "y"}}})
    with KubeFakeServer(fake) as server:
        config = KubeConfig(host=server.url)
        api = KubeApi(make_api_client(config), config)
        stale = ProbePatch("kube-system", "kube-proxy", read_at, "kube-proxy", "/livez")
        with pytest.raises(ApiException) as raised:
            api.patch_daemonset("kube-system", "kube-proxy", stale.body())
        assert raised.value.status == 409
        current = fake.get("DaemonSet", "kube-system", "kube-proxy")
        assert current is not None
        fresh = ProbePatch(
            "kube-system",
            "kube-proxy",
            current["metadata"]["resourceVersion"],
            "kube-proxy",
            "/livez",
        )
        api.patch_daemonset("kube-system", "kube-proxy", fresh.body())
    container = fake.get("DaemonSet", "kube-system", "kube-proxy")["spec"]["template"]["spec"][
        "containers"
    ][0]  # type: ignore[index]
    assert container["readinessProbe"] == {"httpGet": {"path": "/livez", "port": 10256}}
    assert container["image"] == "registry.k8s.io/kube-proxy:v1.31.4"  # the rest untouched


def test_losing_the_lease_clears_what_this_replica_said() -> None:
    from tests.planner.test_kube_proxy_awareness import scale_down_report

    metrics = Metrics()
    reporter = KubeProxyReporter(metrics, lambda spec: None, ObjectRef("Lease", "lbhc"))
    reporter.observe(scale_down_report())
    state = {"state": "partially-draining"}
    assert metrics.registry.get_sample_value("lbhc_node_drain_state", state) == 1
    assert metrics.registry.get_sample_value("lbhc_pool_coverage", LBHC_COVERAGE) == 1
    reporter.reset()
    assert metrics.registry.get_sample_value("lbhc_node_drain_state", state) is None
    assert metrics.registry.get_sample_value("lbhc_pool_coverage", LBHC_COVERAGE) is None
    assert (
        metrics.registry.get_sample_value("lbhc_kube_proxy_health_condition", {"status": "False"})
        is None
    )
