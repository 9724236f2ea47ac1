"""The default sandbox has one load balancer of each GCE L4 kind, each made by the emulated
upstream controller that makes it on GKE, with upstream's names and shapes, read back over
the Compute API's socket: a target pool (the cloud provider), an RBS external backend service
(ingress-gce's NetLB controller, shared instance groups), an internal one under GKE subsetting
(ingress-gce's L4 ILB controller, GCE_VM_IP NEGs) and the cloud provider's own internal one
(made before subsetting: its l4-ilb-v1 finalizer keeps it there)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.sandbox.sandbox import NODE_TAG, Sandbox, SandboxOptions
from lbhc.sandbox.seed import KUBE_SYSTEM_UID, SandboxSpec, node_name
from lbhc.sandbox.upstream.ingress_gce.names import L4Namer
from lbhc.sandbox.upstream.names import load_balancer_name
from tests.sandbox import l4_reads as gce
from tests.waiting import wait_for

SPEC = SandboxSpec()  # 3 nodes: web-0..2, local-3, legacy-4, rbs-5, ilb-6, ilb-v1-7
L4_RANGES = {"130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"}
COMPUTE = "https://www.googleapis.com/compute/v1/projects/"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    options = SandboxOptions(spec=SPEC, time_scale=0.05, operation_latency=0.02)
    with Sandbox(options) as running:
        yield running


def namer(sandbox: Sandbox) -> L4Namer:
    """ingress-gce's names: from the kube-system Namespace's UID."""
    ns = sandbox.kube.get("Namespace", None, "kube-system")
    assert ns is not None and ns["metadata"]["uid"] == KUBE_SYSTEM_UID
    return L4Namer(KUBE_SYSTEM_UID, str(sandbox.cloud_provider_uid))


@dataclass(frozen=True)
class Kind:
    """What upstream makes for one Service."""

    service: str
    scheme: str
    made_by: str  # "ingress-gce" or "the cloud provider"
    regional_check: bool
    draining: int  # connectionDraining.drainingTimeoutSec
    groups: str  # "instanceGroups" or "networkEndpointGroups"
    finalizer: str


KINDS = [
    Kind("rbs-5", "EXTERNAL", "ingress-gce", True, 30, "instanceGroups",
         "gke.networking.io/l4-netlb-v2"),
    Kind("ilb-6", "INTERNAL", "ingress-gce", False, 30, "networkEndpointGroups",
         "gke.networking.io/l4-ilb-v2"),
    Kind("ilb-v1-7", "INTERNAL", "the cloud provider", False, 0, "instanceGroups",
         "gke.networking.io/l4-ilb-v1"),
]  # fmt: skip


def expected_names(sandbox: Sandbox, kind: Kind) -> dict[str, str]:
    """backend service, check, check firewall, forwarding rule, group name, by upstream."""
    obj = gce.service(sandbox, kind.service)
    lb = load_balancer_name(obj["metadata"]["uid"])
    cluster = str(sandbox.cloud_provider_uid)
    if kind.made_by == "the cloud provider":  # gce_loadbalancer_naming.go
        return {
            "backend": lb,
            "check": f"k8s-{cluster}-node",
            "firewall": f"k8s-{cluster}-node-hc",
            "rule": lb,
            "group": f"k8s-ig--{cluster}",
        }
    names = namer(sandbox)  # pkg/utils/namer/l4_namer.go
    backend = names.backend(SPEC.namespace, kind.service)
    return {
        "backend": backend,
        "check": f"k8s2-{names.cluster_hash}-l4-shared-hc",
        "firewall": f"k8s2-{names.cluster_hash}-l4-shared-hc-fw",
        # The NetLB keeps the cloud provider's rule name (l4netlb.go frName).
        "rule": lb
        if kind.scheme == "EXTERNAL"
        else names.forwarding_rule(SPEC.namespace, kind.service, "TCP"),
        "group": f"k8s-ig--{cluster}" if kind.groups == "instanceGroups" else backend,
    }


@pytest.mark.parametrize("kind", KINDS, ids=[k.service for k in KINDS])
def test_each_kind_is_made_with_upstreams_names_and_shapes(sandbox: Sandbox, kind: Kind) -> None:
    want = expected_names(sandbox, kind)
    region, project = SPEC.region, SPEC.project
    backend = gce.backend_service(sandbox, kind.service)
    assert backend["name"] == want["backend"]
    assert (backend["loadBalancingScheme"], backend["protocol"]) == (kind.scheme, "TCP")
    assert backend["connectionDraining"] == {"drainingTimeoutSec": kind.draining}
    scope = f"regions/{region}" if kind.regional_check else "global"
    assert backend["healthChecks"] == [f"{COMPUTE}{project}/{scope}/healthChecks/{want['check']}"]
    zone = SPEC.zone
    assert gce.groups(sandbox, kind.service) == [
        f"{COMPUTE}{project}/zones/{zone}/{kind.groups}/{want['group']}"
    ]

    check = gce.get(sandbox, f"{scope}/healthChecks/{want['check']}")
    assert check["type"] == "HTTP"
    assert check["httpHealthCheck"] == {
        "port": 10256,
        "requestPath": "/healthz",
        "portSpecification": "USE_FIXED_PORT",
        "proxyHeader": "NONE",
    }
    timings = [check[k] for k in ("checkIntervalSec", "timeoutSec", "healthyThreshold")]
    assert [*timings, check["unhealthyThreshold"]] == [8, 1, 1, 3]

    rule = gce.regional(sandbox, "forwardingRules", want["rule"])
    obj = gce.service(sandbox, kind.service)
    assert rule["loadBalancingScheme"] == kind.scheme
    assert rule["backendService"].endswith(f"/backendServices/{want['backend']}")
    assert obj["status"]["loadBalancer"]["ingress"] == [{"ip": rule["IPAddress"]}]
    assert kind.finalizer in obj["metadata"]["finalizers"]

    firewall = gce.get(sandbox, f"global/firewalls/{want['firewall']}")
    assert set(firewall["sourceRanges"]) == L4_RANGES
    assert "destinationRanges" not in firewall  # unpinned: admits probes to any IP
    assert firewall["targetTags"] == [NODE_TAG]
    assert firewall["allowed"] == [{"IPProtocol": "tcp", "ports": ["10256"]}]


@pytest.mark.parametrize("kind", KINDS[:2], ids=[k.service for k in KINDS[:2]])
def test_ingress_gce_records_what_it_made_on_the_service(sandbox: Sandbox, kind: Kind) -> None:
    """pkg/l4/annotations: the service.kubernetes.io/ keys."""
    want = expected_names(sandbox, kind)
    annotations = gce.service(sandbox, kind.service)["metadata"]["annotations"]
    recorded = {k: v for k, v in annotations.items() if k.startswith("service.kubernetes.io/")}
    assert recorded == {
        "service.kubernetes.io/backend-service": want["backend"],
        "service.kubernetes.io/healthcheck": want["check"],
        "service.kubernetes.io/firewall-rule-for-hc": want["firewall"],
        "service.kubernetes.io/tcp-forwarding-rule": want["rule"],
        "service.kubernetes.io/firewall-rule": want["backend"],  # L4Firewall = L4Backend
    }


def test_the_cloud_providers_internal_lb_is_described_with_the_services_name(
    sandbox: Sandbox,
) -> None:
    """makeBackendServiceDescription: what tells lbhc the backend service is this Service's."""
    backend = gce.backend_service(sandbox, "ilb-v1-7")
    assert backend["description"] == f'{{"kubernetes.io/service-name":"{SPEC.namespace}/ilb-v1-7"}}'
    annotations = gce.service(sandbox, "ilb-v1-7")["metadata"].get("annotations") or {}
    assert not any(k.startswith("service.kubernetes.io/") for k in annotations)


