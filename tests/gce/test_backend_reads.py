"""Backend-service load balancers as lbhc reads them (never writes them): the real
google-cloud-compute client over HTTP against the Compute fake. A few list pages a pass,
whatever the number of Services; a failed read is not a gap, only unreadable."""

from __future__ import annotations

from typing import Any

from lbhc.model.backend import INTERNAL
from lbhc.model.cloud import resource_path
from tests.builders import PROJECT, REGION
from tests.conftest import ComputeEnv

ZONE = f"{REGION}-a"
HEALTHZ = {"type": "HTTP", "httpHealthCheck": {"port": 10256, "requestPath": "/healthz"}}


def seed(compute: ComputeEnv, rbs_services: int) -> dict[str, Any]:
    """ingress-gce's shared regional check and `rbs_services` RBS backend services on the
    shared instance group; the cloud provider's internal LB on its global node check."""
    fake = compute.fake
    vms = [fake.add_instance(PROJECT, ZONE, f"node-{i}")["selfLink"] for i in range(3)]
    group = fake.add_instance_group(PROJECT, ZONE, "k8s-ig--abc", instances=vms)
    shared = fake.add_health_check(
        PROJECT,
        "k8s2-abc-l4-shared-hc",
        region=REGION,
        checkIntervalSec=8,
        timeoutSec=1,
        healthyThreshold=1,
        unhealthyThreshold=3,
        **HEALTHZ,
    )
    node = fake.add_health_check(PROJECT, "k8s-abc-node", **HEALTHZ)
    for i in range(rbs_services):
        fake.add_backend_service(
            PROJECT,
            REGION,
            f"k8s2-abc-default-web{i}",
            protocol="TCP",
            healthChecks=[shared["selfLink"]],
            backends=[{"group": group["selfLink"]}],
            connectionDraining={"drainingTimeoutSec": 30},
        )
    fake.add_backend_service(
        PROJECT,
        REGION,
        "a1234",
        loadBalancingScheme=INTERNAL,
        protocol="TCP",
        healthChecks=[node["selfLink"]],
        backends=[{"group": group["selfLink"]}],
    )
    return {"group": group, "vms": vms, "shared": shared, "node": node}


def test_backend_services_their_checks_and_the_shared_groups_members_are_read(
    compute: ComputeEnv,
) -> None:
    seeded = seed(compute, rbs_services=2)
    view = compute.client().read_backends()
    assert view.unreadable == ""
    by_name = {b.name: b for b in view.services}
    rbs = by_name["k8s2-abc-default-web0"]
    assert rbs.draining_timeout_sec == 30 and not rbs.internal
    assert by_name["a1234"].internal and by_name["a1234"].draining_timeout_sec == 0
    shared = view.checks[resource_path(seeded["shared"]["selfLink"])]
    assert (shared.port, shared.request_path, shared.region != "") == (10256, "/healthz", True)
    assert (shared.check_interval_sec, shared.unhealthy_threshold) == (8, 3)
    node = view.checks[resource_path(seeded["node"]["selfLink"])]
    assert node.region == "" and node.name == "k8s-abc-node"  # global, named like the legacy one
    members = view.members[resource_path(seeded["group"]["selfLink"])]
    assert members == {resource_path(url) for url in seeded["vms"]}


def test_reads_do_not_grow_with_backend_service_services(compute: ComputeEnv) -> None:
    def reads() -> int:
        compute.fake.clear_journal()
        compute.client().read_backends()
        return len(compute.fake.journal)

    seed(compute, rbs_services=3)
    few = reads()
    for i in range(3, 60):
        group = compute.fake.instance_groups(PROJECT, ZONE)["k8s-ig--abc"]["selfLink"]
        compute.fake.add_backend_service(
            PROJECT,
            REGION,
            f"k8s2-abc-more-{i}",
            protocol="TCP",
            healthChecks=[
                compute.fake.health_checks(PROJECT, REGION)["k8s2-abc-l4-shared-hc"]["selfLink"]
            ],
            backends=[{"group": group}],
        )
    # One page of backend services, one of global checks, one of regional ones, one
    # listInstances of the one shared group: the same for 4 backend services as for 61.
    assert reads() == few == 4


def test_a_backend_read_that_fails_is_unreadable_not_a_gap(compute: ComputeEnv) -> None:
    seed(compute, rbs_services=1)
    compute.fake.faults.fail_requests(5, 403, "forbidden", "GET", "/backendServices")
    snapshot = compute.client(max_attempts=1).read_snapshot("k8s-l4-healthcheck-x", backends=True)
    assert snapshot.complete  # lbhc's own removals are not withheld for it
    assert "403" in snapshot.backends.unreadable


def test_the_groups_members_are_read_only_when_asked(compute: ComputeEnv) -> None:
    """The controller asks only while a node is leaving: a group lists every node."""
    seed(compute, rbs_services=1)
    compute.fake.clear_journal()
    view = compute.client().read_backends(group_members=False)
    assert view.unreadable == "" and view.members == {}
    assert not [e for e in compute.fake.journal if e.path.endswith("/listInstances")]
    assert len(compute.fake.journal) == 3  # backend services, global and regional checks
