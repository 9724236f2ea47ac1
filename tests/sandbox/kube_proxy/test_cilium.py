"""Cilium's kube-proxy replacement as the sandbox emulates it (cilium
daemon/healthz/kube_proxy_healthz.go): /healthz only, failing only for a Node being deleted
or an unhealthy agent, and nothing listening unless its healthz bind address is set."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.kube_proxy import (
    CILIUM_HEALTHZ_BIND_KEY,
    KubeProxyFleet,
    go_time_string,
    respond_cilium,
)
from lbhc.sandbox.seed import SandboxSpec, cluster_objects
from tests.builders.kube import replacement_daemonset
from tests.sandbox.kube_proxy.support import TO_BE_DELETED, add_node, get, refused, status

Fleet = Callable[..., KubeProxyFleet]
NOW = datetime(2026, 11, 22, 4, 18, 8, 123456, tzinfo=UTC)
SYNCED = datetime(2026, 11, 22, 4, 16, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("path", "deleted", "healthy", "expected"),
    [
        ("/healthz", False, True, 200),
        ("/healthz?verbose", False, True, 200),
        ("/healthz", True, True, 503),
        ("/healthz", False, False, 503),
        ("/livez", False, True, 404),
        ("/livez", True, True, 404),
        ("/", False, True, 404),
    ],
)
def test_cilium_answers(path: str, deleted: bool, healthy: bool, expected: int) -> None:
    answer = respond_cilium(
        path, node_deleted=deleted, agent_healthy=healthy, now=NOW, last_updated=SYNCED
    )
    assert answer.status == expected


def test_cilium_body_is_kube_proxys_old_one_without_node_eligible() -> None:
    ok = respond_cilium(
        "/healthz", node_deleted=False, agent_healthy=True, now=NOW, last_updated=SYNCED
    )
    failing = respond_cilium(
        "/healthz", node_deleted=True, agent_healthy=True, now=NOW, last_updated=SYNCED
    )
    now, synced = go_time_string(NOW), go_time_string(SYNCED)
    assert ok.body.decode() == f'{{"lastUpdated": "{now}","currentTime": "{now}"}}'
    assert failing.body.decode() == f'{{"lastUpdated": "{synced}","currentTime": "{now}"}}'
    assert ok.headers["Content-Type"] == "application/json"


def cilium(kube: KubeFake, bind_address: str) -> None:
    kube.upsert(replacement_daemonset("cilium"))
    kube.upsert(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cilium-config", "namespace": "kube-system"},
            "data": {"kube-proxy-replacement": "true", CILIUM_HEALTHZ_BIND_KEY: bind_address},
        }
    )


def test_cilium_drains_for_a_deletion_timestamp_not_for_the_autoscaler_taint(
    kube: KubeFake, make_fleet: Fleet
) -> None:
    cilium(kube, "0.0.0.0:10256")
    add_node(kube, "n1", None, internal_ip="127.0.9.7")
    kube.patch("Node", None, "n1", {"metadata": {"finalizers": ["example.com/hold"]}})
    fleet = make_fleet()
    endpoint = fleet.endpoint("n1")
    assert (status(endpoint, "/healthz"), status(endpoint, "/livez")) == (200, 404)

    kube.taint("n1", TO_BE_DELETED, "1732252688", "NoSchedule")
    assert status(endpoint, "/healthz") == 200  # Cilium does not read the taint

    kube.delete("Node", None, "n1")  # held by the finalizer: only a deletionTimestamp
    assert status(endpoint, "/healthz") == 503
    assert "lastUpdated" in get(endpoint, "/healthz").body.decode()


def test_a_kube_proxy_pod_still_answers_as_kube_proxy(kube: KubeFake, make_fleet: Fleet) -> None:
    cilium(kube, "0.0.0.0:10256")
    add_node(kube, "kp", "v1.31.4")
    fleet = make_fleet()
    assert status(fleet.endpoint("kp"), "/livez") == 200


@pytest.mark.parametrize("bind_address", ["", None], ids=["empty", "no-daemonset"])
def test_without_the_bind_address_nothing_listens(
    kube: KubeFake, make_fleet: Fleet, bind_address: str | None
) -> None:
    if bind_address is not None:
        cilium(kube, bind_address)
    add_node(kube, "bare", None, internal_ip="127.0.9.6")
    add_node(kube, "n1")  # gives the fleet its port
    fleet = make_fleet()
    assert fleet.endpoint("bare") is None and fleet.port is not None
    assert refused(("127.0.9.6", fleet.port))


@pytest.mark.parametrize("healthz", [True, False])
def test_the_seed_runs_cilium_instead_of_kube_proxy(healthz: bool) -> None:
    objects = cluster_objects(
        SandboxSpec(nodes=2, kube_proxy_replacement="cilium", cilium_healthz=healthz)
    )
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("DaemonSet", "cilium") in kinds and ("DaemonSet", "kube-proxy") not in kinds
    assert not [o for o in objects if o["kind"] == "Pod"]
    (config,) = [
        o for o in objects if o["kind"] == "ConfigMap" and "cilium" in o["metadata"]["name"]
    ]
    assert bool(config["data"][CILIUM_HEALTHZ_BIND_KEY]) is healthz


def test_the_seed_refuses_an_unknown_replacement() -> None:
    with pytest.raises(ValueError, match="kube_proxy_replacement"):
        SandboxSpec(kube_proxy_replacement="calico")
