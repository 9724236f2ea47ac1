"""core/v1 ConfigMaps in the fake, as the GCE cloud provider's kube-system/ingress-uid is read:
discovery, the kubernetes client's read_namespaced_config_map, and the real kubectl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from lbhc.sandbox.upstream.names import ingress_uid_configmap
from tests.kube_fixtures import seed
from tests.sandbox.kube_fake.support import kubectl, request

UID = "0123456789abcdef"


@pytest.fixture
def uid_configmap(kube_fake: KubeFake) -> KubeFake:
    seed(kube_fake, ingress_uid_configmap(UID))
    return kube_fake


def test_configmaps_are_discoverable(kube_server: KubeFakeServer) -> None:
    status, body = request(kube_server, "GET", "/api/v1")
    entry = next(r for r in body["resources"] if r["name"] == "configmaps")
    assert status == 200
    assert entry == {
        "name": "configmaps",
        "singularName": "configmap",
        "namespaced": True,
        "kind": "ConfigMap",
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        "shortNames": ["cm"],
    }
    assert "configmaps/status" not in {r["name"] for r in body["resources"]}


def test_the_client_reads_the_cluster_uid(uid_configmap: KubeFake, core: Any) -> None:
    configmap = core.read_namespaced_config_map("ingress-uid", "kube-system")
    assert configmap.data == {"uid": UID, "provider-uid": UID}
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("ingress-uid", "default")
    assert missing.value.status == 404


def test_the_client_writes_configmaps(kube_fake: KubeFake, core: Any) -> None:
    body = {"metadata": {"name": "settings"}, "data": {"a": "1"}}
    created = core.create_namespaced_config_map("default", body)
    assert created.metadata.uid and created.data == {"a": "1"}
    core.patch_namespaced_config_map("settings", "default", {"data": {"b": "2"}})
    listed = core.list_namespaced_config_map("default").items
    assert [(c.metadata.name, c.data) for c in listed] == [("settings", {"a": "1", "b": "2"})]
    core.delete_namespaced_config_map("settings", "default")
    assert kube_fake.objects("ConfigMap") == []


def test_kubectl_gets_the_cluster_uid(
    uid_configmap: KubeFake, kube_server: KubeFakeServer, tmp_path: Path
) -> None:
    out = kubectl(
        kube_server, tmp_path, "get", "configmap", "-n", "kube-system", "ingress-uid", "-o", "json"
    )
    got = json.loads(out)
    assert (got["kind"], got["metadata"]["name"]) == ("ConfigMap", "ingress-uid")
    assert got["data"] == {"uid": UID, "provider-uid": UID}
    assert "ingress-uid" in kubectl(kube_server, tmp_path, "get", "cm", "-n", "kube-system")
