"""Target pools and forwarding rules through the real clients, over both transports."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake
from tests.sandbox.compute_fake.conftest import aggregated_names

P = "proj"
R = "us-central1"
CANONICAL = "https://www.googleapis.com/compute/v1/"
HC_URL = f"{CANONICAL}projects/{P}/global/httpHealthChecks/hc"
N1 = f"{CANONICAL}projects/{P}/zones/us-central1-a/instances/n1"
N2 = f"{CANONICAL}projects/{P}/zones/us-central1-b/instances/n2"


def add_request(*refs: str) -> compute_v1.TargetPoolsAddHealthCheckRequest:
    checks = [compute_v1.HealthCheckReference(health_check=ref) for ref in refs]
    return compute_v1.TargetPoolsAddHealthCheckRequest(health_checks=checks)


def remove_request(*refs: str) -> compute_v1.TargetPoolsRemoveHealthCheckRequest:
    checks = [compute_v1.HealthCheckReference(health_check=ref) for ref in refs]
    return compute_v1.TargetPoolsRemoveHealthCheckRequest(health_checks=checks)


@pytest.fixture
def seeded(fake: ComputeFake) -> ComputeFake:
    fake.add_http_health_check(P, "hc", port=10256, requestPath="/healthz")
    fake.add_http_health_check(P, "hc2")
    fake.add_target_pool(
        P,
        R,
        "pool",
        description='{"kubernetes.io/service-name":"ns/a"}',
        instances=[N1, "zones/us-central1-b/instances/n2"],
    )
    return fake


def attach(clients: Any, ref: str, pool: str = "pool") -> compute_v1.Operation:
    return clients.target_pools.add_health_check_unary(
        project=P,
        region=R,
        target_pool=pool,
        target_pools_add_health_check_request_resource=add_request(ref),
        retry=None,
    )


def test_seeded_pool_shape(clients: Any, seeded: ComputeFake) -> None:
    pool = clients.target_pools.get(project=P, region=R, target_pool="pool", retry=None)
    assert pool.region == f"{CANONICAL}projects/{P}/regions/{R}"
    assert list(pool.instances) == [N1, N2]
    assert pool.session_affinity == "NONE"
    assert "healthChecks" not in seeded.target_pools(P, R)["pool"]  # empty repeated: omitted


@pytest.mark.parametrize(
    "ref",
    [
        HC_URL,
        f"https://compute.googleapis.com/compute/v1/projects/{P}/global/httpHealthChecks/hc",
        f"projects/{P}/global/httpHealthChecks/hc",
        "global/httpHealthChecks/hc",
    ],
)
def test_add_health_check_accepts_every_reference_form(
    clients: Any, seeded: ComputeFake, ref: str
) -> None:
    op = attach(clients, ref)
    assert op.operation_type == "addHealthCheck"
    assert op.region == f"{CANONICAL}projects/{P}/regions/{R}"
    assert op.self_link.startswith(f"{CANONICAL}projects/{P}/regions/{R}/operations/")
    assert op.target_link == f"{CANONICAL}projects/{P}/regions/{R}/targetPools/pool"
    assert seeded.target_pools(P, R)["pool"]["healthChecks"] == [HC_URL]


@pytest.mark.parametrize(
    ("refs", "exc_type", "reason"),
    [
        (("global/httpHealthChecks/missing",), gexc.NotFound, "notFound"),
        (("global/healthChecks/hc",), gexc.BadRequest, "invalid"),
        (("global/httpsHealthChecks/hc",), gexc.BadRequest, "invalid"),
        (("regions/us-central1/healthChecks/hc",), gexc.BadRequest, "invalid"),
        (("global/httpHealthChecks/hc", "global/httpHealthChecks/hc2"), gexc.BadRequest, "invalid"),
        (("not a url",), gexc.BadRequest, "invalid"),
    ],
)
def test_add_health_check_validation(
    clients: Any, seeded: ComputeFake, refs: tuple[str, ...], exc_type: type, reason: str
) -> None:
    with pytest.raises(exc_type) as info:
        clients.target_pools.add_health_check_unary(
            project=P,
            region=R,
            target_pool="pool",
            target_pools_add_health_check_request_resource=add_request(*refs),
            retry=None,
        )
    assert info.value.errors[0]["reason"] == reason
    assert "healthChecks" not in seeded.target_pools(P, R)["pool"]


def test_at_most_one_health_check_per_pool(clients: Any, seeded: ComputeFake) -> None:
    attach(clients, "global/httpHealthChecks/hc")
    with pytest.raises(gexc.BadRequest) as info:
        attach(clients, "global/httpHealthChecks/hc2")
    assert info.value.errors[0]["reason"] == "invalid"
    assert seeded.target_pools(P, R)["pool"]["healthChecks"] == [HC_URL]


def test_adding_the_attached_check_again_is_a_no_op(clients: Any, seeded: ComputeFake) -> None:
    attach(clients, "global/httpHealthChecks/hc")
    op = attach(clients, HC_URL)
    assert op.status == compute_v1.Operation.Status.DONE and not op.error.errors
    assert seeded.target_pools(P, R)["pool"]["healthChecks"] == [HC_URL]


def test_remove_health_check(clients: Any, seeded: ComputeFake) -> None:
    attach(clients, "global/httpHealthChecks/hc")
    # Removing a check that is not on the pool succeeds without change.
    op = clients.target_pools.remove_health_check_unary(
        project=P,
        region=R,
        target_pool="pool",
        target_pools_remove_health_check_request_resource=remove_request(
            "global/httpHealthChecks/hc2"
        ),
        retry=None,
    )
    assert op.operation_type == "removeHealthCheck" and not op.error.errors
    assert seeded.target_pools(P, R)["pool"]["healthChecks"] == [HC_URL]
    clients.target_pools.remove_health_check_unary(
        project=P,
        region=R,
        target_pool="pool",
        target_pools_remove_health_check_request_resource=remove_request(HC_URL),
        retry=None,
    )
    assert "healthChecks" not in seeded.target_pools(P, R)["pool"]


def test_pool_verbs_on_missing_pool_are_not_found(clients: Any, seeded: ComputeFake) -> None:
    with pytest.raises(gexc.NotFound):
        attach(clients, "global/httpHealthChecks/hc", pool="ghost")
    with pytest.raises(gexc.NotFound):
        clients.target_pools.get(project=P, region=R, target_pool="ghost", retry=None)


def get_health(clients: Any, instance: str) -> list[Any]:
    result = clients.target_pools.get_health(
        project=P,
        region=R,
        target_pool="pool",
        instance_reference_resource=compute_v1.InstanceReference(instance=instance),
        retry=None,
    )
    return list(result.health_status)


def test_get_health(clients: Any, seeded: ComputeFake) -> None:
    seeded.add_forwarding_rule(
        P,
        R,
        "fr",
        target=f"projects/{P}/regions/{R}/targetPools/pool",
        ip_address="34.1.2.3",
        port_range="80-80",
    )
    seeded.set_instance_health(N2, "UNHEALTHY")
    # Without a health check every instance reports HEALTHY.
    assert [s.health_state for s in get_health(clients, N2)] == ["HEALTHY"]
    attach(clients, "global/httpHealthChecks/hc")
    [n1] = get_health(clients, N1)
    assert (n1.health_state, n1.instance, n1.ip_address, n1.port) == ("HEALTHY", N1, "34.1.2.3", 80)
    assert [s.health_state for s in get_health(clients, "zones/us-central1-b/instances/n2")] == [
        "UNHEALTHY"
    ]
    seen: list[tuple[str, str]] = []

    def prober(pool: dict[str, Any], instance: str, ip: str | None) -> str | None:
        assert ip == "34.1.2.3"  # asked per forwarding rule IP
        seen.append((pool["name"], instance))
        return "UNHEALTHY" if instance == N1 else None  # None: fall back to the set state

    seeded.health_source = prober
    assert [s.health_state for s in get_health(clients, N1)] == ["UNHEALTHY"]
    assert [s.health_state for s in get_health(clients, N2)] == ["UNHEALTHY"]
    assert seen == [("pool", N1), ("pool", N2)]


def test_get_health_of_instance_not_in_pool(clients: Any, seeded: ComputeFake) -> None:
    other = f"{CANONICAL}projects/{P}/zones/us-central1-a/instances/stranger"
    with pytest.raises(gexc.BadRequest) as info:
        get_health(clients, other)
    assert info.value.errors[0]["reason"] == "invalid"
    assert not seeded.mutating_requests()  # getHealth is a read


def test_insert_and_delete_pool(clients: Any, fake: ComputeFake) -> None:
    fake.add_http_health_check(P, "hc")
    body = compute_v1.TargetPool(
        name="made", instances=[N1], health_checks=["global/httpHealthChecks/hc"]
    )
    op = clients.target_pools.insert_unary(
        project=P, region=R, target_pool_resource=body, retry=None
    )
    assert op.operation_type == "insert"
    made = fake.target_pools(P, R)["made"]
    assert made["healthChecks"] == [HC_URL] and made["instances"] == [N1]
    with pytest.raises(gexc.BadRequest):
        two = compute_v1.TargetPool(name="two", health_checks=[HC_URL, HC_URL])
        clients.target_pools.insert_unary(project=P, region=R, target_pool_resource=two, retry=None)
    clients.target_pools.delete_unary(project=P, region=R, target_pool="made", retry=None)
    assert fake.target_pools(P, R) == {}


def test_pool_used_by_forwarding_rule_cannot_be_deleted(clients: Any, seeded: ComputeFake) -> None:
    seeded.add_forwarding_rule(
        P, R, "fr", target=f"{CANONICAL}projects/{P}/regions/{R}/targetPools/pool"
    )
    with pytest.raises(gexc.BadRequest) as info:
        clients.target_pools.delete_unary(project=P, region=R, target_pool="pool", retry=None)
    assert info.value.errors[0]["reason"] == "resourceInUseByAnotherResource"


def test_forwarding_rules(clients: Any, seeded: ComputeFake) -> None:
    pool = f"{CANONICAL}projects/{P}/regions/{R}/targetPools/pool"
    seeded.add_forwarding_rule(P, R, "fr-a", target=pool, description="svc a")
    body = compute_v1.ForwardingRule(name="fr-b", target=pool, port_range="443", I_p_protocol="TCP")
    clients.forwarding_rules.insert_unary(
        project=P, region=R, forwarding_rule_resource=body, retry=None
    )
    got = clients.forwarding_rules.get(project=P, region=R, forwarding_rule="fr-b", retry=None)
    assert (got.target, got.port_range, got.I_p_protocol) == (pool, "443-443", "TCP")
    assert got.I_p_address  # an ephemeral address was assigned
    listed = clients.forwarding_rules.list(project=P, region=R, retry=None)
    assert [(r.name, r.description) for r in listed] == [("fr-a", "svc a"), ("fr-b", "")]
    with pytest.raises(gexc.NotFound):
        ghost = compute_v1.ForwardingRule(
            name="fr-c", target=f"projects/{P}/regions/{R}/targetPools/x"
        )
        clients.forwarding_rules.insert_unary(
            project=P, region=R, forwarding_rule_resource=ghost, retry=None
        )
    clients.forwarding_rules.delete_unary(project=P, region=R, forwarding_rule="fr-b", retry=None)
    assert set(seeded.forwarding_rules(P, R)) == {"fr-a"}


def test_aggregated_list(clients: Any, seeded: ComputeFake) -> None:
    seeded.add_target_pool(P, "europe-west1", "eu-pool")
    seen = aggregated_names(clients.target_pools, "target_pools")
    assert seen[f"regions/{R}"] == ["pool"]
    assert seen["regions/europe-west1"] == ["eu-pool"]
    assert seen["regions/us-east1"] == []  # a warning-only scope


def test_pagination_1200_pools(clients: Any, fake: ComputeFake) -> None:
    names = [f"pool-{i:04d}" for i in range(1200)]
    for name in names:
        fake.add_target_pool(P, R, name)
    fake.clear_journal()
    pager = clients.target_pools.list(
        request=compute_v1.ListTargetPoolsRequest(project=P, region=R, max_results=500), retry=None
    )
    listed = [pool.name for pool in pager]
    assert sorted(listed) == names and len(set(listed)) == 1200
    pages = [e for e in fake.journal if e.path.endswith("/targetPools")]
    assert len(pages) == 3
    assert [e.query.get("maxResults") for e in pages] == ["500"] * 3
    assert "pageToken" not in pages[0].query and all("pageToken" in e.query for e in pages[1:])
    aggregated = clients.target_pools.aggregated_list(
        request=compute_v1.AggregatedListTargetPoolsRequest(project=P, max_results=500), retry=None
    )
    assert sorted(p.name for _, scoped in aggregated for p in scoped.target_pools) == names
