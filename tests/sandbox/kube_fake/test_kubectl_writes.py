"""The real kubectl driving the fake: get, taint, annotate, label, delete, apply and events,
through the kubeconfig KubeFakeServer writes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders.kube import namespace, node, service
from tests.kube_fixtures import seed
from tests.sandbox.kube_fake.support import WATCH_TIMEOUT, WatchStream, kubectl, object_names

TAINT = "ToBeDeletedByClusterAutoscaler"


@pytest.fixture
def cluster(kube_fake: KubeFake) -> KubeFake:
    seed(kube_fake, node("n1"), node("n2"), service("web"), namespace("shop"))
    return kube_fake


@pytest.fixture
def run(kube_server: KubeFakeServer, tmp_path: Path) -> Callable[..., str]:
    return lambda *args: kubectl(kube_server, tmp_path, *args)


@pytest.fixture
def node_watch(cluster: KubeFake, core: Any, watches: Callable[[Any], WatchStream]) -> WatchStream:
    return watches(
        core.list_node(
            watch=True,
            resource_version=cluster.resource_version,
            _preload_content=False,
            _request_timeout=WATCH_TIMEOUT,
        )
    )


def test_get_nodes(cluster: KubeFake, run: Callable[..., str]) -> None:
    lines = run("get", "nodes").splitlines()
    assert lines[0].split() == ["NAME", "AGE"]  # no server-side Table: kubectl's fallback
    assert [line.split()[0] for line in lines[1:]] == ["n1", "n2"]


def test_taint_and_untaint(
    cluster: KubeFake, run: Callable[..., str], node_watch: WatchStream
) -> None:
    assert run("taint", "nodes", "n1", f"{TAINT}=1:NoSchedule").strip() == "node/n1 tainted"
    tainted = cluster.get("Node", None, "n1")
    modified = node_watch.next()
    run("taint", "nodes", "n1", f"{TAINT}-")
    untainted = cluster.get("Node", None, "n1")

    assert tainted is not None and untainted is not None
    assert tainted["spec"]["taints"] == [{"effect": "NoSchedule", "key": TAINT, "value": "1"}]
    assert object_names([modified]) == [("MODIFIED", "n1")]
    assert modified["object"]["spec"]["taints"] == tainted["spec"]["taints"]
    assert object_names([node_watch.next()]) == [("MODIFIED", "n1")]
    assert "taints" not in untainted["spec"]


def test_annotate_and_label(cluster: KubeFake, run: Callable[..., str]) -> None:
    run("annotate", "svc", "web", "lbhc.dev/ignore=true")
    run("label", "node", "n1", "foo=bar")
    run("label", "no", "n1", "kubernetes.io/os-")

    web = cluster.get("Service", "default", "web")
    n1 = cluster.get("Node", None, "n1")
    assert web is not None and web["metadata"]["annotations"] == {"lbhc.dev/ignore": "true"}
    assert n1 is not None and n1["metadata"]["labels"] == {"foo": "bar"}
    assert run("get", "nodes", "-l", "foo=bar", "-o", "name").split() == ["node/n1"]


def test_delete_service(
    cluster: KubeFake,
    run: Callable[..., str],
    core: Any,
    watches: Callable[[Any], WatchStream],
) -> None:
    stream = watches(
        core.list_service_for_all_namespaces(
            watch=True,
            resource_version=cluster.resource_version,
            _preload_content=False,
            _request_timeout=WATCH_TIMEOUT,
        )
    )

    assert 'service "web" deleted' in run("delete", "svc", "web")

    assert cluster.get("Service", "default", "web") is None
    assert object_names([stream.next()]) == [("DELETED", "web")]


def test_get_events_created_through_events_v1(
    cluster: KubeFake, kube_server: KubeFakeServer, tmp_path: Path, run: Callable[..., str]
) -> None:
    # A lbhc-like client: the kubernetes client from the kubeconfig the server wrote.
    new_client: Any = config.new_client_from_config  # untyped in the client
    api_client = new_client(str(kube_server.write_kubeconfig(tmp_path / "client.yaml")))
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"generateName": "web.", "namespace": "default"},
        "eventTime": "2026-11-22T02:51:19.123456Z",
        "reportingController": "lbhc.dev/controller",
        "reportingInstance": "lbhc-0",
        "action": "Attach",
        "reason": "HealthCheckAttached",
        "note": "attached",
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Service", "name": "web", "namespace": "default"},
    }
    try:
        events: Any = client.EventsV1Api(api_client)  # a raw dict body, on purpose
        response = events.create_namespaced_event("default", body, _preload_content=False)
        assert response.status == 201
    finally:
        api_client.close()

    table = run("get", "events", "-A").splitlines()
    listed = yaml.safe_load(run("get", "ev", "-A", "-o", "yaml"))

    assert table[0].split() == ["NAMESPACE", "NAME", "AGE"]
    assert table[1].split()[:2][0] == "default" and table[1].split()[1].startswith("web.")
    (item,) = listed["items"]
    assert (item["apiVersion"], item["reason"], item["message"]) == (
        "v1",
        "HealthCheckAttached",
        "attached",
    )
    assert item["involvedObject"]["name"] == "web"


def test_apply_creates_then_patches(
    cluster: KubeFake, run: Callable[..., str], tmp_path: Path
) -> None:
    manifest = tmp_path / "svc.yaml"
    svc = service("applied", namespace="shop")
    manifest.write_text(yaml.safe_dump(svc), encoding="utf-8")
    assert run("apply", "-f", str(manifest)).strip() == "service/applied created"

    svc["spec"]["ports"][0]["targetPort"] = 9090
    svc["metadata"]["labels"] = {"tier": "web"}
    manifest.write_text(yaml.safe_dump(svc), encoding="utf-8")
    assert run("apply", "-f", str(manifest)).strip() == "service/applied configured"
    assert run("apply", "-f", str(manifest)).strip() == "service/applied unchanged"

    stored = cluster.get("Service", "shop", "applied")
    assert stored is not None
    assert stored["spec"]["ports"][0]["targetPort"] == 9090
    assert stored["metadata"]["labels"] == {"tier": "web"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]
    patches = [e for e in cluster.journal if e.method == "PATCH"]
    assert [e.status for e in patches] == [200]  # "unchanged" sends no patch


def test_short_names_and_other_groups_resolve(cluster: KubeFake, run: Callable[..., str]) -> None:
    cluster.upsert(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
        }
    )
    cluster.upsert(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "lbhc", "namespace": "kube-system"},
        }
    )

    names = run("get", "no,svc,ds,leases,ns", "-A", "-o", "name").split()

    assert names == [
        "node/n1",
        "node/n2",
        "service/web",
        "daemonset.apps/kube-proxy",
        "lease.coordination.k8s.io/lbhc",
        "namespace/default",
        "namespace/kube-system",
        "namespace/shop",
    ]


def test_the_kubeconfig_has_no_credentials(kube_server: KubeFakeServer, tmp_path: Path) -> None:
    path = kube_server.write_kubeconfig(tmp_path / "deep" / "config", context="demo")
    written = yaml.safe_load(path.read_text(encoding="utf-8"))

    assert written["current-context"] == "demo"
    assert written["clusters"][0]["cluster"] == {"server": kube_server.url}
    assert written["users"] == [{"name": "demo", "user": {}}]
    assert path.stat().st_mode & 0o077 == 0
