"""Backend-service load balancers at run time: each goes with its Service, its shared pieces
staying while another still uses them (ingress-gce l4netlb.go/l4.go Ensure...Deleted and
healthchecksl4.go healthCheckFirewallSafeToDelete; cloud-provider-gcp
gce_loadbalancer_internal.go ensureInternalLoadBalancerDeleted), and GKE subsetting decides
who makes an internal one (AlphaFeatureILBSubsets)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec
from lbhc.sandbox.upstream.names import load_balancer_name
from tests.sandbox import l4_reads as gce
from tests.waiting import wait_for


def sandbox_of(**spec: bool) -> Sandbox:
    """web-0, legacy-1, rbs-2, ilb-3, ilb-v1-4 on two nodes."""
    full = SandboxSpec(nodes=2, services=1, local_services=0, **spec)
    return Sandbox(SandboxOptions(spec=full, time_scale=0.05, operation_latency=0.0))


def gone(sandbox: Sandbox, service: str) -> bool:
    return sandbox.kube.get("Service", sandbox.spec.namespace, service) is None


def exists(sandbox: Sandbox, path: str) -> bool:
    return bool(gce.get(sandbox, path))


def test_each_goes_with_its_service_and_shared_pieces_with_their_last_user() -> None:
    with sandbox_of() as sandbox:
        region, cluster = sandbox.spec.region, sandbox.cloud_provider_uid
        annotations = gce.service(sandbox, "rbs-2")["metadata"]["annotations"]
        shared_check = annotations["service.kubernetes.io/healthcheck"]
        shared_firewall = annotations["service.kubernetes.io/firewall-rule-for-hc"]
        backends = {s: gce.backend_name(sandbox, s) for s in ("rbs-2", "ilb-3", "ilb-v1-4")}
        (neg,) = gce.groups(sandbox, "ilb-3")
        (group,) = gce.groups(sandbox, "rbs-2")
        uids = {s: gce.service(sandbox, s)["metadata"]["uid"] for s in backends}

        def delete(service: str) -> None:
            sandbox.kube.delete("Service", sandbox.spec.namespace, service)
            wait_for(lambda: gone(sandbox, service), 20, f"{service} released by everyone")
            assert not exists(sandbox, f"regions/{region}/backendServices/{backends[service]}")

        delete("rbs-2")
        rule = load_balancer_name(uids["rbs-2"])
        assert not exists(sandbox, f"regions/{region}/forwardingRules/{rule}")
        assert not exists(sandbox, f"global/firewalls/{backends['rbs-2']}")
        assert not exists(sandbox, f"regions/{region}/healthChecks/{shared_check}")
        # The internal LB's global shared check still stands: the shared firewall stays.
        assert exists(sandbox, f"global/healthChecks/{shared_check}")
        assert exists(sandbox, f"global/firewalls/{shared_firewall}")
        assert exists(sandbox, gce.path_of(group))  # in use by ilb-v1-4's backend service

        delete("ilb-3")
        assert not exists(sandbox, gce.path_of(neg))
        assert not exists(sandbox, f"global/healthChecks/{shared_check}")
        assert not exists(sandbox, f"global/firewalls/{shared_firewall}")

        delete("ilb-v1-4")
        assert not exists(sandbox, f"regions/{region}/forwardingRules/{backends['ilb-v1-4']}")
        assert not exists(sandbox, f"global/healthChecks/k8s-{cluster}-node")
        assert not exists(sandbox, f"global/firewalls/k8s-{cluster}-node-hc")
        assert not exists(sandbox, f"global/firewalls/k8s-fw-{backends['ilb-v1-4']}")
        # The target pools' legacy check of the same name is another resource: untouched.
        assert exists(sandbox, f"global/httpHealthChecks/k8s-{cluster}-node")


Expect = Callable[[Sandbox], None]


def made_by_ingress_gce(sandbox: Sandbox) -> None:
    obj = gce.service(sandbox, "ilb-3")
    assert gce.backend_name(sandbox, "ilb-3").startswith("k8s2-")
    assert "gke.networking.io/l4-ilb-v2" in obj["metadata"]["finalizers"]
    assert all("/networkEndpointGroups/" in g for g in gce.groups(sandbox, "ilb-3"))


def made_by_the_cloud_provider(sandbox: Sandbox) -> None:
    obj = gce.service(sandbox, "ilb-3")
    assert gce.backend_name(sandbox, "ilb-3") == load_balancer_name(obj["metadata"]["uid"])
    assert "gke.networking.io/l4-ilb-v1" in obj["metadata"]["finalizers"]
    assert gce.groups(sandbox, "ilb-3") == gce.groups(sandbox, "ilb-v1-4")  # k8s-ig--


@pytest.mark.parametrize(
    ("subsetting", "expect"),
    [(True, made_by_ingress_gce), (False, made_by_the_cloud_provider)],
    ids=["subsetting", "no-subsetting"],
)
def test_subsetting_decides_who_makes_a_new_internal_lb(subsetting: bool, expect: Expect) -> None:
    with sandbox_of(ilb_subsetting=subsetting) as sandbox:
        expect(sandbox)
        nodes = {n["metadata"]["name"] for n in sandbox.kube.objects("Node")}
        healthy = dict.fromkeys(nodes, "HEALTHY")
        wait_for(lambda: gce.health(sandbox, "ilb-3") == healthy, 20, "ilb-3 HEALTHY")
