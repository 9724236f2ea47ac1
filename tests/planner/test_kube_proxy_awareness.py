"""Tables for what lbhc tells operators about kube-proxy: fallback policies as old nodes come
and go, each node's drain state, the context-aware kube-proxy health view, the readiness
review, and the status report that puts them together."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from lbhc.model.cluster import DaemonSet, HealthProbe, Node, Pod
from lbhc.model.plan import Action
from lbhc.planner.capabilities import Capabilities, KubeProxyFacts
from lbhc.planner.config import DrainingGate, FallbackPolicy, ReadinessPolicy, UnknownVersionPolicy
from lbhc.planner.drain import DrainState, marked_at, node_drain
from lbhc.planner.kube_proxy import facts_by_node, kube_proxy_pods_by_node
from lbhc.planner.kube_proxy_health import PodHealth, kube_proxy_health
from lbhc.planner.lb_views import LbDrainView, PoolDrainKind
from lbhc.planner.planner import plan
from lbhc.planner.readiness import FindingKind, review_readiness
from lbhc.planner.status import StatusReport
from lbhc.planner.versions import KubeProxyVersion, VersionSource
from tests.builders import (
    TO_BE_DELETED,
    assessed,
    cloud,
    cluster,
    config,
    http_probe,
    kube,
    kube_proxy_daemonset,
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
LOCAL = service("local", policy="Local")
EXCLUDE = {"node.kubernetes.io/exclude-from-external-load-balancers": "true"}


def image(version: str) -> str:
    return f"registry.k8s.io/kube-proxy:{version}"


def attached() -> object:
    return cloud(
        check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB, health_checks=(URL,)),)
    )


# ---- fallback as old nodes join and leave ---------------------------------------------------


def test_fallback_entered_when_an_old_node_joins_and_left_when_it_goes() -> None:
    modern = (node("a", kubelet="v1.31.4"), node("b", kubelet="v1.31.4"))
    old = node("old", kubelet="v1.6.13")
    before = plan(cluster(services=(WEB,), nodes=modern), attached(), config())  # type: ignore[arg-type]
    during = plan(cluster(services=(WEB,), nodes=(*modern, old)), attached(), config())  # type: ignore[arg-type]
    detached = cloud(check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB),))
    after = plan(cluster(services=(WEB,), nodes=modern), detached, config())

    assert before.fallback is None and not before.changes
    assert during.fallback is not None
    assert [n.node for n in during.fallback.nodes] == ["old"]
    assert [(c.action, c.name) for c in during.changes] == [(Action.DETACH, pool_for(WEB).name)]
    assert "old (1.3-1.6 (kubelet hint) from kubelet-version)" in during.changes[0].reason
    assert after.fallback is None
    assert [c.action for c in after.changes] == [Action.ATTACH]


@dataclass(frozen=True)
class PolicyCase:
    id: str
    policy: FallbackPolicy
    assumed: tuple[int, int, int] | None
    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...] = ()
    unknown: UnknownVersionPolicy = UnknownVersionPolicy.FALLBACK
    fallback: bool = False
    warning: str | None = None


POLICY_CASES = [
    PolicyCase("any-old-node: all modern", FallbackPolicy.ANY_OLD_NODE, None, (node("a"),)),
    PolicyCase(
        "any-old-node: one too old",
        FallbackPolicy.ANY_OLD_NODE,
        None,
        (node("a"), node("b", kubelet="v1.7.1")),
        fallback=True,
    ),
    PolicyCase(
        "any-old-node: unknown version falls back by default",
        FallbackPolicy.ANY_OLD_NODE,
        None,
        (node("a"), node("b")),
        pods=(kube_proxy_pod("b", image=image("latest")),),
        fallback=True,
    ),
    PolicyCase(
        "any-old-node: unknown assumed supported when configured",
        FallbackPolicy.ANY_OLD_NODE,
        None,
        (node("a"), node("b")),
        pods=(kube_proxy_pod("b", image=image("latest")),),
        unknown=UnknownVersionPolicy.ASSUME_SUPPORTED,
    ),
    PolicyCase(
        "any-old-node: an excluded old node does not count",
        FallbackPolicy.ANY_OLD_NODE,
        None,
        (node("a"), node("b", kubelet="v1.6.0", labels=EXCLUDE)),
    ),
    PolicyCase(
        "never: stays attached, warns with the node",
        FallbackPolicy.NEVER,
        None,
        (node("a"), node("b", kubelet="v1.6.0")),
        warning="cannot answer it",
    ),
    PolicyCase(
        "assume-version: a replaced kube-proxy with an old kubelet hint",
        FallbackPolicy.ASSUME_VERSION,
        (1, 31, 0),
        (node("a", kubelet="v1.6.0"), node("b", kubelet="")),
    ),
    PolicyCase(
        "assume-version: assuming an old version falls back",
        FallbackPolicy.ASSUME_VERSION,
        (1, 7, 1),
        (node("a"),),
        fallback=True,
    ),
]


@pytest.mark.parametrize("case", POLICY_CASES, ids=lambda c: c.id)
def test_fallback_policies(case: PolicyCase) -> None:
    cfg = config(
        fallback_policy=case.policy,
        assumed_version=case.assumed,
        unknown_version_policy=case.unknown,
    )
    result = plan(cluster(services=(WEB,), nodes=case.nodes, pods=case.pods), attached(), cfg)  # type: ignore[arg-type]
    assert (result.fallback is not None) is case.fallback
    assert any(c.action is Action.DETACH for c in result.changes) is case.fallback
    if case.warning:
        assert any(case.warning in w and "b (" in w for w in result.warnings), result.warnings


# ---- drain states ---------------------------------------------------------------------------


def facts(healthz: bool | None, livez: bool | None, drains: bool | None) -> KubeProxyFacts:
    version = KubeProxyVersion("v1.31.4", VersionSource.POD_IMAGE, (1, 31, 4))
    return KubeProxyFacts(version, Capabilities(healthz, livez, drains))


MODERN, OLD, UNSURE = facts(True, True, True), facts(True, False, False), facts(True, True, None)
# A node in one pool carrying a kube-proxy /healthz check, or in one carrying none.
HEALTHZ_POOL = (LbDrainView("a1", "default/web", PoolDrainKind.HEALTHZ, "k8s-x-node", 32),)
UNCHECKED_POOL = (LbDrainView("a1", "default/web", PoolDrainKind.NO_CHECK),)


@pytest.mark.parametrize(
    ("the_node", "kp", "pools", "state"),
    [
        (node(), MODERN, HEALTHZ_POOL, DrainState.SERVING),
        (node(taints=TO_BE_DELETED), MODERN, HEALTHZ_POOL, DrainState.DRAINING),
        (
            node(taints=(("ToBeDeletedByClusterAutoscaler", "NoExecute"),)),
            MODERN,
            HEALTHZ_POOL,
            DrainState.DRAINING,
        ),
        (node(deleting=True), MODERN, HEALTHZ_POOL, DrainState.DRAINING),
        (node(taints=TO_BE_DELETED), OLD, HEALTHZ_POOL, DrainState.NOT_DRAINING),
        (node(deleting=True), OLD, HEALTHZ_POOL, DrainState.NOT_DRAINING),
        (node(taints=TO_BE_DELETED), UNSURE, HEALTHZ_POOL, DrainState.UNKNOWN),
        (node(taints=TO_BE_DELETED), MODERN, UNCHECKED_POOL, DrainState.NOT_DRAINING),
        (node(labels=EXCLUDE, taints=TO_BE_DELETED), MODERN, HEALTHZ_POOL, DrainState.EXCLUDED),
        (
            node(taints=(("DeletionCandidateOfClusterAutoscaler", "PreferNoSchedule"),)),
            MODERN,
            HEALTHZ_POOL,
            DrainState.SERVING,
        ),
        (
            node(taints=(("node.kubernetes.io/unschedulable", "NoSchedule"),)),
            MODERN,
            HEALTHZ_POOL,
            DrainState.SERVING,
        ),
        (
            node(taints=(("karpenter.sh/disrupted", "NoSchedule"),)),
            MODERN,
            HEALTHZ_POOL,
            DrainState.SERVING,
        ),
    ],
    ids=[
        "plain",
        "autoscaler-taint",
        "taint-effect-irrelevant",
        "deletion-timestamp",
        "too-old-to-drain",
        "too-old-deleting",
        "gate-unknown",
        "no-check-on-its-pool",
        "excluded-wins",
        "deletion-candidate-does-not-drain",
        "unschedulable-does-not-drain",
        "karpenter-disrupted-does-not-drain",
    ],
)
def test_drain_state(
    the_node: Node, kp: KubeProxyFacts, pools: tuple[LbDrainView, ...], state: DrainState
) -> None:
    assert node_drain(the_node, kp, pools).state is state


def test_marked_at_reads_the_autoscaler_taint_value_as_unix_seconds() -> None:
    tainted = node(taints=TO_BE_DELETED, taint_value="1795306688")
    assert marked_at(tainted) == "2026-11-22T00:18:08Z"
    assert marked_at(node(deleting=True)) == "2026-11-22T00:00:00Z"
    assert marked_at(node(taints=TO_BE_DELETED, taint_value="not-a-time")) == ""


# ---- kube-proxy health view -----------------------------------------------------------------


def health_of(nodes: tuple[Node, ...], pods: tuple[Pod, ...]) -> dict[str, PodHealth]:
    snapshot = cluster(nodes=nodes, pods=pods)
    view = kube_proxy_health(snapshot, kube_proxy_pods_by_node(pods, config()))
    return {status.node: status.state for status in view.pods}


@pytest.mark.parametrize(
    ("the_node", "pod", "state"),
    [
        (node("n"), kube_proxy_pod("n", image=image("v1.31.4")), PodHealth.READY),
        (node("n"), kube_proxy_pod("n", image=image("v1.31.4"), ready=False), PodHealth.UNREADY),
        (
            node("n", taints=TO_BE_DELETED),
            kube_proxy_pod("n", image=image("v1.31.4"), ready=False),
            PodHealth.EXPECTED_UNREADY,
        ),
        (
            node("n", deleting=True),
            kube_proxy_pod("n", image=image("v1.31.4"), ready=False),
            PodHealth.EXPECTED_UNREADY,
        ),
        (
            node("n"),
            kube_proxy_pod("n", image=image("v1.31.4"), ready=False, deleting=True),
            PodHealth.EXPECTED_UNREADY,
        ),
        (
            node("n", taints=(("DeletionCandidateOfClusterAutoscaler", "PreferNoSchedule"),)),
            kube_proxy_pod("n", image=image("v1.31.4"), ready=False),
            PodHealth.UNREADY,
        ),
        (node("n"), None, PodHealth.MISSING),
    ],
    ids=[
        "ready",
        "unready",
        "tainted",
        "deleting",
        "pod-terminating",
        "candidate-is-real",
        "missing",
    ],
)
def test_kube_proxy_pod_states(the_node: Node, pod: Pod | None, state: PodHealth) -> None:
    other = kube_proxy_pod("other", image=image("v1.31.4"))  # so the cluster runs kube-proxy at all
    pods = (other,) if pod is None else (other, pod)
    assert health_of((the_node, node("other")), pods)["n"] is state


def test_health_summary_is_healthy_during_scale_down_and_names_real_problems() -> None:
    nodes = (node("a"), node("b", taints=TO_BE_DELETED), node("c"), node("d"))
    pods = (
        kube_proxy_pod("a", image=image("v1.31.4")),
        kube_proxy_pod("b", image=image("v1.31.4"), ready=False),
        kube_proxy_pod("c", image=image("v1.31.4")),
    )
    scaling = kube_proxy_health(
        cluster(nodes=nodes[:3], pods=pods), kube_proxy_pods_by_node(pods, config())
    )
    assert scaling.healthy is True
    assert scaling.counts() == {"ready": 2, "expected-unready": 1, "unready": 0, "missing": 0}
    assert "1 expected-unready (b)" in scaling.message

    broken = kube_proxy_health(
        cluster(nodes=nodes, pods=pods), kube_proxy_pods_by_node(pods, config())
    )
    assert broken.healthy is False
    assert "1 missing (d)" in broken.message


def test_no_kube_proxy_at_all_is_not_judged() -> None:
    view = kube_proxy_health(cluster(nodes=(node("a"),)), {})
    assert view.healthy is None and "replaced" in view.message


# ---- readiness review -----------------------------------------------------------------------


def readiness_review(
    ds_kwargs: dict[str, object], versions: dict[str, str], **cfg: object
) -> object:
    nodes = tuple(node(n) for n in versions)
    pods = tuple(
        kube_proxy_pod(n, image=image(v), owner_uid="ds-uid-1") for n, v in versions.items()
    )
    snapshot = cluster(nodes=nodes, pods=pods, daemonsets=(kube_proxy_daemonset(**ds_kwargs),))  # type: ignore[arg-type]
    the_config = config(**cfg)
    return review_readiness(snapshot, facts_by_node(snapshot, the_config), the_config)


DIGEST_IMAGE = "registry.k8s.io/kube-proxy@sha256:0f1e"


@pytest.mark.parametrize(
    ("ds", "versions", "kinds", "right"),
    [
        (
            {"readiness": "/healthz"},
            {"a": "v1.31.4", "b": "v1.28.0"},
            [FindingKind.READINESS_ON_HEALTHZ],
            "/livez",
        ),
        ({"readiness": "/livez"}, {"a": "v1.31.4", "b": "v1.28.0"}, [], "/livez"),
        (
            {"readiness": "/healthz", "image": image("v1.27.9")},
            {"a": "v1.27.9", "b": "v1.27.9"},
            [],
            "/healthz",
        ),
        (
            {"readiness": "/livez", "image": image("v1.27.9")},
            {"a": "v1.27.9"},
            [FindingKind.READINESS_LIVEZ_UNSUPPORTED],
            "/healthz",
        ),
        # The template decides (new Pods run it); a Pod not yet replaced is reported.
        (
            {"readiness": "/livez"},
            {"a": "v1.31.4", "b": "v1.27.9"},
            [FindingKind.PODS_ON_OLDER_IMAGE],
            "/livez",
        ),
        (
            {"readiness": "/livez", "liveness": "/healthz"},
            {"a": "v1.31.4"},
            [FindingKind.LIVENESS_ON_HEALTHZ],
            "/livez",
        ),
        (
            {"readiness": None, "liveness": "/healthz", "image": image("v1.27.1")},
            {"a": "v1.27.1"},
            [],
            "/healthz",
        ),
        # A template pinned by digest names no version: the nodes' kube-proxies decide.
        ({"readiness": "/livez", "image": DIGEST_IMAGE}, {"a": "v1.31.4"}, [], "/livez"),
        ({"readiness": "/healthz", "image": DIGEST_IMAGE}, {"a": "v1.31.4", "b": "latest"}, [], ""),
        ({"readiness": "/healthz", "image": DIGEST_IMAGE}, {}, [], ""),
    ],
    ids=[
        "healthz-where-livez-everywhere",
        "livez-right",
        "healthz-right-with-an-old-template",
        "livez-with-an-old-template",
        "template-decides-older-pods-reported",
        "liveness-on-healthz-is-dangerous",
        "liveness-harmless-where-nothing-drains",
        "digest-template-nodes-decide",
        "unknown-version-undecided",
        "no-pods-undecided",
    ],
)
def test_readiness_audit(
    ds: dict[str, object], versions: dict[str, str], kinds: list[FindingKind], right: str
) -> None:
    review = readiness_review(ds, versions)
    assert [f.kind for f in review.findings] == kinds  # type: ignore[attr-defined]
    assert review.right_paths == {"kube-system/kube-proxy": right}  # type: ignore[attr-defined]
    assert review.patches == ()  # type: ignore[attr-defined]  # audit never writes


def test_enforce_patches_only_the_readiness_path_with_its_resource_version() -> None:
    review = readiness_review(
        {"readiness": "/healthz", "liveness": "/healthz", "resource_version": "42"},
        {"a": "v1.31.4"},
        readiness_policy=ReadinessPolicy.ENFORCE,
    )
    (patch,) = review.patches  # type: ignore[attr-defined]
    assert patch.body() == {
        "metadata": {"resourceVersion": "42"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "kube-proxy", "readinessProbe": {"httpGet": {"path": "/livez"}}}
                    ]
                }
            }
        },
    }


@pytest.mark.parametrize(
    ("ds", "cfg"),
    [
        ({"labels": {"app": "something-else"}}, {"readiness_policy": ReadinessPolicy.ENFORCE}),
        ({}, {"readiness_policy": ReadinessPolicy.OFF}),
    ],
    ids=["not-selected", "policy-off"],
)
def test_unmanaged_daemonsets_are_left_alone(ds: dict[str, object], cfg: dict[str, object]) -> None:
    review = readiness_review(ds, {"a": "v1.31.4"}, **cfg)
    assert review.findings == () and review.patches == ()  # type: ignore[attr-defined]


# ---- status report --------------------------------------------------------------------------


def scale_down_report() -> StatusReport:
    """node b marked and draining, c excluded; reused by the controller's metric tests."""
    nodes = (
        node("a"),
        node("b", taints=TO_BE_DELETED, taint_value="1795306688"),
        node("c", labels=EXCLUDE),
    )
    pods = (
        kube_proxy_pod("a", image=image("v1.31.4")),
        kube_proxy_pod("b", image=image("v1.31.4"), ready=False),
        kube_proxy_pod("c", image=image("v1.27.2")),
    )
    snapshot = cluster(services=(WEB, LOCAL, service("new")), nodes=nodes, pods=pods)
    the_cloud = cloud(
        check=our_check(),
        firewall=our_firewall(),
        pools=(pool_for(WEB, health_checks=(URL,)), pool_for(LOCAL), pool_for(service("new"))),
    )
    cfg = config(draining_gate=DrainingGate.UNKNOWN)
    return assessed(snapshot, the_cloud, cfg)


