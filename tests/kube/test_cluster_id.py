"""The cloud provider's cluster id, read from ConfigMap kube-system/ingress-uid as
kubernetes/cloud-provider-gcp providers/gce/gce_clusterid.go ClusterID.GetID reads it:
`provider-uid` when present, else `uid`, and no id at all without `uid`. The same table runs
through the API reader and through a cluster snapshot file, so neither can read it otherwise."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from lbhc.kube.client import KubeReader
from lbhc.kube.snapshot_file import parse_cluster_snapshot
from lbhc.sandbox.kube_fake import KubeFake
from tests.builders.kube import (
    KUBE_SYSTEM_UID,
    ingress_uid_config_map,
    kubernetes_service,
    namespace,
    node,
    only_data,
)


@dataclass(frozen=True)
class Case:
    id: str
    data: dict[str, str]
    cluster_id: str | None


CASES = [
    Case("both keys, as the cloud provider writes them", {"uid": "a1", "provider-uid": "a1"}, "a1"),
    Case("both keys, different: provider-uid wins", {"uid": "a1", "provider-uid": "b2"}, "b2"),
    Case("only uid (an older ConfigMap)", {"uid": "a1"}, "a1"),
    # GetID fails without `uid` ("Could not retrieve cluster id"): no LB, no check named.
    Case("only provider-uid: GetID has no id", {"provider-uid": "b2"}, None),
    Case("neither key", {}, None),
    Case("an empty provider-uid names no check", {"uid": "a1", "provider-uid": ""}, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_read_from_the_api(case: Case, kube_fake: KubeFake, reader: KubeReader) -> None:
    kube_fake.upsert(ingress_uid_config_map("unused", only_data(case.data)))
    assert reader.read_snapshot().cloud_provider_uid == case.cluster_id


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_read_from_a_snapshot_file(case: Case) -> None:
    items = [
        node("n1"),
        kubernetes_service(),
        namespace("kube-system", KUBE_SYSTEM_UID),
        ingress_uid_config_map("unused", only_data(case.data)),
    ]
    dump = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    assert parse_cluster_snapshot(dump).cloud_provider_uid == case.cluster_id
