"""kube-proxy versions of every odd shape, through the planner as the controller and the CLI
call it: each either parses (the check is attached) or is *unknown* and the fallback names
the node, its raw value and the source that decided; none raises."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lbhc.model.plan import Action, Plan
from lbhc.planner.planner import plan
from tests.builders import cloud, cluster, config, kube_proxy_pod, node, pool_for, service

IMAGE = "registry.k8s.io/kube-proxy"
DIGEST = "@sha256:" + "a" * 64


@dataclass(frozen=True)
class Odd:
    id: str
    image: str | None  # the kube-proxy Pod's image; None: no Pod on the node
    kubelet: str = "v1.31.4"
    field: str = ""  # status.nodeInfo.kubeProxyVersion
    # None: the version is usable and the check attached; else (source, shown) in fallback
    fallback: tuple[str, str] | None = None


ODD = (
    Odd("gke-suffix", f"{IMAGE}:v1.31.4-gke.1072000"),
    Odd("eks-suffix", f"{IMAGE}:v1.29.0-minimal-eksbuild.1"),
    Odd("k3s-suffix", f"{IMAGE}:v1.30.0+k3s1"),
    Odd("digest-only", f"{IMAGE}{DIGEST}"),  # names no version: the kubelet hint decides
    Odd("tag-and-digest", f"{IMAGE}:v1.6.13{DIGEST}", fallback=("pod-image", "v1.6.13")),
    Odd("latest", f"{IMAGE}:latest", fallback=("pod-image", "unknown ('" + IMAGE + ":latest')")),
    Odd("no-tag", IMAGE),
    Odd("empty-tag", f"{IMAGE}:"),
    Odd("registry-port-no-tag", "localhost:5000/kube-proxy"),
    Odd(
        "registry-port-and-tag",
        "localhost:5000/kube-proxy:v1.6.13",
        fallback=("pod-image", "v1.6.13"),
    ),
    Odd("10k-suffix", f"{IMAGE}:v1.31.4-" + "x" * 10_000),
    Odd("10k-junk", f"{IMAGE}:" + "x" * 10_000, fallback=("pod-image", "unknown ('" + IMAGE)),
    Odd("accented", f"{IMAGE}:vé.1", fallback=("pod-image", "unknown (")),
    Odd("emoji", f"{IMAGE}:\U0001f4a5", fallback=("pod-image", "unknown (")),
    Odd("superscript", f"{IMAGE}:v1.\u00b2", fallback=("pod-image", "unknown (")),
    Odd("negative-minor", f"{IMAGE}:v1.-1.0", fallback=("pod-image", "unknown (")),
    # Past uint64, where Kubernetes' own semver parser gives up too.
    Odd("huge-minor", f"{IMAGE}:v1.99999999999999999999.0", fallback=("pod-image", "unknown (")),
    Odd("large-minor", f"{IMAGE}:v1.999999999999999999.0"),
    Odd(
        "kubelet-latest", None, kubelet="latest", fallback=("kubelet-version", "unknown ('latest')")
    ),
    Odd("kubelet-empty", None, kubelet="", fallback=("none", "unknown")),
    Odd("kubelet-k3s", None, kubelet="v1.31.4+k3s1"),
    Odd("kubelet-10k-suffix", None, kubelet="v1.31.4-" + "z" * 10_000),
    # The node field is only the kubelet's version (KEP-4004): the kubelet's own one is read
    # first, so junk or an old value there changes nothing.
    Odd("field-junk", None, field="not-a-version"),
    Odd("field-old", None, field="v1.6.13"),
    Odd(
        "field-old-no-kubelet",
        None,
        kubelet="",
        field="v1.6.13",
        fallback=("node-kube-proxy-version", "1.3-1.6 (kubelet hint)"),
    ),
)


def plan_for(odd: Odd) -> Plan:
    the_node = node(odd.id, kubelet=odd.kubelet, kube_proxy_field=odd.field)
    pods = (kube_proxy_pod(odd.id, image=odd.image),) if odd.image is not None else ()
    web = service("web")
    return plan(
        cluster(nodes=(node("good"), the_node), services=(web,), pods=pods),
        cloud(pools=(pool_for(web),)),
        config(),
    )


@pytest.mark.parametrize("odd", ODD, ids=[o.id for o in ODD])
def test_an_odd_version_is_parsed_or_named_in_the_fallback(odd: Odd) -> None:
    the_plan = plan_for(odd)
    if odd.fallback is None:
        assert the_plan.fallback is None, the_plan.fallback
        assert Action.ATTACH in {c.action for c in the_plan.changes}
        return
    assert the_plan.fallback is not None
    (named,) = the_plan.fallback.nodes  # the odd node, never the good one
    source, shown = odd.fallback
    assert (named.node, named.source) == (odd.id, source)
    assert named.version.startswith(shown), named.version
    assert Action.ATTACH not in {c.action for c in the_plan.changes}


DIGITS = "1" * 5_000  # Python refuses int() of more than 4,300 digits


@pytest.mark.parametrize(
    "odd",
    [
        Odd("image-5k-digits", f"{IMAGE}:v1.{DIGITS}.0"),
        Odd("kubelet-5k-digits", None, kubelet=f"v1.{DIGITS}"),
        Odd("field-5k-digits", None, field=f"v{DIGITS}.1"),
    ],
    ids=lambda o: o.id,
)
def test_a_version_of_thousands_of_digits_never_raises(odd: Odd) -> None:
    the_plan = plan_for(odd)
    if the_plan.fallback is not None:  # unknown is as good an answer as any: just name it
        assert [n.node for n in the_plan.fallback.nodes] == [odd.id]


def test_unicode_digits_are_not_a_version() -> None:
    the_plan = plan_for(Odd("arabic-indic", f"{IMAGE}:v1.\u0663\u0661.4"))
    assert the_plan.fallback is not None


def test_the_fallback_reason_names_every_node_within_an_event_note() -> None:
    web = service("web")
    nodes = (node("a-junk"), node("b-latest"), node("c-old"))
    pods = (
        kube_proxy_pod("a-junk", image=f"{IMAGE}:" + "x" * 10_000),
        kube_proxy_pod("b-latest", image=f"{IMAGE}:latest"),
        kube_proxy_pod("c-old", image=f"{IMAGE}:v1.6.13"),
    )
    the_plan = plan(
        cluster(nodes=nodes, services=(web,), pods=pods), cloud(pools=(pool_for(web),)), config()
    )
    assert the_plan.fallback is not None
    note = the_plan.fallback.reason[:1024]  # what an Event can carry
    assert all(n.name in note for n in nodes), note[-200:]