def test_status_reports_services_and_nodes_during_scale_down() -> None:
    report = scale_down_report()
    checks = {s.service: (s.coverage.value, s.lbhc.value) for s in report.services}
    assert checks == {
        "default/web": ("lbhc", "attached"),
        "default/local": ("local", "not-applicable"),
        "default/new": ("none", "pending"),
    }
    # As read: "new" carries no check yet and the Local pool follows endpoints, so only
    # web's pool drains b for now.
    states = {n.node: (n.drain.state, n.pod_state) for n in report.nodes}
    assert states == {
        "a": (DrainState.SERVING, "ready"),
        "b": (DrainState.PARTIALLY_DRAINING, "expected-unready"),
        "c": (DrainState.EXCLUDED, "ready"),
    }
    assert {p.name for p in report.nodes[1].drain.not_draining} == {
        pool_for(LOCAL).name,
        pool_for(service("new")).name,
    }
    assert report.nodes[1].drain.marked_at == "2026-11-22T00:18:08Z"
    assert report.kube_proxy.healthy is True
    assert report.to_json()["drainCounts"]["partially-draining"] == 1


def test_status_in_fallback_says_a_marked_node_is_not_draining() -> None:
    nodes = (node("a", taints=TO_BE_DELETED), node("old", kubelet="v1.6.0"))
    snapshot = cluster(services=(WEB,), nodes=nodes)
    the_cloud = cloud(check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB),))
    report = assessed(snapshot, the_cloud)
    assert report.fallback is not None and not report.check_in_use
    assert report.nodes[0].drain.state is DrainState.NOT_DRAINING
    (web,) = report.services
    assert web.lbhc.value == "not-attached" and web.reason.startswith("fallback:")


