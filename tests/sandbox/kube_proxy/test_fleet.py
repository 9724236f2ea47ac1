"""The fleet over real sockets, driven by the objects in a KubeFake: what a health checker
sees on each node as the cluster autoscaler taints, kubelets upgrade and nodes go away."""

from __future__ import annotations

import contextlib
import http.client
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.kube_proxy import KUBE_PROXY_PORT, KubeProxyFleet
from tests.builders.kube import kube_proxy_pod
from tests.sandbox.kube_proxy.support import (
    INSTANCE,
    TO_BE_DELETED,
    add_node,
    get,
    refused,
    set_image,
    status,
)
from tests.waiting import wait_for

Fleet = Callable[..., KubeProxyFleet]


def probe(fleet: KubeProxyFleet, node: str) -> tuple[int, int]:
    """(/healthz, /livez) status codes of `node`'s kube-proxy."""
    endpoint = fleet.endpoint(node)
    return status(endpoint, "/healthz"), status(endpoint, "/livez")


@contextlib.contextmanager
def listener(host: str, port: int) -> Iterator[int]:
    """Hold `host:port` (0: any free port) like another process would; yields the port."""
    with socket.socket() as sock:
        sock.bind((host, port))
        sock.listen()
        yield sock.getsockname()[1]


# -- draining follows the Node in the apiserver ----------------------------------------------


def test_autoscaler_taint_fails_healthz_only_until_untainted(
    kube: KubeFake, make_fleet: Fleet
) -> None:
    add_node(kube, "n1", "v1.31.4")
    fleet = make_fleet()
    assert probe(fleet, "n1") == (200, 200)

    kube.taint("n1", TO_BE_DELETED, "1732252688", "NoSchedule")
    assert probe(fleet, "n1") == (503, 200)  # no sync needed: read at request time

    kube.untaint("n1", TO_BE_DELETED)
    assert probe(fleet, "n1") == (200, 200)


@pytest.mark.parametrize("value", ["", "1732252688"])
@pytest.mark.parametrize("effect", ["NoSchedule", "PreferNoSchedule", "NoExecute"])
def test_any_value_and_effect_of_the_autoscaler_taint_drains(
    kube: KubeFake, make_fleet: Fleet, value: str, effect: str
) -> None:
    add_node(kube, "n1", taints=((TO_BE_DELETED, value, effect),))
    assert probe(make_fleet(), "n1") == (503, 200)


@pytest.mark.parametrize(
    "taint",
    [
        ("DeletionCandidateOfClusterAutoscaler", "1732252688", "PreferNoSchedule"),
        ("karpenter.sh/disrupted", "", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "", "NoSchedule"),
        ("tobedeletedbyclusterautoscaler", "", "NoSchedule"),  # keys are case-sensitive
    ],
)
def test_taints_that_do_not_drain(
    kube: KubeFake, make_fleet: Fleet, taint: tuple[str, str, str]
) -> None:
    add_node(kube, "n1", taints=(taint,))
    assert probe(make_fleet(), "n1") == (200, 200)


