"""The health prober behind regionBackendServices.getHealth: real HTTP probes of each backend
service's members (an instance group's instances, a NEG's endpoints) on its HTTP check, sent
to each forwarding rule's IP from the probe ranges of its scheme (internal passthrough:
35.191.0.0/16 and 130.211.0.0/22; external: 35.191.0.0/16, 209.85.152.0/22, 209.85.204.0/22)
and judged by the fake's firewall."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from lbhc.sandbox.compute_fake import ComputeFake, HealthProber
from lbhc.sandbox.compute_fake.probe_targets import INTERNAL_PROBE_RANGES, PROBE_RANGES
from tests.sandbox.compute_fake.conftest import Api
from tests.sandbox.compute_fake.lb_world import (
    CANONICAL,
    IG_A,
    NEG,
    SERVICES,
    P,
    R,
    seed,
    vm,
)
from tests.sandbox.compute_fake.test_prober import SCALE, InstanceServer, Resolver
from tests.waiting import wait_for

PORT = 10256
IP = "10.1.2.3"
HTTP_HC = f"{CANONICAL}projects/{P}/regions/{R}/healthChecks/http"
MEMBERS = (vm("n1"), vm("n2"))
ONLY_EXTERNAL = [r for r in PROBE_RANGES if r not in INTERNAL_PROBE_RANGES]
ONLY_INTERNAL = [r for r in INTERNAL_PROBE_RANGES if r not in PROBE_RANGES]


@pytest.fixture
def node_server() -> Iterator[InstanceServer]:
    server = InstanceServer()
    yield server
    server.stop()


@pytest.fixture
def prober(fake: ComputeFake, node_server: InstanceServer) -> Iterator[HealthProber]:
    """Every member answers 200 on the check's port; started (again, idempotent) once the
    test has seeded the fake."""
    resolver = Resolver()
    for instance in MEMBERS:
        resolver.route(instance, node_server.address, PORT)
    with HealthProber(fake, resolver, time_scale=SCALE, rescan_sec=0.01) as p:
        yield p


def backend_service(fake: ComputeFake, scheme: str, group: str, check: str) -> None:
    seed(fake)
    timings = {"checkIntervalSec": 4, "timeoutSec": 2, "healthyThreshold": 1}
    http = {"port": PORT, "requestPath": "/healthz"}
    fake.add_health_check(P, "http", R, httpHealthCheck=http, unhealthyThreshold=2, **timings)
    service: dict[str, Any] = {"loadBalancingScheme": scheme, "protocol": "TCP"}
    fake.add_backend_service(
        P, R, "bs", healthChecks=[check], backends=[{"group": group}], **service
    )
    ported: dict[str, Any] = {"ports": ["80"]} if scheme == "INTERNAL" else {}
    fake.add_forwarding_rule(
        P,
        R,
        "fr",
        backend_service=f"{CANONICAL}{SERVICES}/bs",
        ip_address=IP,
        load_balancing_scheme=scheme,
        **ported,
    )


def admit(fake: ComputeFake, sources: Sequence[str]) -> None:
    allowed = [{"IPProtocol": "tcp", "ports": [str(PORT)]}]
    fake.add_firewall(P, "hc-fw", allowed=allowed, sourceRanges=list(sources))


def health(api: Api, group: str) -> dict[str, str]:
    body = api.call("POST", f"{SERVICES}/bs/getHealth", {"group": group})
    return {s["instance"]: s["healthState"] for s in body.get("healthStatus", [])}


CASES = [
    # (scheme, backend group, sources the firewall admits, expected state)
    ("INTERNAL", IG_A, INTERNAL_PROBE_RANGES, "HEALTHY"),
    ("INTERNAL", NEG, INTERNAL_PROBE_RANGES, "HEALTHY"),
    ("INTERNAL", NEG, ONLY_EXTERNAL, "UNHEALTHY"),
    ("INTERNAL", IG_A, ONLY_EXTERNAL, "UNHEALTHY"),
    ("EXTERNAL", IG_A, PROBE_RANGES, "HEALTHY"),
    ("EXTERNAL", NEG, PROBE_RANGES, "HEALTHY"),
    ("EXTERNAL", IG_A, ONLY_INTERNAL, "UNHEALTHY"),
]


@pytest.mark.parametrize(
    ("scheme", "group", "sources", "expected"),
    CASES,
    ids=[f"{c[0]}-{c[1].rsplit('/', 2)[-2]}-{c[3]}-{i}" for i, c in enumerate(CASES)],
)
def test_members_are_probed_from_the_ranges_of_the_scheme(
    fake: ComputeFake,
    server_api: Api,
    prober: HealthProber,
    scheme: str,
    group: str,
    sources: list[str],
    expected: str,
) -> None:
    backend_service(fake, scheme, group, HTTP_HC)
    admit(fake, sources)
    prober.start()
    want = dict.fromkeys(MEMBERS, expected)
    keys = {(HTTP_HC, member, IP) for member in MEMBERS}
    wait_for(lambda: prober.probe_keys() == keys, 10, "every member probed at the rule's IP")
    done = prober.probes(check_url=HTTP_HC) + 6
    wait_for(lambda: prober.probes(check_url=HTTP_HC) >= done, 10, "six more probes")
    wait_for(lambda: health(server_api, group) == want, 10, f"every member {expected}")
    sent = prober.probes(check_url=HTTP_HC)  # first: a probe counted since is dropped too
    dropped = prober.dropped(check_url=HTTP_HC)
    assert dropped >= sent > 0 if expected == "UNHEALTHY" else dropped == 0


def test_a_member_failing_its_check_goes_unhealthy_and_back(
    fake: ComputeFake, server_api: Api, prober: HealthProber, node_server: InstanceServer
) -> None:
    backend_service(fake, "INTERNAL", IG_A, HTTP_HC)
    admit(fake, list(INTERNAL_PROBE_RANGES))
    prober.start()
    healthy = dict.fromkeys(MEMBERS, "HEALTHY")
    wait_for(lambda: health(server_api, IG_A) == healthy, 10, "every member HEALTHY")
    node_server.status = 503
    wait_for(lambda: set(health(server_api, IG_A).values()) == {"UNHEALTHY"}, 10, "UNHEALTHY")
    node_server.status = 200
    wait_for(lambda: health(server_api, IG_A) == healthy, 10, "HEALTHY again")
    assert [s for _, s in prober.transitions(vm("n1"), HTTP_HC, IP)] == [
        "HEALTHY",
        "UNHEALTHY",
        "HEALTHY",
    ]


def test_a_check_that_is_not_http_is_not_probed_and_getHealth_falls_back(
    fake: ComputeFake, server_api: Api, prober: HealthProber
) -> None:
    """The prober sends HTTP GETs only: a TCP check's members keep the fake's own answer."""
    tcp = f"{CANONICAL}projects/{P}/regions/{R}/healthChecks/hc"  # lb_world's TCP check
    backend_service(fake, "EXTERNAL", IG_A, tcp)
    fake.set_instance_health(vm("n2"), "UNHEALTHY")
    prober.start()
    fallback = {vm("n1"): "HEALTHY", vm("n2"): "UNHEALTHY"}
    wait_for(lambda: health(server_api, IG_A) == fallback, 10, "the fake's own answer")
    assert prober.probe_keys() == set() and prober.probes() == 0
