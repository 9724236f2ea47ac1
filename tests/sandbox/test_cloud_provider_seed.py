"""The two cloud provider profiles' starting worlds: "current" seeds what today's GCE cloud
provider would have made (the ingress-uid ConfigMap, Cluster pools carrying the shared nodes
check, a Local pool carrying its own, an old pool carrying none, an RBS Service with no pool),
"legacy" exactly what the sandbox always seeded."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from lbhc.planner.names import target_pool_name
from lbhc.sandbox.sandbox import NODE_TAG, Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec
from lbhc.sandbox.upstream import names
from tests.waiting import wait_for

TCP_RULE = "service.kubernetes.io/tcp-forwarding-rule"
BACKEND = "service.kubernetes.io/backend-service"
HC_URL = "https://www.googleapis.com/compute/v1/projects/sandbox-project/global/httpHealthChecks/"
CHECKERS = ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"]
# nodes=2, services=3 (one Local): web-0, web-1, local-2, then legacy-3, rbs-4, ilb-5, ilb-v1-6.
CURRENT = SandboxSpec(nodes=2, services=3, local_services=1, cloud_provider="current")


@pytest.fixture(scope="module")
def current() -> Iterator[Sandbox]:
    with Sandbox(SandboxOptions(spec=CURRENT, operation_latency=0.0)) as sandbox:
        yield sandbox


def services(sandbox: Sandbox) -> dict[str, dict[str, Any]]:
    return {s["metadata"]["name"]: s for s in sandbox.kube.objects("Service")}


def test_the_profile_is_validated_with_one_clear_error() -> None:
    with pytest.raises(
        ValueError, match=r"^cloud_provider: got 'gke'; expected one of 'current' or 'legacy'$"
    ):
        SandboxSpec(cloud_provider="gke")
    assert SandboxSpec().cloud_provider == "current"  # today's GCE, by default


def test_current_seeds_the_cluster_uid_configmap(current: Sandbox) -> None:
    uid = current.cloud_provider_uid
    assert uid is not None and re.fullmatch(r"[0-9a-f]{16}", uid)
    configmap: Any = current.kube.get("ConfigMap", "kube-system", "ingress-uid")
    assert configmap["data"] == {"uid": uid, "provider-uid": uid}
    assert current.node_health_check_name == f"k8s-{uid}-node"
    assert current.node_health_check_firewall_name == f"k8s-{uid}-node-http-hc"
    # Deterministic from the spec: another sandbox of the same project has the same uid.
    assert SandboxSpec(cloud_provider="current").cluster_uid == uid


@pytest.mark.parametrize(
    ("service", "check"),
    [
        ("web-0", "nodes"),
        ("web-1", "nodes"),
        ("local-2", "own"),
        ("legacy-3", None),  # made by a cloud provider older than the nodes check
    ],
)
def test_current_seeds_pools_carrying_the_check_their_provider_gave_them(
    current: Sandbox, service: str, check: str | None
) -> None:
    spec = current.spec
    lb = current.load_balancer_name(spec.namespace, service)
    pool = current.compute.target_pools(spec.project, spec.region)[lb]
    expected = {
        "nodes": [HC_URL + str(current.node_health_check_name)],
        "own": [HC_URL + lb],
        None: None,
    }[check]
    assert pool.get("healthChecks") == expected
    assert pool["description"] == f'{{"kubernetes.io/service-name":"{spec.namespace}/{service}"}}'
    assert len(pool["instances"]) == spec.nodes
    rule = current.compute.forwarding_rules(spec.project, spec.region)[lb]
    assert rule["target"] == pool["selfLink"]
    ingress = services(current)[service]["status"]["loadBalancer"]["ingress"]
    assert ingress == [{"ip": rule["IPAddress"]}]
    traffic = current.compute.firewalls(spec.project)[f"k8s-fw-{lb}"]
    assert traffic["destinationRanges"] == [rule["IPAddress"]]
    assert traffic["allowed"] == [{"IPProtocol": "tcp", "ports": ["80"]}]


def test_current_seeds_the_nodes_check_and_its_firewall_as_upstream_writes_them(
    current: Sandbox,
) -> None:
    spec, uid = current.spec, str(current.cloud_provider_uid)
    check = current.compute.http_health_checks(spec.project)[f"k8s-{uid}-node"]
    assert {k: check.get(k) for k in check if k not in ("kind", "id", "creationTimestamp")} == {
        "name": f"k8s-{uid}-node",
        "description": f'{{"kubernetes.io/service-name":"k8s-{uid}-node"}}',
        "port": 10256,
        "requestPath": "/healthz",
        "checkIntervalSec": 8,
        "timeoutSec": 1,
        "healthyThreshold": 1,
        "unhealthyThreshold": 3,
        "selfLink": HC_URL + f"k8s-{uid}-node",
    }
    firewall = current.compute.firewalls(spec.project)[f"k8s-{uid}-node-http-hc"]
    web0 = services(current)["web-0"]["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert firewall["description"] == f'{{"kubernetes.io/cluster-id":"{uid}"}}'
    assert firewall["allowed"] == [{"IPProtocol": "tcp", "ports": ["10256"]}]
    assert firewall["sourceRanges"] == CHECKERS
    assert firewall["targetTags"] == [NODE_TAG]
    assert firewall["destinationRanges"] == [web0]  # the first load balancer made with it


def test_current_seeds_a_local_service_with_its_own_check_on_its_health_check_node_port(
    current: Sandbox,
) -> None:
    spec = current.spec
    local = services(current)["local-2"]
    port = local["spec"]["healthCheckNodePort"]
    lb = target_pool_name(local["metadata"]["uid"])
    check = current.compute.http_health_checks(spec.project)[lb]
    assert (check["port"], check["requestPath"], check["checkIntervalSec"]) == (port, "/healthz", 8)
    # makeHealthCheckDescription is given the check's name: the load balancer's, not ns/name.
    assert check["description"] == f'{{"kubernetes.io/service-name":"{lb}"}}'
    firewall = current.compute.firewalls(spec.project)[f"k8s-{lb}-http-hc"]
    ip = local["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert firewall["description"] == names.firewall_description(f"{spec.namespace}/local-2", ip)
    assert firewall["allowed"] == [{"IPProtocol": "tcp", "ports": [str(port)]}]
    assert firewall["destinationRanges"] == [ip]


def test_current_seeds_an_rbs_service_whose_backend_service_ingress_gce_made_and_no_pool(
    current: Sandbox,
) -> None:
    """The NetLB keeps the cloud provider's rule name ("a" + UID) for a backend service
    ingress-gce named and recorded on the Service (test_l4_kinds has the rest)."""
    spec = current.spec
    rbs = services(current)["rbs-4"]
    annotations = rbs["metadata"]["annotations"]
    assert annotations["cloud.google.com/l4-rbs"] == "enabled"
    lb = target_pool_name(rbs["metadata"]["uid"])
    assert lb not in current.compute.target_pools(spec.project, spec.region)
    ip = rbs["status"]["loadBalancer"]["ingress"][0]["ip"]
    rules = [
        r
        for r in current.compute.forwarding_rules(spec.project, spec.region).values()
        if r["IPAddress"] == ip
    ]
    assert [r["name"] for r in rules] == [lb] == [annotations[TCP_RULE]]
    assert "target" not in rules[0]
    backend = rules[0]["backendService"].rsplit("/", 1)[-1]
    assert backend == annotations[BACKEND] and backend.startswith("k8s2-")
    assert backend in current.compute.backend_services(spec.project, spec.region)


def test_current_changes_nothing_when_it_first_sees_the_seeded_services(current: Sandbox) -> None:
    controller = current.service_controller
    assert controller is not None
    wait_for(lambda: controller.passes >= 3, what="three service controller passes")
    assert current.compute.mutating_requests() == []
    assert current.recreations == [] and current.deleted_pools == []


def test_usage_names_the_profile(current: Sandbox) -> None:
    uid = current.cloud_provider_uid
    assert f"cloud provider:      current (cluster uid {uid} in kube-system/ingress-uid" in (
        current.usage()
    )


def test_legacy_seeds_what_it_always_did() -> None:
    spec = SandboxSpec(nodes=2, services=3, local_services=1, cloud_provider="legacy")
    with Sandbox(SandboxOptions(spec=spec, operation_latency=0.0)) as sandbox:
        assert sandbox.cloud_provider == "legacy"
        assert (sandbox.cloud_provider_uid, sandbox.node_health_check_name) == (None, None)
        assert sandbox.kube.objects("ConfigMap") == []
        seeded = services(sandbox)
        assert sorted(seeded) == ["local-2", "web-0", "web-1"]
        assert all(
            "status" not in s and "annotations" not in s["metadata"] for s in seeded.values()
        )
        assert "healthCheckNodePort" not in seeded["local-2"]["spec"]
        pools = sandbox.compute.target_pools(spec.project, spec.region)
        assert sorted(pools) == sorted(
            target_pool_name(s["metadata"]["uid"]) for s in seeded.values()
        )
        assert all("healthChecks" not in pool for pool in pools.values())
        rules = sandbox.compute.forwarding_rules(spec.project, spec.region)
        assert sorted(r["IPAddress"] for r in rules.values()) == [
            "203.0.113.10",
            "203.0.113.11",
            "203.0.113.12",
        ]
        assert sandbox.compute.http_health_checks(spec.project) == {}
        assert sandbox.compute.firewalls(spec.project) == {}
        assert "cloud provider:      legacy (pools made without health checks)" in sandbox.usage()
