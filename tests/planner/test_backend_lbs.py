"""Services whose load balancer is a backend service: which one is theirs, and the coverage
`lbhc status` gives them (read only: lbhc never writes there)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from lbhc.model.backend import INTERNAL, BackendService, BackendView
from lbhc.model.cluster import Service
from lbhc.planner.coverage import Coverage
from lbhc.planner.names import target_pool_name
from lbhc.planner.status import LbhcCheckState
from tests.builders import assessed, cloud, cluster, service
from tests.builders.backend import INTERNAL_HC, SHARED_HC, TCP_HC, annotated, backend, backend_view


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
    world = cloud(backends=backend_view(case.backends))
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
