"""The fake against a real kubectl, and the offline `--cluster-snapshot` path: a
`kubectl get nodes,services,pods -A -o json` dump must load into the same projections that
KubeReader builds from the API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lbhc.kube.client import KubeConfig, KubeReader, make_api_client
from lbhc.kube.snapshot_file import load_cluster_snapshot
from lbhc.model.cluster import ClusterSnapshot
from lbhc.planner.config import PlannerConfig
from lbhc.planner.kube_proxy import kube_proxy_pods_by_node
from lbhc.sandbox.kube_fake import JournalEntry, KubeFake, KubeFakeServer
from tests.builders.kube import KUBE_SYSTEM_UID, kube_proxy_pod, namespace, node, pod, service
from tests.kube_fixtures import run_kubectl, seed

GET_ALL = ("get", "nodes,services,pods", "-A", "-o", "json")


def seed_cluster(fake: KubeFake, nodes: int) -> None:
    seed(fake, namespace("default"), namespace("kube-system", KUBE_SYSTEM_UID))
    for i in range(nodes):
        seed(fake, node(f"node-{i:04d}", deleting=i == 7), kube_proxy_pod(f"node-{i:04d}"))
    seed(
        fake,
        service("web", namespace="shop"),
        service("legacy", policy=None),
        service("local", namespace="shop", policy="Local", lb_class="example.com/lb"),
        pod("coredns", node_name="node-0000", labels={"k8s-app": "kube-dns"}, container="coredns"),
        pod(
            "imposter", namespace="default", node_name="node-0001", labels={"k8s-app": "kube-proxy"}
        ),
    )


@dataclass(frozen=True)
class Dump:
    fake: KubeFake
    path: Path
    output: dict[str, Any]
    kubectl_requests: list[JournalEntry]
    live: ClusterSnapshot  # what KubeReader read from the same server


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dump]:
    """One kubectl run over 1,201 nodes (paged like the reader), shared by the tests below."""
    fake = KubeFake()
    seed_cluster(fake, nodes=1_201)
    directory = tmp_path_factory.mktemp("kubectl")
    with KubeFakeServer(fake) as server:
        result = run_kubectl(directory, server.url, *GET_ALL)
        assert result.returncode == 0, result.stderr
        kubectl_requests = fake.journal
        api_client = make_api_client(KubeConfig(host=server.url))
        try:
            live = KubeReader(api_client, KubeConfig(host=server.url)).read_snapshot()
        finally:
            api_client.close()
    path = directory / "cluster.json"
    path.write_text(result.stdout, encoding="utf-8")
    yield Dump(fake, path, json.loads(result.stdout), kubectl_requests, live)


def test_kubectl_get_prints_a_v1_list_of_the_seeded_objects(dump: Dump) -> None:
    assert (dump.output["kind"], dump.output["apiVersion"]) == ("List", "v1")
    printed = [
        (i["apiVersion"], i["kind"], i["metadata"].get("namespace", ""), i["metadata"]["name"])
        for i in dump.output["items"]
    ]
    seeded = [
        (o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for kind in ("Node", "Service", "Pod")
        for o in dump.fake.objects(kind)
    ]
    assert printed == seeded
    assert dump.output["items"][0] == dump.fake.objects("Node")[0]  # printed verbatim
    # kubectl pages like the reader does: limit=500 and continue tokens.
    node_pages = [e for e in dump.kubectl_requests if e.path == "/api/v1/nodes"]
    assert [e.query.get("limit") for e in node_pages] == ["500"] * 3
    assert [("continue" in e.query) for e in node_pages] == [False, True, True]
    assert all(e.status == 200 for e in dump.kubectl_requests)


def test_kubectl_dump_loads_into_what_the_reader_read(dump: Dump) -> None:
    offline = load_cluster_snapshot(dump.path)

    assert dump.live.complete, dump.live.gaps
    assert offline.nodes == dump.live.nodes
    assert offline.services == dump.live.services
    # The dump holds every pod; the planner's own filter must leave exactly the kube-proxy
    # pods the reader asked the API for by namespace and label selector.
    config = PlannerConfig(project="proj", region="us-central1")
    assert len(offline.kube_proxy_pods) == len(dump.live.kube_proxy_pods) + 2
    kept = kube_proxy_pods_by_node(offline.kube_proxy_pods, config).values()
    assert sorted(p.metadata.name for p in kept) == sorted(
        p.metadata.name for p in dump.live.kube_proxy_pods
    )
    # Namespaces are not in this dump: the cluster id must then come from settings.
    assert (offline.kube_system_uid, dump.live.kube_system_uid) == (None, KUBE_SYSTEM_UID)


@pytest.mark.parametrize("version", ["v1.27.3", "v1.33.1"])
def test_kubectl_of_other_versions_and_the_readme_dump(tmp_path: Path, version: str) -> None:
    # Google Cloud SDK's kubectl dispatches on the server's /version to a matching binary, and
    # older and newer kubectls negotiate discovery differently. The README's dump adds
    # namespaces, which carry the kube-system UID the cluster id derives from.
    fake = KubeFake(version)
    seed_cluster(fake, nodes=2)
    with KubeFakeServer(fake) as server:
        result = run_kubectl(
            tmp_path, server.url, "get", "nodes,services,pods,namespaces", "-A", "-o", "json"
        )
    assert result.returncode == 0, result.stderr
    path = tmp_path / "cluster.json"
    path.write_text(result.stdout, encoding="utf-8")

    offline = load_cluster_snapshot(path)

    assert [n.name for n in offline.nodes] == ["node-0000", "node-0001"]
    assert (len(offline.services), len(offline.kube_proxy_pods)) == (3, 4)
    assert offline.kube_system_uid == KUBE_SYSTEM_UID
