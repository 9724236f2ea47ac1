"""Clusters without kube-proxy: a known replacement (Cilium, GKE Dataplane V2) is named, the
check goes only where a probe or the setting says the port answers, and drain verdicts follow
what the replacement is documented to do (lbhc/planner/replacement.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lbhc.controller.awareness import KubeProxyReporter
from lbhc.controller.events import ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.model.cluster import HealthProbe, Node
from lbhc.model.plan import Action, FindingKind
from lbhc.planner.config import FallbackPolicy, ReplacementHealthz
from lbhc.planner.drain import DrainState
from lbhc.planner.kube_proxy import nodes_to_probe
from lbhc.planner.planner import plan
from lbhc.planner.versions import VersionSource
from tests.builders import (
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    config,
    kube_proxy_pod,
    names,
    node,
    our_check,
    our_firewall,
    pool_for,
    service,
)

_, NAME, URL = names()
WEB = service("web")
A = node("a", internal_ip="10.0.0.1")
TAINTED = node("b", taints=TO_BE_DELETED, taint_value="1795306688", internal_ip="10.0.0.2")
DELETED = node("b", deleting=True, internal_ip="10.0.0.2")
IDLE = node("b", internal_ip="10.0.0.2")


def answers(healthz: int | None, *, refused: bool = False, marked: bool = False) -> HealthProbe:
    """What the probe saw: Cilium serves /healthz only, so /livez is the mux's 404."""
    livez = 404 if healthz else None
    return HealthProbe("10.0.0.1:10256", livez, healthz, refused=refused, node_marked=marked)


@dataclass(frozen=True)
class Case:
    id: str
    replacement: str | None
    b: Node
    probes: dict[str, HealthProbe] = field(default_factory=dict)
    setting: ReplacementHealthz = ReplacementHealthz.AUTO
    assume: bool = False  # fallback_policy: assume-version v1.31.0
    kube_proxy: bool = False  # kube-proxy Pods exist too
    fallback: bool = False
    drain: DrainState | None = None  # b's verdict (None: not asserted)
    replaced_by: str = ""  # b's verdict is unknown only because of this
    reason: str = ""  # in b's drain reason
    shown: str | None = None  # status's kubeProxyReplacement


