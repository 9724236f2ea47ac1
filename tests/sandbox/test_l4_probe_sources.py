"""GCE probes an internal passthrough load balancer from 35.191.0.0/16 and 130.211.0.0/22 and
an external one from 35.191.0.0/16, 209.85.152.0/22 and 209.85.204.0/22 (GCE docs "Probe IP
ranges and firewall rules"): with the checks' firewalls narrowed over the Compute API to the
ranges only one kind is probed from, the other kind's members read UNHEALTHY in getHealth,
from the sandbox's real probes of the emulated kube-proxies."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node_name
from tests.sandbox import l4_reads as gce
from tests.waiting import wait_for

# web-0, legacy-1, then rbs-2 (external), ilb-3 and ilb-v1-4 (internal).
SPEC = SandboxSpec(nodes=2, services=1, local_services=0)
EXTERNAL_ONLY = ["209.85.152.0/22", "209.85.204.0/22"]
INTERNAL_ONLY = ["130.211.0.0/22"]
ALL_FOUR = ["130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"]


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    options = SandboxOptions(spec=SPEC, time_scale=0.05, operation_latency=0.0)
    with Sandbox(options) as running:
        yield running


def narrow_check_firewalls(sandbox: Sandbox, sources: list[str]) -> None:
    """PATCH the two rules admitting probes on 10256 to any IP: ingress-gce's shared one and
    the cloud provider's internal LBs' (neither controller looks again until its Service
    changes). The target pools' node firewall is pinned to web-0's IP: not these LBs'."""
    names = {
        gce.service(sandbox, "rbs-2")["metadata"]["annotations"][
            "service.kubernetes.io/firewall-rule-for-hc"
        ],
        f"k8s-{sandbox.cloud_provider_uid}-node-hc",
    }
    for name in names:
        url = f"{sandbox.compute_url}/compute/v1/projects/{SPEC.project}/global/firewalls/{name}"
        requests.patch(url, json={"sourceRanges": sources}, timeout=10).raise_for_status()


@pytest.mark.parametrize(
    ("sources", "external", "internal"),
    [
        (EXTERNAL_ONLY, "HEALTHY", "UNHEALTHY"),
        (INTERNAL_ONLY, "UNHEALTHY", "HEALTHY"),
        (ALL_FOUR, "HEALTHY", "HEALTHY"),
    ],
    ids=["external-only-ranges", "internal-only-range", "all-four"],
)
def test_each_scheme_is_probed_from_its_own_ranges(
    sandbox: Sandbox, sources: list[str], external: str, internal: str
) -> None:
    nodes = {node_name(i) for i in range(SPEC.nodes)}
    expected = {"rbs-2": external, "ilb-3": internal, "ilb-v1-4": internal}

    def states() -> dict[str, dict[str, str]]:
        return {service: gce.health(sandbox, service) for service in expected}

    every_healthy = {service: dict.fromkeys(nodes, "HEALTHY") for service in expected}
    wait_for(lambda: states() == every_healthy, 20, "every member HEALTHY at first")
    narrow_check_firewalls(sandbox, sources)
    want = {service: dict.fromkeys(nodes, state) for service, state in expected.items()}
    wait_for(lambda: states() == want, 20, lambda: f"{want}; got {states()}")
    prober = sandbox.prober
    assert prober is not None
    for service, state in expected.items():  # the firewall dropped them, nothing else
        ip = gce.service(sandbox, service)["status"]["loadBalancer"]["ingress"][0]["ip"]
        assert prober.dropped(ip_address=ip) > 0 or state == "HEALTHY", service
