"""The health prober through the fake's firewall: probes go to each forwarding rule's IP from
Google's probe ranges and are dropped unless the VPC rules and firewall policies admit them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake, HealthProber
from lbhc.sandbox.compute_fake.probe_targets import PROBE_RANGES
from tests.sandbox.compute_fake.conftest import PROJECT as P
from tests.sandbox.compute_fake.conftest import REGION as R
from tests.sandbox.compute_fake.conftest import Api, Clients, check_url, instance_url
from tests.sandbox.compute_fake.test_prober import (
    SCALE,
    InstanceServer,
    Resolver,
    add_check,
    pool_path,
)
from tests.waiting import wait_for

A, B = instance_url("a"), instance_url("b")
HC = check_url("hc")
IP_A, IP_B = "34.1.1.1", "34.2.2.2"
SA = "nodes@proj.iam.gserviceaccount.com"
NET = "https://www.googleapis.com/compute/v1/projects/proj/global/networks/default"


@pytest.fixture
def node_server() -> Iterator[InstanceServer]:
    server = InstanceServer()
    yield server
    server.stop()


@pytest.fixture
def prober(fake: ComputeFake, node_server: InstanceServer) -> Iterator[HealthProber]:
    """Every instance answers 200 from one server; not started: tests seed the fake first."""
    resolver = Resolver()
    for instance in (A, B):
        resolver.route(instance, node_server.address)
    with HealthProber(fake, resolver, time_scale=SCALE, rescan_sec=0.01) as p:
        yield p


def allow_probes(fake: ComputeFake, name: str = "hc-fw", **fields: Any) -> None:
    body = {"allowed": [{"IPProtocol": "tcp", "ports": ["80"]}], "sourceRanges": [*PROBE_RANGES]}
    fake.add_firewall(P, name, **(body | fields))


def pool_with_rules(fake: ComputeFake, pool: str, instance: str, *ips: str) -> None:
    fake.add_target_pool(P, R, pool, instances=[instance], health_checks=["hc"])
    for i, ip in enumerate(ips):
        fake.add_forwarding_rule(P, R, f"{pool}-fr{i}", target=pool_path(pool), ip_address=ip)


def states(api: Api, instance: str, pool: str) -> dict[str | None, str]:
    """getHealth's answer for the instance: {forwarding rule IP (None: no rule): state}."""
    body = api.call("POST", f"{pool_path(pool)}/getHealth", {"instance": instance})
    return {s.get("ipAddress"): s["healthState"] for s in body["healthStatus"]}


def settle(prober: HealthProber, instance: str, probes: int = 3) -> None:
    """Wait until `probes` more probes of the instance have been judged."""
    target = prober.probes(instance) + probes
    wait_for(lambda: prober.probes(instance) >= target, 10, f"{probes} probes of {instance}")


Setup = Callable[[ComputeFake], None]


def _seeded_tagged(fake: ComputeFake) -> None:
    fake.add_instance(P, "us-central1-a", "a", tags=["node"])
    allow_probes(fake, targetTags=["node"])


def _seeded_untagged(fake: ComputeFake) -> None:
    fake.add_instance(P, "us-central1-a", "a", tags=["web"])
    fake.default_instance_tags = ["node"]  # not for a seeded instance: it has its own
    allow_probes(fake, targetTags=["node"])


def _default_tags(fake: ComputeFake) -> None:
    fake.default_instance_tags = ["node"]
    allow_probes(fake, targetTags=["node"])


def _service_account(fake: ComputeFake) -> None:
    fake.add_instance(P, "us-central1-a", "a", service_accounts=[SA])
    allow_probes(fake, targetServiceAccounts=[SA])


def _other_service_account(fake: ComputeFake) -> None:
    fake.default_instance_service_accounts = ["web@proj.iam.gserviceaccount.com"]
    allow_probes(fake, targetServiceAccounts=[SA])


def _org_deny(fake: ComputeFake) -> None:
    allow_probes(fake)
    rule = {"priority": 1, "action": "deny", "direction": "INGRESS"}
    rule["match"] = {"srcIpRanges": ["0.0.0.0/0"], "layer4Configs": [{"ipProtocol": "all"}]}
    fake.add_firewall_policy(P, "default", {"name": "1", "type": "HIERARCHY", "rules": [rule]})


def _network_allow_before_classic_deny(fake: ComputeFake) -> None:
    fake.add_firewall(P, "deny-all", denied=[{"IPProtocol": "all"}], priority=0)
    rule = {"priority": 1, "action": "allow", "direction": "INGRESS", "targetResources": [NET]}
    rule["match"] = {"srcIpRanges": [*PROBE_RANGES], "layer4Configs": [{"ipProtocol": "tcp"}]}
    fake.add_firewall_policy(P, "default", {"name": "np", "type": "NETWORK", "rules": [rule]})
    fake.set_network_firewall_policy_enforcement_order(P, "default", "BEFORE_CLASSIC_FIREWALL")


def _disabled(fake: ComputeFake) -> None:
    allow_probes(fake, disabled=True)


def _nothing(fake: ComputeFake) -> None:
    pass