CASES = [
    Case(
        "cilium-no-probe-attaches-nowhere",
        "cilium",
        TAINTED,
        fallback=True,
        drain=DrainState.NOT_DRAINING,
        reason="not for the cluster-autoscaler's taint",
        shown="cilium",
    ),
    Case(
        "cilium-probed-taint-is-not-draining",
        "cilium",
        TAINTED,
        probes={"a": answers(200), "b": answers(200, marked=True)},
        drain=DrainState.NOT_DRAINING,
        reason="only once the Node is being deleted (deletionTimestamp)",
        shown="cilium",
    ),
    Case(
        "cilium-probed-deletion-timestamp-drains",
        "cilium",
        DELETED,
        probes={"a": answers(200), "b": answers(503, marked=True)},
        drain=DrainState.DRAINING,
        reason="fails /healthz while the Node has a deletionTimestamp",
        shown="cilium",
    ),
    Case(
        "cilium-yes-deletion-timestamp-drains",
        "cilium",
        DELETED,
        setting=ReplacementHealthz.YES,
        drain=DrainState.DRAINING,
        shown="cilium",
    ),
    Case(
        "cilium-no-deletion-timestamp-unknown-without-a-probe",
        "cilium",
        DELETED,
        fallback=True,
        drain=DrainState.UNKNOWN,
        replaced_by="cilium",
        shown="cilium",
    ),
    Case(
        "cilium-bind-address-unset-refuses",
        "cilium",
        IDLE,
        probes={"a": answers(None, refused=True), "b": answers(None, refused=True)},
        fallback=True,
        drain=DrainState.SERVING,
        shown="cilium",
    ),
    Case(
        "cilium-setting-no",
        "cilium",
        IDLE,
        setting=ReplacementHealthz.NO,
        fallback=True,
        drain=DrainState.SERVING,
        shown="cilium",
    ),
    Case(
        "cilium-assume-version-claims-no-taint-drain",
        "cilium",
        TAINTED,
        assume=True,
        drain=DrainState.NOT_DRAINING,
        shown="cilium",
    ),
    Case(
        "anetd-yes-is-unknown-not-per-node",
        "anetd",
        TAINTED,
        setting=ReplacementHealthz.YES,
        drain=DrainState.UNKNOWN,
        replaced_by="anetd",
        reason="GKE does not publish what anetd serves on port 10256",
        shown="anetd",
    ),
    Case(
        "anetd-probed-answers",
        "anetd",
        DELETED,
        probes={"a": answers(200), "b": answers(503, marked=True)},
        drain=DrainState.UNKNOWN,
        replaced_by="anetd",
        shown="anetd",
    ),
    Case(
        "anetd-no-probe-attaches-nowhere",
        "anetd",
        TAINTED,
        fallback=True,
        drain=DrainState.UNKNOWN,
        replaced_by="anetd",
        shown="anetd",
    ),
    # Nothing known: as before, the kubelet's hint (1.31) says /healthz is served.
    Case("nothing-known", None, TAINTED, drain=DrainState.UNKNOWN),
    # A kube-proxy found always wins over a DaemonSet named like a replacement.
    Case("kube-proxy-found-wins", "cilium", TAINTED, kube_proxy=True, drain=DrainState.DRAINING),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kube_proxy_replacement(case: Case) -> None:
    pods = (
        tuple(kube_proxy_pod(n, image="registry.k8s.io/kube-proxy:v1.31.4") for n in ("a", "b"))
        if case.kube_proxy
        else ()
    )
    snapshot = cluster(
        services=(WEB,),
        nodes=(A, case.b),
        pods=pods,
        probes=case.probes,
        replacement=case.replacement,
    )
    fallback = {"fallback_policy": FallbackPolicy.ASSUME_VERSION, "assumed_version": (1, 31, 0)}
    cfg = config(replacement_serves_healthz=case.setting, **(fallback if case.assume else {}))
    the_cloud = cloud(check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB),))
    the_plan = plan(snapshot, the_cloud, cfg)

    assert (the_plan.fallback is not None) is case.fallback, the_plan.fallback
    attaches = [c for c in the_plan.changes if c.action is Action.ATTACH]
    assert bool(attaches) is not case.fallback
    if case.fallback and case.shown:
        assert "replacement_serves_healthz" in the_plan.fallback.reason  # type: ignore[union-attr]
    replaced = the_plan.count(FindingKind.KUBE_PROXY_REPLACED)
    assert replaced == (1 if case.shown else 0)

    attached = cloud(
        check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB, health_checks=(URL,)),)
    )
    report = assessed(snapshot, attached, cfg)
    assert report.to_json()["kubeProxyReplacement"] == case.shown
    b = report.nodes[1]
    if case.shown:
        assert b.kube_proxy.source is VersionSource.REPLACEMENT
        assert case.shown in b.kube_proxy.version.display()
        assert report.kube_proxy.message.startswith("no kube-proxy Pods: kube-proxy is replaced")
    if case.drain is not None:
        assert b.drain.state is case.drain, b.drain.reason
    assert b.drain.replaced_by == case.replaced_by
    assert case.reason in b.drain.reason


def test_the_probe_asks_every_node_only_while_the_setting_leaves_it_to_the_probe() -> None:
    snapshot = cluster(nodes=(A, IDLE), replacement="cilium")
    assert set(nodes_to_probe(snapshot, config())) == {"a", "b"}
    for setting in (ReplacementHealthz.YES, ReplacementHealthz.NO):
        assert nodes_to_probe(snapshot, config(replacement_serves_healthz=setting)) == {}


def test_the_metric_names_the_replacement_and_counts_unknowns_it_causes() -> None:
    snapshot = cluster(services=(WEB,), nodes=(A, TAINTED), replacement="anetd")
    attached = cloud(
        check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB, health_checks=(URL,)),)
    )
    report = assessed(snapshot, attached, config(replacement_serves_healthz=ReplacementHealthz.YES))
    metrics, events = Metrics(), []
    reporter = KubeProxyReporter(metrics, events.append, ObjectRef("Lease", "lbhc", "lbhc-system"))
    reporter.observe(report)
    value = metrics.registry.get_sample_value
    assert value("lbhc_kube_proxy_replacement", {"name": "anetd"}) == 1
    assert value("lbhc_node_drain_unknown_replaced") == 1
    assert value("lbhc_node_drain_state", {"state": "unknown"}) == 1
    # The per-node Event is information: KubeProxyReplaced says it once for the cluster.
    assert [(e.reason, e.type) for e in events if e.reason == "DrainUnknown"] == [
        ("DrainUnknown", "Normal")
    ]
    reporter.reset()
    assert value("lbhc_kube_proxy_replacement", {"name": "anetd"}) is None