# ---- cases from review: hostile values, probes of leaving nodes, sidecars, grace -----------


@pytest.mark.parametrize("value", ["99999999999999999999", "1" * 400, "-5", "", "soon"])
def test_any_taint_value_is_survived(value: str) -> None:
    tainted = node(taints=TO_BE_DELETED, taint_value=value)
    assert marked_at(tainted) == ""
    assert node_drain(tainted, MODERN, HEALTHZ_POOL).state is DrainState.DRAINING


def test_a_leaving_node_that_stops_answering_probes_does_not_cause_fallback() -> None:
    refused = HealthProbe("10.0.0.9:10256", None, None, refused=True)
    leaving = node("leaving", kubelet="", taints=TO_BE_DELETED, internal_ip="10.0.0.9")
    staying = node("staying", kubelet="", internal_ip="10.0.0.8")
    snapshot = cluster(services=(WEB,), nodes=(leaving, node("a")), probes={"leaving": refused})
    assert plan(snapshot, attached(), config()).fallback is None  # type: ignore[arg-type]
    snapshot = cluster(services=(WEB,), nodes=(staying, node("a")), probes={"staying": refused})
    assert plan(snapshot, attached(), config()).fallback is not None  # type: ignore[arg-type]


def test_policy_never_marks_a_node_without_health_server_as_draining() -> None:
    no_server = facts(False, False, False)
    assert (
        node_drain(node(taints=TO_BE_DELETED), no_server, HEALTHZ_POOL).state is DrainState.DRAINING
    )


