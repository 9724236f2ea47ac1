"""KubeReader through the real kubernetes client, over a real socket, against the fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lbhc.kube.client import (
    KubeApi,
    KubeConfig,
    KubeReader,
    KubeReadError,
    KubeTarget,
    connect,
    read_kube_system_uid,
)
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer, decode_continue
from lbhc.settings.groups import KubeProxySettings
from tests.builders.kube import (
    KUBE_PROXY_LABELS,
    KUBE_SYSTEM_UID,
    kube_proxy_pod,
    kubernetes_service,
    namespace,
    node,
    pod,
    replacement_daemonset,
    service,
)
from tests.hostile.conftest import free_port
from tests.kube_fixtures import seed, write_kubeconfig

MANY = 1_201  # three pages of 500


def node_requests(fake: KubeFake) -> list[Any]:
    return [entry for entry in fake.journal if entry.path == "/api/v1/nodes"]


def seed_many_nodes(fake: KubeFake) -> list[str]:
    names = [f"node-{i:05d}" for i in range(MANY)]
    seed(fake, *(node(name) for name in reversed(names)))  # insertion order must not matter
    return names


def test_pages_through_every_node_exactly_once(kube_fake: KubeFake, reader: KubeReader) -> None:
    names = seed_many_nodes(kube_fake)

    snapshot = reader.read_snapshot()

    assert snapshot.complete, snapshot.gaps
    assert [n.name for n in snapshot.nodes] == names
    requests = node_requests(kube_fake)
    assert [(e.status, e.query.get("limit")) for e in requests] == [(200, "500")] * 3
    tokens = [e.query.get("continue") for e in requests]
    assert tokens[0] is None and all(tokens[1:])
    # Resumed after the 500th and the 1,000th node, at the first page's resourceVersion.
    decoded = [decode_continue(token) for token in tokens[1:] if token]
    assert [start for _, start in decoded] == [names[499] + "\x00", names[999] + "\x00"]
    assert len({rv for rv, _ in decoded}) == 1


def test_empty_cluster_is_complete_not_a_gap(kube_fake: KubeFake, reader: KubeReader) -> None:
    snapshot = reader.read_snapshot()

    assert snapshot.complete, snapshot.gaps
    assert (snapshot.nodes, snapshot.services, snapshot.kube_proxy_pods) == ((), (), ())
    assert snapshot.kube_system_uid == KUBE_SYSTEM_UID


def test_services_across_namespaces(kube_fake: KubeFake, reader: KubeReader) -> None:
    seed(
        kube_fake,
        service("web", namespace="shop"),
        service("api", namespace="default"),
        service("db", namespace="shop", type_="ClusterIP"),
        service("edge", namespace="a-b"),  # "a-b/" sorts before "api" keys bytewise, as in etcd
    )

    snapshot = reader.read_snapshot()

    assert [s.key for s in snapshot.services] == ["a-b/edge", "default/api", "shop/db", "shop/web"]
    assert snapshot.complete


@pytest.mark.parametrize(
    ("namespace_name", "selector", "expected"),
    [
        ("kube-system", "k8s-app=kube-proxy", ["kube-proxy-n1", "kube-proxy-n2"]),
        ("kube-system", "k8s-app=kube-proxy,tier=node", ["kube-proxy-n2"]),
        ("proxies", "component=kube-proxy", ["kube-proxy-n3"]),
        ("kube-system", "k8s-app=nothing", []),
    ],
)
def test_kube_proxy_pods_by_namespace_and_selector(
    kube_fake: KubeFake,
    api_client: Any,
    namespace_name: str,
    selector: str,
    expected: list[str],
) -> None:
    seed(
        kube_fake,
        kube_proxy_pod("n1"),
        kube_proxy_pod("n2", labels={**KUBE_PROXY_LABELS, "tier": "node"}),
        kube_proxy_pod("n3", namespace="proxies", labels={"component": "kube-proxy"}),
        kube_proxy_pod("n4", namespace="default"),  # right labels, wrong namespace
        pod("coredns-1", node_name="n1", labels={"k8s-app": "kube-dns"}, container="coredns"),
    )
    reader = KubeReader(
        api_client,
        KubeConfig(),
        kube_proxy_namespace=namespace_name,
        kube_proxy_selector=selector,
    )

    snapshot = reader.read_snapshot()

    assert [p.metadata.name for p in snapshot.kube_proxy_pods] == expected
    assert snapshot.complete
    [request] = [e for e in kube_fake.journal if e.path.endswith("/pods")]
    assert request.path == f"/api/v1/namespaces/{namespace_name}/pods"
    assert request.query["labelSelector"] == selector


def test_kube_system_uid(kube_fake: KubeFake, reader: KubeReader) -> None:
    assert reader.read_snapshot().kube_system_uid == KUBE_SYSTEM_UID


@pytest.mark.parametrize(
    ("daemonsets", "expected"),
    [
        ((), None),
        ((replacement_daemonset("cilium"),), "cilium"),
        ((replacement_daemonset("anetd"),), "anetd"),
        ((replacement_daemonset("cilium"), replacement_daemonset("anetd")), "anetd"),
        ((replacement_daemonset("cilium", namespace="cilium-system"),), None),
        ((replacement_daemonset("calico-node"),), None),
    ],
    ids=["none", "cilium", "anetd", "anetd-first", "other-namespace", "not-known"],
)
def test_a_kube_proxy_replacement_is_found_by_name_in_kube_system(
    kube_fake: KubeFake,
    reader: KubeReader,
    daemonsets: tuple[dict[str, Any], ...],
    expected: str | None,
) -> None:
    seed(kube_fake, *daemonsets)
    assert reader.read_snapshot().kube_proxy_replacement == expected
    asked = [
        e.query.get("fieldSelector")
        for e in kube_fake.journal
        if e.path == "/apis/apps/v1/namespaces/kube-system/daemonsets"
        and "fieldSelector" in e.query
    ]
    assert set(asked) <= {"metadata.name=anetd", "metadata.name=cilium"} and asked


def test_unreadable_kube_system_namespace_is_an_error_naming_the_fix(
    kube_fake: KubeFake, reader: KubeReader
) -> None:
    # Not a gap: a gap would withhold removals on every pass while the namespace is unreadable.
    kube_fake.delete("Namespace", None, "kube-system")
    with pytest.raises(KubeReadError, match=r"HTTP 404 Not Found.*set --cluster-id"):
        reader.read_snapshot()


def test_configured_cluster_id_skips_the_namespace_read(
    kube_fake: KubeFake, api_client: Any, kube_server: KubeFakeServer
) -> None:
    kube_fake.delete("Namespace", None, "kube-system")
    reader = KubeReader(api_client, KubeConfig(host=kube_server.url), read_cluster_uid=False)
    snapshot = reader.read_snapshot()
    assert snapshot.complete and snapshot.kube_system_uid is None
    assert not any(
        e.path.removeprefix("/api/v1") == "/namespaces/kube-system" for e in kube_fake.journal
    )


@pytest.mark.parametrize(
    ("expiries", "statuses", "gaps"),
    [
        # One expiry mid-list: restarted from the beginning and still complete.
        (1, [200, 410, 200, 200, 200], ()),
        # A second expiry on the restart: given up, reported as a gap, never half a list.
        (2, [200, 410, 200, 410], ("nodes could not be listed: HTTP 410 Gone",)),
    ],
)
def test_expired_continue_token_restarts_the_list_once(
    kube_fake: KubeFake,
    reader: KubeReader,
    expiries: int,
    statuses: list[int],
    gaps: tuple[str, ...],
) -> None:
    names = seed_many_nodes(kube_fake)
    seed(kube_fake, service("web"))
    kube_fake.faults.expire_continue_tokens(expiries)

    snapshot = reader.read_snapshot()

    assert [e.status for e in node_requests(kube_fake)] == statuses
    assert snapshot.gaps == gaps
    assert [n.name for n in snapshot.nodes] == ([] if gaps else names)
    assert [s.key for s in snapshot.services] == ["default/web"]  # other lists unaffected


@pytest.mark.parametrize(
    ("path", "status", "gap"),
    [
        ("/api/v1/services", 500, "services could not be listed: HTTP 500 Internal Server Error"),
        ("/api/v1/services", 503, "services could not be listed: HTTP 503 Service Unavailable"),
        ("/api/v1/nodes", 403, "nodes could not be listed: HTTP 403 Forbidden"),
        ("/pods", 500, "kube-proxy pods could not be listed: HTTP 500 Internal Server Error"),
    ],
)
def test_failed_list_is_a_gap_and_the_rest_is_intact(
    kube_fake: KubeFake, reader: KubeReader, path: str, status: int, gap: str
) -> None:
    seed(kube_fake, node("n1"), service("web"), kube_proxy_pod("n1"))
    kube_fake.faults.fail_requests(times=1, status=status, path_contains=path)

    snapshot = reader.read_snapshot()

    assert snapshot.gaps == (gap,)
    assert not snapshot.complete
    counts = {
        "nodes": len(snapshot.nodes),
        "services": len(snapshot.services),
        "kube-proxy pods": len(snapshot.kube_proxy_pods),
    }
    failed = gap.split(" could not")[0]
    assert counts == {what: 0 if what == failed else 1 for what in counts}
    assert snapshot.kube_system_uid == KUBE_SYSTEM_UID
    # Without every node and kube-proxy Pod, version skew cannot be ruled out.
    assert snapshot.versions_complete is (failed == "services")


def test_an_undecodable_object_is_a_gap_naming_it_and_costs_only_itself(
    kube_fake: KubeFake, reader: KubeReader
) -> None:
    broken = node("n2")
    broken["spec"]["taints"] = [{"effect": "NoSchedule"}]  # a taint without its key
    seed(kube_fake, node("n1"), broken, node("n3"))

    snapshot = reader.read_snapshot()

    assert [n.name for n in snapshot.nodes] == ["n1", "n3"]
    assert snapshot.gaps == (
        "nodes: 1 object(s) could not be decoded (n2: spec.taints.0.key: Field required)",
    )
    assert not snapshot.versions_complete  # n2 may run the old kube-proxy


def test_projections_hold_what_the_planner_uses(kube_fake: KubeFake, reader: KubeReader) -> None:
    seed(
        kube_fake,
        node(
            "n1",
            kubelet="v1.32.1",
            kube_proxy_field="v1.32.1",
            labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""},
            taints=(("ToBeDeletedByClusterAutoscaler", "1732000000", "NoSchedule"),),
            deleting=True,
        ),
        node("n2", kubelet="v1.33.0"),  # 1.33+ leaves kubeProxyVersion out (KEP-4004)
        service("legacy", policy=None),
        service("local", namespace="shop", policy="Local", lb_class="example.com/lb"),
        kube_proxy_pod("n1", version="v1.32.1"),
    )

    snapshot = reader.read_snapshot()

    n1, n2 = snapshot.nodes
    assert n1.metadata.deletion_timestamp == "2026-11-22T00:00:00Z"
    assert n1.metadata.labels == {"node.kubernetes.io/exclude-from-external-load-balancers": ""}
    [taint] = n1.spec.taints
    assert (taint.key, taint.value, taint.effect) == (
        "ToBeDeletedByClusterAutoscaler",
        "1732000000",
        "NoSchedule",
    )
    assert n1.spec.provider_id == "gce://proj/us-central1-a/n1"
    assert (n1.status.node_info.kubelet_version, n1.status.node_info.kube_proxy_version) == (
        "v1.32.1",
        "v1.32.1",
    )
    assert (n2.status.node_info.kubelet_version, n2.status.node_info.kube_proxy_version) == (
        "v1.33.0",
        "",
    )
    assert n2.metadata.deletion_timestamp is None and n2.spec.taints == ()
    legacy, local = snapshot.services
    assert (legacy.spec.type, legacy.spec.external_traffic_policy) == ("LoadBalancer", "Cluster")
    assert legacy.spec.load_balancer_class is None
    assert (local.spec.external_traffic_policy, local.spec.load_balancer_class) == (
        "Local",
        "example.com/lb",
    )
    [proxy] = snapshot.kube_proxy_pods
    assert proxy.spec.node_name == "n1"
    assert [(c.name, c.image) for c in proxy.spec.containers] == [
        ("kube-proxy", "registry.k8s.io/kube-proxy:v1.32.1")
    ]
    # The server-assigned metadata comes through as well.
    stored = kube_fake.get("Node", None, "n1")
    assert stored is not None
    assert n1.metadata.uid == stored["metadata"]["uid"]
    assert n1.metadata.resource_version == stored["metadata"]["resourceVersion"]


def test_namespace_builder_uid_is_kept(kube_fake: KubeFake) -> None:
    stored = kube_fake.upsert(namespace("shop", "fixed-uid"))
    assert stored["metadata"]["uid"] == "fixed-uid"


@pytest.mark.parametrize(
    ("labels", "chosen"),
    [
        ({"k8s-app": "kube-proxy"}, "k8s-app=kube-proxy"),
        ({"component": "kube-proxy", "tier": "node"}, "component=kube-proxy,tier=node"),
        ({"app": "kubernetes", "role": "proxy"}, "app=kubernetes,role=proxy"),
    ],
    ids=["kubeadm", "kube-up-and-gke-static", "gardener"],
)
def test_the_first_alternative_that_selects_a_kube_proxy_pod_is_listed(
    kube_fake: KubeFake, api_client: Any, labels: dict[str, str], chosen: str
) -> None:
    """The default selector's alternatives are tried in order, one item each; the list
    that fills the snapshot uses the one that selects something."""
    seed(kube_fake, kube_proxy_pod("n1", labels=labels))
    default = KubeProxySettings().selector
    reader = KubeReader(api_client, KubeConfig(), kube_proxy_selector=default)
    snapshot = reader.read_snapshot()
    assert [p.metadata.name for p in snapshot.kube_proxy_pods] == ["kube-proxy-n1"]
    full = [
        e for e in kube_fake.journal if e.path.endswith("/pods") and e.query.get("limit") != "1"
    ]
    assert [e.query["labelSelector"] for e in full] == [chosen]


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/api/v1/nodes", 403, "cannot list nodes from the Kubernetes API server at"),
        ("/api/v1/services", 503, "cannot list services from the Kubernetes API server at"),
        ("/pods", 500, "cannot list kube-proxy Pods in kube-system (selected by k8s-app="),
    ],
)
def test_a_complete_read_raises_where_a_gap_would_be(
    kube_fake: KubeFake, api_client: Any, kube_server: KubeFakeServer, path: str, status: int,
    says: str,
) -> None:  # fmt: skip
    """One-shot commands read with complete=True: no plan from half a cluster."""
    target = KubeTarget(kube_server.url, "context 'c' of kubeconfig k")
    reader = KubeReader(api_client, KubeConfig(host=kube_server.url), target=target)
    seed(kube_fake, node("n1"), service("web"), kube_proxy_pod("n1"))
    kube_fake.faults.fail_requests(times=1, status=status, path_contains=path)
    with pytest.raises(KubeReadError) as caught:
        reader.read_snapshot(complete=True)
    message = str(caught.value)
    assert says in message and f"{kube_server.url} (context 'c' of kubeconfig k)" in message
    assert f"HTTP {status}" in message
    # Only a refusal points at RBAC.
    assert ("rbac.yaml" in message) is (status == 403)


def test_a_complete_read_of_a_whole_cluster_is_the_same_snapshot(
    kube_fake: KubeFake, reader: KubeReader
) -> None:
    seed(kube_fake, node("n1"), service("web"), kube_proxy_pod("n1"))
    complete, tolerant = reader.read_snapshot(complete=True), reader.read_snapshot()
    assert complete.complete and complete.gaps == ()
    assert (complete.nodes, complete.services, complete.kube_proxy_pods) == (
        tolerant.nodes,
        tolerant.services,
        tolerant.kube_proxy_pods,
    )


def test_an_unreachable_server_gets_no_rbac_hint_a_refusal_does(kube_fake: KubeFake) -> None:
    with KubeFakeServer(kube_fake) as server:
        url = server.url
        config = KubeConfig(host=url)
        api_client, target = connect(config)
        api = KubeApi(api_client, config, target=target)
        kube_fake.faults.fail_requests(times=1, status=403, path_contains="/namespaces")
        with pytest.raises(KubeReadError) as refused:
            read_kube_system_uid(api)
    with pytest.raises(KubeReadError) as unreachable:
        read_kube_system_uid(api)
    assert "HTTP 403 Forbidden" in str(refused.value)
    assert "allow `get namespaces`" in str(refused.value)
    assert "connection refused" in str(unreachable.value)
    assert "allow" not in str(unreachable.value) and "rbac" not in str(unreachable.value)
    assert "or set --cluster-id" in str(unreachable.value)
    where = f"from the Kubernetes API server at {url} (a URL given directly)"
    assert where in str(unreachable.value) and where in str(refused.value)


def test_a_failed_read_names_the_server_and_the_kubeconfig_context_never_a_credential(
    tmp_path: Path,
) -> None:
    """Which cluster a failure is about is the first thing to check on a real cluster: the
    server URL and the kubeconfig's context, as connect() found them; never the token, nor
    a password in the server URL."""
    dead = f"127.0.0.1:{free_port()}"
    kubeconfig = write_kubeconfig(tmp_path, f"http://admin:hunter2@{dead}")
    document = json.loads(kubeconfig.read_text())
    document["users"][0]["user"] = {"token": "secret-token-value"}
    kubeconfig.write_text(json.dumps(document))
    config = KubeConfig(kubeconfig=str(kubeconfig))
    api_client, target = connect(config)
    with pytest.raises(KubeReadError) as caught:
        read_kube_system_uid(KubeApi(api_client, config, target=target))
    message = str(caught.value)
    assert message.startswith(
        f"cannot read namespace kube-system from the Kubernetes API server at http://{dead} "
        f"(context 'fake' of kubeconfig {kubeconfig}) to derive the cluster id: "
    ), message
    assert "connection refused" in message
    assert "hunter2" not in message and "secret-token-value" not in message


@pytest.mark.parametrize(
    ("daemonsets", "expected"),
    [
        ((), None),
        ((replacement_daemonset("cilium"),), "cilium"),
        ((replacement_daemonset("cilium"), replacement_daemonset("anetd")), "anetd"),
        ((replacement_daemonset("anetd", namespace="default"),), None),
    ],
    ids=["none", "cilium", "anetd-first", "other-namespace"],
)
def test_a_snapshot_dump_names_the_replacement_as_the_live_read_does(
    daemonsets: tuple[dict[str, Any], ...], expected: str | None
) -> None:
    from lbhc.kube.snapshot_file import parse_cluster_snapshot

    items = [node("n1"), kubernetes_service(), *daemonsets]
    dump = {"apiVersion": "v1", "kind": "List", "items": items}
    assert parse_cluster_snapshot(json.dumps(dump)).kube_proxy_replacement == expected
