"""Services whose load balancer is a backend service: which one is theirs, and the coverage
`lbhc status` gives them (read only: lbhc never writes there)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from lbhc.model.backend import INTERNAL, BackendService, BackendView, HealthCheck
from lbhc.model.cloud import resource_path
from lbhc.model.cluster import Service
from lbhc.planner.backend_lbs import BACKEND_SERVICE_ANNOTATION
from lbhc.planner.coverage import Coverage
from lbhc.planner.names import target_pool_name
from lbhc.planner.status import LbhcCheckState
from tests.builders import PROJECT, REGION, assessed, cloud, cluster, service

BASE = "https://www.googleapis.com/compute/v1/projects"
SHARED_HC = HealthCheck(
    "k8s2-axyqjz2d-l4-shared-hc",
    f"{BASE}/{PROJECT}/regions/{REGION}/healthChecks/k8s2-axyqjz2d-l4-shared-hc",
    region=REGION,
    port=10256,
    request_path="/healthz",
    check_interval_sec=8,
    timeout_sec=1,
    healthy_threshold=1,
    unhealthy_threshold=3,
)
# The cloud provider's internal check: global, non-legacy, named like the legacy node check.
INTERNAL_HC = replace(
    SHARED_HC,
    name="k8s-5e1d1b2c3a4f6789-node",
    self_link=f"{BASE}/{PROJECT}/global/healthChecks/k8s-5e1d1b2c3a4f6789-node",
    region="",
)
TCP_HC = replace(
    SHARED_HC,
    name="tcp",
    self_link=f"{BASE}/{PROJECT}/global/healthChecks/tcp",
    type="TCP",
    request_path="",
)


def backend(name: str, check: HealthCheck | None, **fields: object) -> BackendService:
    return BackendService(
        name,
        f"{BASE}/{PROJECT}/regions/{REGION}/backendServices/{name}",
        region=REGION,
        health_checks=(check.self_link,) if check else (),
        **fields,  # type: ignore[arg-type]
    )


def annotated(name: str, backend_name: str, policy: str = "Cluster") -> Service:
    """A Service as ingress-gce leaves it: the backend service's name recorded on it."""
    return service(name, policy=policy, annotations={BACKEND_SERVICE_ANNOTATION: backend_name})


@dataclass(frozen=True)
class Case:
    name: str
    svc: Service
    backends: tuple[BackendService, ...]
    coverage: Coverage
    backend_service: str = ""


WEB = service("web")
CP_NAME = target_pool_name(WEB.metadata.uid)
CASES = [
    Case(
        "ingress-gce RBS, shared check",
        annotated("web", "k8s2-web"),
        (backend("k8s2-web", SHARED_HC),),
        Coverage.BACKEND_SERVICE,
        "k8s2-web",
    ),
    Case(
        "the cloud provider's internal LB, its global node check",
        WEB,
        (
            backend(
                CP_NAME,
                INTERNAL_HC,
                scheme=INTERNAL,
                description='{"kubernetes.io/service-name":"default/web"}',
            ),
        ),
        Coverage.BACKEND_SERVICE,
        CP_NAME,
    ),
    Case(
        "Local",
        annotated("local", "k8s2-local", "Local"),
        (backend("k8s2-local", SHARED_HC),),
        Coverage.LOCAL,
        "k8s2-local",
    ),
    Case(
        "a TCP check",
        annotated("web", "k8s2-web"),
        (backend("k8s2-web", TCP_HC),),
        Coverage.OTHER_CHECK,
        "k8s2-web",
    ),
    # Named like the cloud provider's, but not describing this Service: someone else's.
    Case("named like ours, not ours", WEB, (backend(CP_NAME, INTERNAL_HC),), Coverage.NO_POOL),
    Case("annotation naming nothing", annotated("web", "gone"), (), Coverage.NO_POOL),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_backend_service_load_balancer_gets_the_coverage_of_its_check(case: Case) -> None:
    checks = {resource_path(c.self_link): c for c in (SHARED_HC, INTERNAL_HC, TCP_HC)}
    view = BackendView(case.backends, checks, {}, unreadable="")
    world = replace(cloud(), backends=view)
    report = assessed(cluster(services=(case.svc,)), world)
    status = report.services[0]
    assert status.coverage is case.coverage, status.reason
    assert status.backend_service == case.backend_service
    assert status.lbhc is LbhcCheckState.NOT_APPLICABLE  # read, never written
    if case.backend_service:
        assert "lbhc reads it, never writes it" in status.reason


def test_an_unreadable_view_says_so_instead_of_no_load_balancer() -> None:
    world = replace(cloud(), backends=BackendView(unreadable="403 Forbidden"))
    status = assessed(cluster(services=(WEB,)), world).services[0]
    assert status.coverage is Coverage.NO_POOL
    assert "could not be read: 403 Forbidden" in status.reason