def with_containers(*containers: dict[str, object], image: str = "") -> dict[str, object]:
    ds = kube.kube_proxy_daemonset()
    spec = ds["spec"]["template"]["spec"]
    spec["containers"] = list(containers)
    if image:
        spec["containers"][0]["image"] = image
    return ds


@pytest.mark.parametrize(
    ("containers", "patched"),
    [
        (
            [
                {
                    "name": "kube-proxy",
                    "image": image("v1.31.4"),
                    "readinessProbe": http_probe("/livez"),
                },
                {"name": "sidecar", "readinessProbe": http_probe("/healthz")},
            ],
            [],
        ),
        (
            [
                {
                    "name": "kube-proxy",
                    "image": image("v1.31.4"),
                    "readinessProbe": http_probe("/healthz", 8080),
                }
            ],
            [],
        ),
        (
            [
                {
                    "name": "kube-proxy",
                    "image": image("v1.31.4"),
                    "readinessProbe": http_probe("/healthz", "health"),
                }
            ],
            [],
        ),
        (
            [
                {
                    "name": "kube-proxy",
                    "image": image("v1.27.3"),
                    "readinessProbe": http_probe("/healthz"),
                }
            ],
            [],
        ),
        (
            [
                {
                    "name": "kube-proxy",
                    "image": image("v1.31.4"),
                    "readinessProbe": http_probe("/healthz"),
                }
            ],
            ["/livez"],
        ),
    ],
    ids=[
        "sidecar-never-judged",
        "other-port",
        "named-port",
        "template-older-than-1.28",
        "kube-proxy-itself",
    ],
)
def test_enforce_touches_only_kube_proxys_health_probe(
    containers: list[dict[str, object]], patched: list[str]
) -> None:
    ds = DaemonSet.model_validate(with_containers(*containers))
    nodes = (node("a"),)
    pods = (kube_proxy_pod("a", image=image("v1.31.4"), owner_uid="ds-uid-1"),)
    snapshot = cluster(nodes=nodes, pods=pods, daemonsets=(ds,))
    cfg = config(readiness_policy=ReadinessPolicy.ENFORCE)
    review = review_readiness(snapshot, facts_by_node(snapshot, cfg), cfg)
    assert [p.path for p in review.patches] == patched
    assert all(f.container == "kube-proxy" for f in review.findings)