@pytest.mark.parametrize("kind", KINDS, ids=[k.service for k in KINDS])
def test_every_node_is_a_member_and_answers_healthy(sandbox: Sandbox, kind: Kind) -> None:
    """Members: every node (3 nodes: under any subset size); getHealth from real probes of
    the emulated kube-proxies."""
    everyone = {node_name(i) for i in range(SPEC.nodes)}
    (group,) = gce.groups(sandbox, kind.service)
    assert gce.members(sandbox, group) == everyone
    healthy = dict.fromkeys(everyone, "HEALTHY")
    wait_for(lambda: gce.health(sandbox, kind.service) == healthy, 20, f"{kind.service} HEALTHY")


def test_lbhc_reads_each_backend_service_with_its_check_and_the_shared_group(
    sandbox: Sandbox,
) -> None:
    """lbhc's own reader (lbhc.gce.client read_backends), over the socket."""
    view = GceClient(GceClientConfig(SPEC.project, SPEC.region, endpoint=sandbox.compute_url))
    backends = view.read_backends()
    assert backends.unreadable == ""
    by_name = {s.name: s for s in backends.services}
    for kind in KINDS:
        want = expected_names(sandbox, kind)
        service = by_name[want["backend"]]
        assert service.scheme == kind.scheme and service.draining_timeout_sec == kind.draining
        (check_url,) = service.health_checks
        check = next(c for c in backends.checks.values() if c.self_link == check_url)
        assert (check.name, check.type, check.port, check.request_path) == (
            want["check"],
            "HTTP",
            10256,
            "/healthz",
        )
    ig = f"k8s-ig--{sandbox.cloud_provider_uid}"
    group = f"projects/{SPEC.project}/zones/{SPEC.zone}/instanceGroups/{ig}"
    assert {m.rsplit("/", 1)[-1] for m in backends.members[group]} == {
        node_name(i) for i in range(SPEC.nodes)
    }