def test_cordoning_does_not_drain(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1")
    fleet = make_fleet()
    kube.patch("Node", None, "n1", {"spec": {"unschedulable": True}})
    assert probe(fleet, "n1") == (200, 200)


def test_a_deletion_timestamp_drains(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1")
    kube.patch("Node", None, "n1", {"metadata": {"finalizers": ["example.com/hold"]}})
    fleet = make_fleet()
    kube.delete("Node", None, "n1")  # held by the finalizer: only a deletionTimestamp
    assert probe(fleet, "n1") == (503, 200)


def test_before_1_28_never_drains_and_has_no_livez(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1", "v1.27.16", taints=((TO_BE_DELETED, "", "NoSchedule"),))
    assert probe(make_fleet(), "n1") == (200, 404)


@pytest.mark.parametrize(("gate", "healthz"), [(None, 200), (False, 200), (True, 503)])
def test_1_28_drains_only_with_the_gate(
    kube: KubeFake, make_fleet: Fleet, gate: bool | None, healthz: int
) -> None:
    add_node(kube, "n1", "v1.28.15", taints=((TO_BE_DELETED, "", "NoSchedule"),))
    assert probe(make_fleet(draining_gate=gate), "n1") == (healthz, 200)


def test_a_broken_proxier_fails_both_endpoints(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "new", "v1.31.4")
    add_node(kube, "old", "v1.27.16")
    fleet = make_fleet()
    for name in ("new", "old"):
        fleet.set_proxier_healthy(name, False)
    assert probe(fleet, "new") == (503, 503)
    assert probe(fleet, "old") == (503, 404)
    fleet.set_proxier_healthy("new", True)
    assert probe(fleet, "new") == (200, 200)


def test_answers_carry_kube_proxys_headers_and_body(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1", "v1.33.1", taints=((TO_BE_DELETED, "", "NoSchedule"),))
    reply = get(make_fleet().endpoint("n1"), "/healthz?from=gce")
    assert reply.status == 503
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    assert b'"nodeEligible":false,"healthy":true' in reply.body


# -- which nodes listen, and on which version --------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        "registry.k8s.io/kube-proxy:v1.6.13",
        "registry.k8s.io/kube-proxy:v1.7.1",  # bound 127.0.0.1 only
        "registry.k8s.io/kube-proxy@sha256:" + "a" * 64,
        "registry.k8s.io/kube-proxy",
        "registry.k8s.io/kube-proxy:latest",
    ],
)
def test_nothing_listens_without_a_reachable_kube_proxy(
    kube: KubeFake, make_fleet: Fleet, image: str
) -> None:
    add_node(kube, "n1", internal_ip="127.0.9.9", image=image)
    add_node(kube, "n2", "v1.31.4")  # gives the fleet its port
    fleet = make_fleet()
    assert fleet.endpoint("n1") is None
    assert fleet.endpoint("n2") is not None and fleet.port is not None
    assert refused(("127.0.9.9", fleet.port))


@pytest.mark.parametrize(
    "pod",
    [
        kube_proxy_pod("bare", namespace="default"),
        kube_proxy_pod("bare", labels={"k8s-app": "kube-dns"}),
        kube_proxy_pod("bare", phase="Failed"),
        kube_proxy_pod("bare", phase="Pending"),
        kube_proxy_pod("elsewhere"),  # on a node that does not exist
    ],
    ids=["other-namespace", "other-labels", "failed", "pending", "unknown-node"],
)
def test_a_node_without_a_running_kube_proxy_pod_has_nothing(
    kube: KubeFake, make_fleet: Fleet, pod: dict[str, Any]
) -> None:
    add_node(kube, "bare", None, internal_ip="127.0.9.8")
    add_node(kube, "n1")
    kube.upsert(pod)
    fleet = make_fleet()
    assert fleet.endpoint("bare") is None and fleet.endpoints().keys() == {"n1"}
    assert fleet.port is not None and refused(("127.0.9.8", fleet.port))


def test_a_custom_selector_and_namespace_find_kube_proxy(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1", None)
    kube.upsert(kube_proxy_pod("n1", namespace="net", labels={"component": "kube-proxy"}))
    fleet = make_fleet(namespace="net", selector={"component": "kube-proxy"})
    assert probe(fleet, "n1") == (200, 200)


def test_during_a_rollout_the_pod_not_terminating_answers(
    kube: KubeFake, make_fleet: Fleet
) -> None:
    add_node(kube, "n1", "v1.27.16")
    old = kube.get("Pod", "kube-system", "kube-proxy-n1")
    assert old is not None
    old["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    old["metadata"]["finalizers"] = ["example.com/hold"]
    kube.upsert(old)
    kube.upsert(kube_proxy_pod("n1", version="v1.31.4") | {"metadata": _meta("kube-proxy-zzz")})
    assert probe(make_fleet(), "n1") == (200, 200)


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}}


def test_the_kube_proxy_container_is_found_among_sidecars(
    kube: KubeFake, make_fleet: Fleet
) -> None:
    add_node(kube, "n1", "v1.27.16")
    pod = kube.get("Pod", "kube-system", "kube-proxy-n1")
    assert pod is not None
    sidecar = {"name": "metrics", "image": "registry.k8s.io/metrics-proxy:v9.9.9"}
    pod["spec"]["containers"].insert(0, sidecar)
    kube.upsert(pod)
    assert probe(make_fleet(), "n1") == (200, 404)  # 1.27, not 9.9


def test_an_image_change_restarts_the_server_with_the_new_behaviour(
    kube: KubeFake, make_fleet: Fleet
) -> None:
    add_node(kube, "n1", "v1.27.16", taints=((TO_BE_DELETED, "", "NoSchedule"),))
    fleet = make_fleet()
    assert probe(fleet, "n1") == (200, 404)
    set_image(kube, "n1", "registry.k8s.io/kube-proxy:v1.31.4-gke.1072000")
    fleet.sync()
    assert probe(fleet, "n1") == (503, 200)


def test_a_deleted_node_stops_answering(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1")
    add_node(kube, "n2")
    fleet = make_fleet()
    gone = fleet.endpoint("n1")
    assert gone is not None
    kube.delete("Node", None, "n1")
    fleet.sync()
    assert fleet.endpoint("n1") is None and refused(gone)
    assert probe(fleet, "n2") == (200, 200)


def test_a_gone_vm_stays_silent_while_the_fleet_syncs(kube: KubeFake) -> None:
    """The autoscaler deletes VMs while the fleet's own thread syncs: each one's server stops
    once, is never started again, and neither side trips over the other."""
    nodes = [f"n{i}" for i in range(12)]
    for node in nodes:
        add_node(kube, node)
    with KubeProxyFleet(kube, port=0, interval=0.0005).start() as fleet:
        for node in nodes:
            endpoint = fleet.endpoint(node)
            assert endpoint is not None
            fleet.vm_gone(node)
            fleet.sync()
            assert fleet.endpoint(node) is None and refused(endpoint)
        assert fleet.last_error is None


def answers_200(fleet: KubeProxyFleet, node: str) -> bool:
    """While the fleet restarts a node's server, a probe may be refused, reset, or cut off
    mid-answer (the old server stops under it): not yet."""
    try:
        return fleet.endpoint(node) is not None and probe(fleet, node)[1] == 200
    except (OSError, http.client.HTTPException):
        return False


def test_the_background_thread_follows_the_fake(kube: KubeFake) -> None:
    add_node(kube, "n1", "v1.27.16")
    with KubeProxyFleet(kube, port=0, interval=0.02).start() as fleet:
        add_node(kube, "n2", "v1.31.4")
        wait_for(lambda: fleet.endpoint("n2") is not None, what="n2 served")
        set_image(kube, "n1", "registry.k8s.io/kube-proxy:v1.31.4")
        wait_for(lambda: answers_200(fleet, "n1"), what="n1 answering 200")
        assert fleet.last_error is None


def test_close_is_idempotent_and_final(kube: KubeFake) -> None:
    add_node(kube, "n1")
    fleet = KubeProxyFleet(kube, port=0).start()
    endpoint = fleet.endpoint("n1")
    assert endpoint is not None
    fleet.close()
    fleet.close()
    assert refused(endpoint) and fleet.endpoint("n1") is None
    with pytest.raises(RuntimeError, match="closed"):
        fleet.sync()


# -- addresses and ports -------------------------------------------------------------------------


def test_each_node_gets_its_own_loopback_address(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "a", internal_ip="127.0.0.2")  # taken before allocation could use it
    add_node(kube, "b", internal_ip="10.128.0.7")  # not loopback: allocated
    add_node(kube, "c")
    add_node(kube, "d", internal_ip="127.0.0.2")  # a duplicate: allocated
    fleet = make_fleet()
    hosts = {name: endpoint[0] for name, endpoint in fleet.endpoints().items()}
    assert hosts["a"] == "127.0.0.2"
    assert len(set(hosts.values())) == 4
    assert all(host.startswith("127.") for host in hosts.values())
    assert len({port for _, port in fleet.endpoints().values()}) == 1


def test_two_fleets_at_once_never_share_an_endpoint(kube: KubeFake) -> None:
    """Other tests or processes may run a fleet too: the second one falls back."""
    add_node(kube, "n1")
    with KubeProxyFleet(kube) as first, KubeProxyFleet(kube) as second:
        first.sync()
        second.sync()
        assert first.endpoint("n1") != second.endpoint("n1")
        assert probe(first, "n1") == probe(second, "n1") == (200, 200)


def test_addresses_survive_restarts(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1", "v1.27.16")
    fleet = make_fleet()
    before = fleet.endpoint("n1")
    set_image(kube, "n1", "registry.k8s.io/kube-proxy:v1.31.4")
    fleet.sync()
    assert fleet.endpoint("n1") == before


def test_the_default_port_is_kube_proxys_when_free(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1", internal_ip="127.0.7.1")
    try:
        with listener("127.0.7.1", KUBE_PROXY_PORT):
            pass
    except OSError:
        pytest.skip("something on this machine holds 127.0.7.1:10256")
    fleet = make_fleet(port=None)
    assert fleet.endpoint("n1") == ("127.0.7.1", KUBE_PROXY_PORT)


def test_a_taken_10256_moves_every_node_to_one_ephemeral_port(
    kube: KubeFake, make_fleet: Fleet
) -> None:
    add_node(kube, "n1", internal_ip="127.0.7.1")
    add_node(kube, "n2", internal_ip="127.0.7.2")
    with listener("127.0.7.2", KUBE_PROXY_PORT):
        fleet = make_fleet(port=None)
        ports = {port for _, port in fleet.endpoints().values()}
        assert ports == {fleet.port} and fleet.port != KUBE_PROXY_PORT
        assert probe(fleet, "n1") == (200, 200) and probe(fleet, "n2") == (200, 200)
        # Health checks still name 10256: it maps to wherever the node answers.
        url = INSTANCE.format(p="proj", z="us-central1-a", n="n2")
        assert fleet.endpoint_for_instance(url, KUBE_PROXY_PORT) == fleet.endpoint("n2")


def test_a_fixed_port_that_is_taken_is_an_error(kube: KubeFake) -> None:
    add_node(kube, "n1", internal_ip="127.0.7.3")
    with (
        listener("127.0.7.3", 0) as port,
        KubeProxyFleet(kube, port=port) as fleet,
        pytest.raises(OSError),
    ):
        fleet.sync()


# -- instances and counters ------------------------------------------------------------------------


def test_instance_urls_map_to_nodes(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1")  # providerID gce://proj/us-central1-a/n1
    add_node(kube, "n2")
    kube.patch("Node", None, "n2", {"spec": {"providerID": "gce://proj/us-central1-b/vm-2"}})
    add_node(kube, "vm-3")
    kube.patch("Node", None, "vm-3", {"spec": {"providerID": None}})
    fleet = make_fleet()

    def at(
        project: str, zone: str, name: str, port: int = KUBE_PROXY_PORT
    ) -> tuple[str, int] | None:
        return fleet.endpoint_for_instance(INSTANCE.format(p=project, z=zone, n=name), port)

    assert at("proj", "us-central1-a", "n1") == fleet.endpoint("n1")
    assert at("proj", "us-central1-b", "vm-2") == fleet.endpoint("n2")
    assert at("proj", "us-central1-a", "vm-3") == fleet.endpoint("vm-3")  # by name
    assert at("proj", "us-central1-a", "nope") is None
    assert at("proj", "us-central1-a", "n1", port=80) is None  # nothing listens on 80
    assert fleet.endpoint_for_instance("https://example.com/n1", KUBE_PROXY_PORT) is None


def test_requests_are_counted_per_node_across_restarts(kube: KubeFake, make_fleet: Fleet) -> None:
    add_node(kube, "n1", "v1.27.16")
    add_node(kube, "n2")
    fleet = make_fleet()
    for path in ("/healthz", "/livez", "/nope"):
        status(fleet.endpoint("n1"), path)
    set_image(kube, "n1", "registry.k8s.io/kube-proxy:v1.31.4")
    fleet.sync()
    status(fleet.endpoint("n1"), "/healthz")
    assert (fleet.requests("n1"), fleet.requests("n2"), fleet.requests("none")) == (4, 0, 0)