def test_enforce_never_acts_on_the_kubelets_hint() -> None:
    ds = kube_proxy_daemonset(readiness="/healthz")
    pods = (
        kube_proxy_pod("a", image="registry.k8s.io/kube-proxy@sha256:00", owner_uid="ds-uid-1"),
    )
    snapshot = cluster(nodes=(node("a", kubelet="v1.33.2"),), pods=pods, daemonsets=(ds,))
    cfg = config(readiness_policy=ReadinessPolicy.ENFORCE)
    review = review_readiness(snapshot, facts_by_node(snapshot, cfg), cfg)
    # The template (v1.31.4) says /livez, but the running Pods are pinned by digest and known
    # only by the kubelet's hint (KEP-4004): enforce never acts on that.
    assert review.right_paths == {"kube-system/kube-proxy": "/livez"}
    assert review.patches == ()


def test_new_nodes_and_pods_get_a_start_up_grace_and_unselected_nodes_need_no_kube_proxy() -> None:
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC).timestamp()
    young, old = "2026-11-22T11:59:00Z", "2026-11-22T11:00:00Z"

    def aged(name: str, created: str, **kwargs: object) -> Node:
        base = node(name, **kwargs).model_dump(by_alias=True)  # type: ignore[arg-type]
        base["metadata"]["creationTimestamp"] = created
        return Node.model_validate(base)

    starting_pod = kube_proxy_pod("b", image=image("v1.31.4"), ready=False).model_dump(
        by_alias=True
    )
    starting_pod["metadata"]["creationTimestamp"] = young
    windows = aged("win", old, labels={"kubernetes.io/os": "windows"})
    nodes = (
        aged("a", old, labels={"kubernetes.io/os": "linux"}),
        aged("b", old, labels={"kubernetes.io/os": "linux"}),
        aged("new", young, labels={"kubernetes.io/os": "linux"}),
        windows,
    )
    pods = (kube_proxy_pod("a", image=image("v1.31.4")), Pod.model_validate(starting_pod))
    ds = with_containers({"name": "kube-proxy", "image": image("v1.31.4")})
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/os": "linux"}
    snapshot = dataclasses.replace(cluster(nodes=nodes, pods=pods), observed_at=now)
    view = kube_proxy_health(
        snapshot, kube_proxy_pods_by_node(pods, config()), (DaemonSet.model_validate(ds),)
    )
    states = {s.node: s.state for s in view.pods}
    assert states == {"a": PodHealth.READY, "b": PodHealth.EXPECTED_UNREADY}
    assert view.healthy is True


