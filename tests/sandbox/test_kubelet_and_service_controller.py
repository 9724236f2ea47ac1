"""The sandbox's stand-ins for the kubelet and the cloud provider's service controller, which
the demo relies on: a kube-proxy readiness probe on /healthz turns unready on a node being
deleted (gardener#11858) while /livez stays ready; a deleted Service's load balancer goes,
rule first, before its cleanup finalizer is released."""

from __future__ import annotations

from typing import Any

from lbhc.planner.names import target_pool_name
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node_name
from tests.waiting import wait_for

TAINT = "ToBeDeletedByClusterAutoscaler"


def ready(sandbox: Sandbox, node: str) -> bool:
    pod: Any = sandbox.kube.get("Pod", "kube-system", f"kube-proxy-{node}")
    return {"type": "Ready", "status": "True"} in pod["status"]["conditions"]


def test_readiness_on_healthz_turns_unready_on_a_draining_node_and_livez_does_not() -> None:
    # A v1.27 node keeps the DaemonSet on /healthz (Gardener's rule), the v1.31 node drains.
    spec = SandboxSpec(
        nodes=2, services=0, local_services=0, kube_proxy_versions=("v1.31.4", "v1.27.9")
    )
    with Sandbox(SandboxOptions(spec=spec, time_scale=0.05)) as sandbox:
        pod: Any = sandbox.kube.get("Pod", "kube-system", f"kube-proxy-{node_name(0)}")
        assert pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"] == "/healthz"
        sandbox.kube.taint(node_name(0), TAINT, "1", "NoSchedule")
        wait_for(lambda: not ready(sandbox, node_name(0)), what="kube-proxy unready on /healthz")
        assert ready(sandbox, node_name(1))
        sandbox.kube.untaint(node_name(0), TAINT)
        wait_for(lambda: ready(sandbox, node_name(0)), what="ready again")

    spec = SandboxSpec(nodes=1, services=0, local_services=0, kube_proxy_versions=("v1.31.4",))
    with Sandbox(SandboxOptions(spec=spec, time_scale=0.05)) as sandbox:
        sandbox.kube.taint(node_name(0), TAINT, "1", "NoSchedule")
        fleet = sandbox.fleet
        assert fleet is not None
        start = fleet.requests(node_name(0))
        wait_for(lambda: fleet.requests(node_name(0)) >= start + 4, what="several /livez probes")
        assert ready(sandbox, node_name(0))


def test_deleting_a_service_removes_its_load_balancer_then_releases_it() -> None:
    spec = SandboxSpec(nodes=1, services=2, local_services=1, cloud_provider="legacy")
    with Sandbox(SandboxOptions(spec=spec, operation_latency=0.05)) as sandbox:
        service: Any = sandbox.kube.objects("Service")[0]
        pool = target_pool_name(service["metadata"]["uid"])
        pools = sandbox.compute.target_pools(spec.project, spec.region)
        assert pool in pools and len(pools) == 2
        sandbox.kube.delete("Service", spec.namespace, service["metadata"]["name"])
        wait_for(
            lambda: (
                sandbox.kube.get("Service", spec.namespace, service["metadata"]["name"]) is None
            ),
            what="the Service gone once its finalizer is released",
        )
        assert pool not in sandbox.compute.target_pools(spec.project, spec.region)
        assert pool not in sandbox.compute.forwarding_rules(spec.project, spec.region)
        deletes = [
            e.path.split("/")[-2]
            for e in sandbox.compute.mutating_requests()
            if e.method == "DELETE"
        ]
        assert deletes == ["forwardingRules", "targetPools"]