CASES: list[tuple[str, Setup, tuple[str, ...], str]] = [
    ("no rule: the implied deny drops every probe", _nothing, (IP_A,), "UNHEALTHY"),
    ("no forwarding rule: no firewall gate", _nothing, (), "HEALTHY"),
    ("a rule targeting the seeded instance's tag", _seeded_tagged, (IP_A,), "HEALTHY"),
    ("a seeded instance without the tag", _seeded_untagged, (IP_A,), "UNHEALTHY"),
    ("an unseeded instance carries the default tags", _default_tags, (IP_A,), "HEALTHY"),
    ("a rule targeting its service account", _service_account, (IP_A,), "HEALTHY"),
    ("a rule targeting another service account", _other_service_account, (IP_A,), "UNHEALTHY"),
    ("a disabled allow", _disabled, (IP_A,), "UNHEALTHY"),
    ("a hierarchical deny beats the VPC allow", _org_deny, (IP_A,), "UNHEALTHY"),
    ("before classic, the network policy allows first", _network_allow_before_classic_deny,
     (IP_A,), "HEALTHY"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("setup", "ips", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_firewall_decides_which_probes_arrive(
    fake: ComputeFake,
    server_api: Api,
    prober: HealthProber,
    setup: Setup,
    ips: tuple[str, ...],
    expected: str,
) -> None:
    add_check(fake)
    pool_with_rules(fake, "pool", A, *ips)
    setup(fake)
    prober.start()
    want = {ip: expected for ip in ips} if ips else {None: expected}
    if expected == "HEALTHY":
        wait_for(lambda: states(server_api, A, "pool") == want, 10, f"A {expected}")
        assert prober.dropped(A) == 0
    else:
        settle(prober, A)
        assert states(server_api, A, "pool") == want
        assert prober.dropped(A) == prober.probes(A)


def test_health_is_per_forwarding_rule_ip(
    fake: ComputeFake, server_api: Api, prober: HealthProber
) -> None:
    """One pool, two rules: probes to the IP the firewall is pinned to pass, the others drop."""
    add_check(fake)
    pool_with_rules(fake, "pool", A, IP_A, IP_B)
    allow_probes(fake, destinationRanges=[IP_A])
    prober.start()
    want = {IP_A: "HEALTHY", IP_B: "UNHEALTHY"}
    wait_for(lambda: states(server_api, A, "pool") == want, 10, "A healthy at IP_A only")
    assert prober.probe_keys() == {(HC, A, IP_A), (HC, A, IP_B)}
    assert prober.pairs() == {(HC, A)}
    wait_for(lambda: prober.dropped(A, ip_address=IP_B) >= 2, 10, "probes to IP_B dropped")
    assert states(server_api, A, "pool") == want
    assert prober.dropped(A, ip_address=IP_A) == 0
    pool = fake.target_pools(P, R)["pool"]
    assert prober.health(pool, A, IP_A) == "HEALTHY"
    assert prober.health(pool, A) == "UNHEALTHY"  # the pool as a whole: not at every IP
    assert [s for _, s in prober.transitions(A, ip_address=IP_A)] == ["HEALTHY"]
    assert prober.transitions(A, ip_address=IP_B) == []


def test_a_firewall_pinned_to_one_load_balancer_starves_the_other(
    fake: ComputeFake, server_clients: Clients, server_api: Api, prober: HealthProber
) -> None:
    """Two pools share one check; each has its own forwarding rule IP. The check's firewall is
    pinned (destinationRanges) to the first IP, as the GCE cloud provider pins its shared node
    check firewall: the second pool's instances never pass, until an unpinned rule is added
    over the API."""
    fake.default_instance_tags = ["node"]
    add_check(fake)
    pool_with_rules(fake, "pool-a", A, IP_A)
    pool_with_rules(fake, "pool-b", B, IP_B)
    allow_probes(fake, "pinned", targetTags=["node"], destinationRanges=[f"{IP_A}/32"])
    prober.start()

    def health(instance: str, pool: str) -> list[tuple[str, str]]:
        got = server_clients.target_pools.get_health(
            project=P,
            region=R,
            target_pool=pool,
            instance_reference_resource=compute_v1.InstanceReference(instance=instance),
            retry=None,
        )
        return [(s.ip_address, s.health_state) for s in got.health_status]

    wait_for(lambda: health(A, "pool-a") == [(IP_A, "HEALTHY")], 10, "pool-a's A HEALTHY")
    settle(prober, B)
    assert health(B, "pool-b") == [(IP_B, "UNHEALTHY")]
    assert prober.dropped(B) == prober.probes(B) > 0

    unpinned = compute_v1.Firewall(
        name="unpinned",
        allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=["80"])],
        source_ranges=list(PROBE_RANGES),
        target_tags=["node"],
    )
    server_clients.firewalls.insert_unary(project=P, firewall_resource=unpinned, retry=None)
    # Seen at the next rescan; then healthyThreshold (1) passing probe, one interval apart.
    wait_for(lambda: health(B, "pool-b") == [(IP_B, "HEALTHY")], 10, "pool-b's B HEALTHY")
    assert health(A, "pool-a") == [(IP_A, "HEALTHY")]
    assert prober.health(fake.target_pools(P, R)["pool-b"], B) == "HEALTHY"