def test_a_failed_pod_is_not_the_nodes_kube_proxy() -> None:
    evicted = kube_proxy_pod("a", image=image("v1.6.0")).model_dump(by_alias=True)
    evicted["metadata"]["name"] = "kube-proxy-old"
    evicted["status"]["phase"] = "Failed"
    running = kube_proxy_pod("a", image=image("v1.31.4"))
    for order in ((Pod.model_validate(evicted), running), (running, Pod.model_validate(evicted))):
        chosen = kube_proxy_pods_by_node(order, config())["a"]
        assert chosen.metadata.name == "kube-proxy-a"


def test_kep_4004_a_digest_pinned_kube_proxy_next_to_newer_kubelets_is_not_trusted() -> None:
    """kube-proxy 1.27 pinned by digest on 1.30 kubelets: nodeInfo.kubeProxyVersion says
    1.30 (it always held the kubelet's), yet moving readiness to /livez would 404 on every
    kube-proxy. The hint makes nothing definite: drain is unknown, no patch is planned."""
    digest = "registry.k8s.io/kube-proxy@sha256:5f1c"
    ds_dict = kube.kube_proxy_daemonset(readiness="/healthz", image=digest)
    tainted = node("a", kubelet="v1.30.4", kube_proxy_field="v1.30.4", taints=TO_BE_DELETED)
    snapshot = cluster(
        nodes=(tainted,),
        services=(WEB,),
        pods=(kube_proxy_pod("a", image=digest, owner_uid="ds-uid-1"),),
        daemonsets=(DaemonSet.model_validate(ds_dict),),
    )
    cfg = config(readiness_policy=ReadinessPolicy.ENFORCE)
    world = cloud(
        check=our_check(), firewall=our_firewall(), pools=(pool_for(WEB, health_checks=(URL,)),)
    )
    report = assessed(snapshot, world, cfg)
    (facts,) = (n.kube_proxy for n in report.nodes)
    assert facts.version.display() == "1.27-1.30 (kubelet hint)"
    assert (
        facts.capabilities.serves_livez is None and facts.capabilities.drains_when_deleted is None
    )
    assert "pinned by digest" in facts.note
    assert report.nodes[0].drain.state is DrainState.UNKNOWN
    assert report.readiness.patches == ()
