"""The fake's list semantics, checked through the real kubernetes client: list shape, selectors,
limit/continue paging and resourceVersions, as the real apiserver serves them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.sandbox.kube_fake import KubeFake, decode_continue
from tests.builders.kube import kube_proxy_pod, namespace, node, pod, service
from tests.kube_fixtures import raw, seed, status_body

Lister = Callable[..., Any]


def listers(core: Any) -> dict[str, Lister]:
    return {
        "nodes": core.list_node,
        "services": core.list_service_for_all_namespaces,
        "pods": core.list_pod_for_all_namespaces,
        "namespaces": core.list_namespace,
        "kube-system pods": lambda **kw: core.list_namespaced_pod("kube-system", **kw),
        "shop services": lambda **kw: core.list_namespaced_service("shop", **kw),
    }


def call(lister: Lister, **kwargs: Any) -> Any:
    return raw(lister(_preload_content=False, **kwargs))


def names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


@pytest.fixture
def seeded(kube_fake: KubeFake) -> KubeFake:
    seed(
        kube_fake,
        namespace("shop"),
        node("n2"),
        node("n1", labels={"pool": "a", "zone": "z1"}),
        node("n3", labels={"pool": "b"}),
        service("web", namespace="shop"),
        service("api", namespace="default"),
        service("db", namespace="shop", type_="ClusterIP"),
        kube_proxy_pod("n1"),
        kube_proxy_pod("n2", version="v1.30.0"),
        pod("coredns", node_name="n1", labels={"k8s-app": "kube-dns"}, container="coredns"),
        pod("pending", namespace="shop", labels={"app": "web"}, phase="Pending"),
    )
    return kube_fake


@pytest.mark.parametrize(
    ("which", "kind", "expected"),
    [
        ("nodes", "NodeList", ["n1", "n2", "n3"]),
        ("services", "ServiceList", ["api", "db", "web"]),  # default/api, shop/db, shop/web
        ("pods", "PodList", ["coredns", "kube-proxy-n1", "kube-proxy-n2", "pending"]),
        ("namespaces", "NamespaceList", ["default", "kube-system", "shop"]),
        ("kube-system pods", "PodList", ["coredns", "kube-proxy-n1", "kube-proxy-n2"]),
        ("shop services", "ServiceList", ["db", "web"]),
    ],
)
def test_list_shape_and_order(
    seeded: KubeFake, core: Any, which: str, kind: str, expected: list[str]
) -> None:
    body = call(listers(core)[which])

    assert (body["kind"], body["apiVersion"]) == (kind, "v1")
    assert body["metadata"] == {"resourceVersion": seeded.resource_version}
    assert names(body) == expected
    # Typed lists carry no per-item kind/apiVersion, exactly as the real API.
    assert all("kind" not in i and "apiVersion" not in i for i in body["items"])
    assert all(i["metadata"]["resourceVersion"] and i["metadata"]["uid"] for i in body["items"])


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", ["n1", "n2", "n3"]),
        ("pool=a", ["n1"]),
        ("pool==b", ["n3"]),
        ("pool!=a", ["n2", "n3"]),  # != also matches nodes without the label
        ("pool", ["n1", "n3"]),
        ("!pool", ["n2"]),
        ("pool=a,zone=z1", ["n1"]),
        ("pool=b,zone", []),
        ("pool in (a, b)", ["n1", "n3"]),
        ("pool notin (a)", ["n2", "n3"]),
        ("pool notin (a),kubernetes.io/os", ["n2"]),
        ("kubernetes.io/os = linux", ["n2"]),  # n1 and n3 have their own labels only
    ],
)
def test_label_selector(seeded: KubeFake, core: Any, selector: str, expected: list[str]) -> None:
    assert names(call(core.list_node, label_selector=selector)) == expected


@pytest.mark.parametrize("selector", ["pool=a b", "pool in ()", "pool>1", "=a", "pool=(a)"])
def test_bad_label_selector_is_400(seeded: KubeFake, core: Any, selector: str) -> None:
    with pytest.raises(ApiException) as err:
        call(core.list_node, label_selector=selector)
    status = status_body(err.value)
    assert (err.value.status, status["reason"], status["code"]) == (400, "BadRequest", 400)
    assert status["message"].startswith("unable to parse requirement")


@pytest.mark.parametrize(
    ("which", "selector", "expected"),
    [
        ("nodes", "metadata.name=n2", ["n2"]),
        ("nodes", "metadata.name!=n2", ["n1", "n3"]),
        ("nodes", "spec.unschedulable=false", ["n1", "n2", "n3"]),  # absent reads as false
        ("pods", "spec.nodeName=n1", ["coredns", "kube-proxy-n1"]),
        ("pods", "spec.nodeName==n2", ["kube-proxy-n2"]),
        ("pods", "spec.nodeName=", ["pending"]),  # unscheduled
        (
            "pods",
            "spec.nodeName!=,status.phase=Running",
            ["coredns", "kube-proxy-n1", "kube-proxy-n2"],
        ),
        ("pods", "metadata.namespace=shop", ["pending"]),
        ("kube-system pods", "metadata.name=coredns", ["coredns"]),
        ("services", "metadata.name=web", ["web"]),
    ],
)
def test_field_selector(
    seeded: KubeFake, core: Any, which: str, selector: str, expected: list[str]
) -> None:
    assert names(call(listers(core)[which], field_selector=selector)) == expected


@pytest.mark.parametrize(
    ("which", "selector", "message"),
    [
        ("nodes", "spec.nodeName=n1", "field label not supported: spec.nodeName"),
        ("services", "spec.type=LoadBalancer", "field label not supported: spec.type"),
        ("pods", "spec.containers=x", "field label not supported: spec.containers"),
        (
            "pods",
            "spec.nodeName",
            "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'",
        ),
    ],
)
def test_unsupported_field_selector_is_400_never_ignored(
    seeded: KubeFake, core: Any, which: str, selector: str, message: str
) -> None:
    with pytest.raises(ApiException) as err:
        call(listers(core)[which], field_selector=selector)
    assert status_body(err.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def test_limit_and_continue(seeded: KubeFake, core: Any) -> None:
    seed(seeded, *(node(f"n{i}") for i in range(4, 8)))  # n1..n7

    pages = [call(core.list_node, limit=3)]
    while token := pages[-1]["metadata"].get("continue"):
        pages.append(call(core.list_node, limit=3, _continue=token))

    assert [names(p) for p in pages] == [["n1", "n2", "n3"], ["n4", "n5", "n6"], ["n7"]]
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [4, 1, None]
    assert {p["metadata"]["resourceVersion"] for p in pages} == {seeded.resource_version}


def test_selector_paging_omits_remaining_count_and_may_end_empty(
    seeded: KubeFake, core: Any
) -> None:
    # etcd cannot count matches, so no remainingItemCount; and more keys after the last match
    # still yield a token, whose page is then empty, as with the real apiserver.
    first = call(core.list_node, label_selector="pool", limit=2)
    assert names(first) == ["n1", "n3"]
    assert first["metadata"].get("remainingItemCount") is None
    # n3 is the last key: no continue.
    assert "continue" not in first["metadata"]

    first = call(core.list_node, label_selector="pool", limit=1)
    second = call(
        core.list_node, label_selector="pool", limit=1, _continue=first["metadata"]["continue"]
    )
    assert (names(first), names(second)) == (["n1"], ["n3"])
    assert "continue" not in second["metadata"]

    first = call(core.list_node, label_selector="!pool", limit=1)
    assert names(first) == ["n2"] and "remainingItemCount" not in first["metadata"]
    last = call(
        core.list_node, label_selector="!pool", limit=1, _continue=first["metadata"]["continue"]
    )
    assert names(last) == [] and "continue" not in last["metadata"]


def test_continued_pages_read_the_first_pages_resource_version(seeded: KubeFake, core: Any) -> None:
    first = call(core.list_node, limit=1)
    seeded.upsert(node("n0"))  # sorts before: a consistent list must not show it
    seeded.delete("Node", None, "n3")  # not yet returned: a consistent list still shows it
    seeded.upsert(node("n2", labels={"changed": "yes"}))

    rest = call(core.list_node, limit=5, _continue=first["metadata"]["continue"])

    assert names(first) + names(rest) == ["n1", "n2", "n3"]
    assert rest["items"][0]["metadata"]["labels"] != {"changed": "yes"}
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert names(call(core.list_node)) == ["n0", "n1", "n2"]  # a fresh list sees the writes


def test_compaction_expires_old_tokens_with_an_inconsistent_fallback(
    seeded: KubeFake, core: Any
) -> None:
    first = call(core.list_node, limit=1)
    seeded.delete("Node", None, "n3")
    seeded.compact()

    with pytest.raises(ApiException) as err:
        call(core.list_node, limit=1, _continue=first["metadata"]["continue"])

    status = status_body(err.value)
    assert (err.value.status, status["reason"], status["code"]) == (410, "Expired", 410)
    assert status["message"].startswith(
        "The provided continue parameter is too old to display a consistent list result. "
        "You can start a new list without the continue parameter"
    )
    # The apiserver offers a token to read the remainder at the latest resourceVersion.
    fallback = status["metadata"]["continue"]
    assert decode_continue(fallback) == (-1, "n1\x00")
    rest = call(core.list_node, _continue=fallback)
    assert names(rest) == ["n2"]
    assert rest["metadata"]["resourceVersion"] == seeded.resource_version


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("not-base64!", "continue key is not valid"),
        ("eyJ2IjoibWV0YS5rOHMuaW8vdjIiLCJydiI6MSwic3RhcnQiOiJhIn0", "does not recognize"),
        ("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJhIn0", "resourceVersion"),
    ],
)
def test_malformed_continue_token_is_400(
    seeded: KubeFake, core: Any, token: str, message: str
) -> None:
    with pytest.raises(ApiException) as err:
        call(core.list_node, _continue=token)
    assert err.value.status == 400
    assert message in status_body(err.value)["message"]


@pytest.mark.parametrize(
    ("params", "code", "reason"),
    [
        ({"resource_version": "0"}, 200, None),
        ({"resource_version": "1", "resource_version_match": "NotOlderThan"}, 200, None),
        ({"resource_version": "999999"}, 504, "Timeout"),
        ({"resource_version_match": "Exact"}, 400, "BadRequest"),
        ({"resource_version": "x"}, 400, "BadRequest"),
        ({"resource_version": "1", "_continue": "abc"}, 400, "BadRequest"),
    ],
)
def test_resource_version_parameters(
    seeded: KubeFake, core: Any, params: dict[str, Any], code: int, reason: str | None
) -> None:
    if code == 200:
        assert (
            call(core.list_node, **params)["metadata"]["resourceVersion"] == seeded.resource_version
        )
        return
    with pytest.raises(ApiException) as err:
        call(core.list_node, **params)
    assert (err.value.status, status_body(err.value)["reason"]) == (code, reason)


def test_exact_resource_version_reads_the_past_until_compacted(seeded: KubeFake, core: Any) -> None:
    before = seeded.resource_version
    seeded.delete("Node", None, "n3")

    past = call(core.list_node, resource_version=before, resource_version_match="Exact")
    assert names(past) == ["n1", "n2", "n3"]
    assert past["metadata"]["resourceVersion"] == before

    seeded.compact()
    with pytest.raises(ApiException) as err:
        call(core.list_node, resource_version=before, resource_version_match="Exact")
    assert (err.value.status, status_body(err.value)["reason"]) == (410, "Expired")
