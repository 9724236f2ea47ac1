"""The current cloud provider profile at run time: a new Service's load balancer, made with
its check and firewalls as today's GCE cloud provider makes it; a traffic policy flip
recreating pool and rule on the same IP; a deletion taking the nodes check (and then its
firewall) only with the last pool using it. The emulator's writes are journaled under its own
User-Agent and no lbhc client id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import LB_CLEANUP_FINALIZER, SandboxSpec
from lbhc.sandbox.upstream.compute import USER_AGENT
from tests.builders import kube
from tests.waiting import wait_for

NS = "demo"


def current(services: int, local: int = 0) -> Sandbox:
    """A sandbox of the current profile, to start with `with`."""
    spec = SandboxSpec(nodes=2, services=services, local_services=local, cloud_provider="current")
    return Sandbox(SandboxOptions(spec=spec, operation_latency=0.0))


@pytest.fixture
def world() -> Iterator[Sandbox]:
    """web-0, web-1 (Cluster), local-2 (Local), legacy-3 (Cluster, pool without check), rbs-4."""
    with current(3, 1) as sandbox:
        yield sandbox


def add_service(sandbox: Sandbox, name: str, **spec: Any) -> None:
    annotations = spec.pop("annotations", {})
    obj = kube.service(
        name,
        kube.with_annotations(annotations),
        kube.with_port(443, node_port=31443, target_port=8443),
        kube.with_spec(**spec),
        namespace=NS,
    )
    sandbox.kube.upsert(obj)


def pool(sandbox: Sandbox, service: str) -> dict[str, Any] | None:
    spec = sandbox.spec
    lb = sandbox.load_balancer_name(NS, service)
    return sandbox.compute.target_pools(spec.project, spec.region).get(lb)


def rule_ip(sandbox: Sandbox, service: str) -> str | None:
    spec = sandbox.spec
    lb = sandbox.load_balancer_name(NS, service)
    rule = sandbox.compute.forwarding_rules(spec.project, spec.region).get(lb)
    return None if rule is None else str(rule["IPAddress"])


def ingress(sandbox: Sandbox, service: str) -> list[dict[str, str]]:
    obj: Any = sandbox.kube.get("Service", NS, service)
    return list(((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [])


def checks_of(pool_: dict[str, Any] | None) -> list[str]:
    return [url.rsplit("/", 1)[-1] for url in (pool_ or {}).get("healthChecks", [])]


def writes(sandbox: Sandbox) -> list[tuple[str, str, str, int]]:
    """The emulator's mutations: (method, collection, name or "", status)."""
    out = []
    for entry in sandbox.compute.mutating_requests():
        assert (entry.client_id, entry.user_agent) == ("", USER_AGENT)
        parts = entry.path.split("/")
        collection, name = (parts[-1], "") if entry.method == "POST" else (parts[-2], parts[-1])
        if entry.method == "POST" and entry.body:
            name = str(entry.body.get("name", ""))
        out.append((entry.method, collection, name, entry.status))
    return out


def test_a_new_cluster_service_gets_the_nodes_check_its_firewall_pinned_then_a_pool() -> None:
    with current(0) as sandbox:
        nodes, firewall = sandbox.node_health_check_name, sandbox.node_health_check_firewall_name
        assert nodes is not None and firewall is not None
        add_service(sandbox, "shop")
        ip = wait_for(lambda: ingress(sandbox, "shop"), what="shop's load balancer")[0]["ip"]
        lb = sandbox.load_balancer_name(NS, "shop")
        assert checks_of(pool(sandbox, "shop")) == [nodes]
        assert rule_ip(sandbox, "shop") == ip
        assert writes(sandbox) == [
            ("POST", "firewalls", f"k8s-fw-{lb}", 200),
            ("POST", "firewalls", firewall, 200),
            ("POST", "httpHealthChecks", nodes, 200),
            ("POST", "targetPools", lb, 200),
            ("POST", "forwardingRules", lb, 200),
        ]
        project = sandbox.spec.project
        assert sandbox.compute.firewalls(project)[firewall]["destinationRanges"] == [ip]
        service: Any = sandbox.kube.get("Service", NS, "shop")
        assert service["metadata"]["finalizers"] == [LB_CLEANUP_FINALIZER]

        # The next Cluster Service shares check and firewall; the firewall stays pinned.
        add_service(sandbox, "cart")
        wait_for(lambda: ingress(sandbox, "cart"), what="cart's load balancer")
        assert checks_of(pool(sandbox, "cart")) == [nodes]
        assert ingress(sandbox, "cart") != ingress(sandbox, "shop")
        assert sandbox.compute.firewalls(project)[firewall]["destinationRanges"] == [ip]
        assert [w[1] for w in writes(sandbox)[5:]] == [
            "firewalls",
            "targetPools",
            "forwardingRules",
        ]


def test_a_new_local_service_gets_its_own_check_on_its_health_check_node_port() -> None:
    with current(0) as sandbox:
        add_service(sandbox, "api", externalTrafficPolicy="Local", healthCheckNodePort=32100)
        ip = wait_for(lambda: ingress(sandbox, "api"), what="api's load balancer")[0]["ip"]
        lb = sandbox.load_balancer_name(NS, "api")
        assert checks_of(pool(sandbox, "api")) == [lb]
        project = sandbox.spec.project
        check = sandbox.compute.http_health_checks(project)[lb]
        assert (check["port"], check["requestPath"]) == (32100, "/healthz")
        firewall = sandbox.compute.firewalls(project)[f"k8s-{lb}-http-hc"]
        assert firewall["allowed"] == [{"IPProtocol": "tcp", "ports": ["32100"]}]
        assert firewall["destinationRanges"] == [ip]
        assert sandbox.node_health_check_name not in sandbox.compute.http_health_checks(project)


@pytest.mark.parametrize(
    ("service", "policy", "old_checks", "new_check", "old_check_survives"),
    [
        # Cluster -> Local: the nodes check is refused as in use by web-1's pool: it stays.
        ("web-0", "Local", ["nodes"], "own", True),
        # Local -> Cluster: the Service's own check goes, with its firewall.
        ("local-2", "Cluster", ["own"], "nodes", False),
        # A pool an older cloud provider made without a check gets one only by recreation.
        ("legacy-3", "Local", [], "own", None),
    ],
)
def test_a_traffic_policy_flip_recreates_pool_and_rule_on_the_same_ip(
    world: Sandbox,
    service: str,
    policy: str,
    old_checks: list[str],
    new_check: str,
    old_check_survives: bool | None,
) -> None:
    lb = world.load_balancer_name(NS, service)
    names = {"nodes": str(world.node_health_check_name), "own": lb}
    ip = rule_ip(world, service)
    assert checks_of(pool(world, service)) == [names[c] for c in old_checks]
    world.set_traffic_policy(NS, service, policy)
    wait_for(lambda: world.recreations, what=f"{service}'s load balancer recreated")
    wait_for(lambda: rule_ip(world, service), what="its forwarding rule back")

    [recreation] = world.recreations
    assert (recreation.service, recreation.pool, recreation.ip) == (f"{NS}/{service}", lb, ip)
    assert (list(recreation.old_checks), recreation.new_check) == (
        [names[c] for c in old_checks],
        names[new_check],
    )
    assert checks_of(pool(world, service)) == [names[new_check]]
    assert rule_ip(world, service) == ip and ingress(world, service) == [{"ip": ip}]
    project = world.spec.project
    checks, firewalls = world.compute.http_health_checks(project), world.compute.firewalls(project)
    if old_check_survives is not None:
        old = names[old_checks[0]]
        old_firewall = f"k8s-{lb}-http-hc" if old == lb else world.node_health_check_firewall_name
        assert (old in checks, old_firewall in firewalls) == (old_check_survives,) * 2
    written = [(w[0], w[1]) for w in writes(world)]
    assert written[:2] == [("DELETE", "forwardingRules"), ("DELETE", "targetPools")]
    assert written[-2:] == [("POST", "targetPools"), ("POST", "forwardingRules")]


def test_the_last_pool_to_leave_the_nodes_check_takes_it_and_then_its_firewall() -> None:
    with current(1) as sandbox:  # web-0, legacy-1 (no check), rbs-2
        nodes, firewall = sandbox.node_health_check_name, sandbox.node_health_check_firewall_name
        project, lb = sandbox.spec.project, sandbox.load_balancer_name(NS, "web-0")
        ip = rule_ip(sandbox, "web-0")
        sandbox.set_traffic_policy(NS, "web-0", "Local")
        wait_for(lambda: sandbox.recreations, what="the recreation recorded")
        wait_for(
            lambda: checks_of(pool(sandbox, "web-0")) == [lb] and rule_ip(sandbox, "web-0") == ip,
            what="web-0 recreated with its own check, behind the same IP",
            timeout=10,
        )
        assert nodes not in sandbox.compute.http_health_checks(project)
        assert firewall not in sandbox.compute.firewalls(project)
        assert ("DELETE", "httpHealthChecks", nodes, 200) in writes(sandbox)

        # And back: the nodes check and its firewall are made again, pinned to web-0's IP.
        sandbox.set_traffic_policy(NS, "web-0", "Cluster")
        wait_for(lambda: len(sandbox.recreations) == 2, what="the second recreation")
        wait_for(lambda: rule_ip(sandbox, "web-0"), what="web-0's rule back")
        assert checks_of(pool(sandbox, "web-0")) == [nodes]
        assert sandbox.compute.firewalls(project)[str(firewall)]["destinationRanges"] == [ip]
        assert lb not in sandbox.compute.http_health_checks(project)
        assert rule_ip(sandbox, "web-0") == ip


def gone(sandbox: Sandbox, service: str) -> bool:
    return sandbox.kube.get("Service", NS, service) is None


def test_deleting_services_removes_their_load_balancers_and_the_last_user_the_nodes_check(
    world: Sandbox,
) -> None:
    nodes, firewall = world.node_health_check_name, world.node_health_check_firewall_name
    project, region = world.spec.project, world.spec.region
    lbs = {s: world.load_balancer_name(NS, s) for s in ("web-0", "web-1", "local-2", "legacy-3")}

    world.kube.delete("Service", NS, "web-0")
    wait_for(lambda: gone(world, "web-0"), what="web-0 released")
    assert lbs["web-0"] not in world.compute.target_pools(project, region)
    assert lbs["web-0"] not in world.compute.forwarding_rules(project, region)
    assert f"k8s-fw-{lbs['web-0']}" not in world.compute.firewalls(project)
    assert nodes in world.compute.http_health_checks(project)  # web-1's pool still uses it
    assert firewall in world.compute.firewalls(project)
    assert writes(world)[:4] == [
        ("DELETE", "forwardingRules", lbs["web-0"], 200),
        ("DELETE", "targetPools", lbs["web-0"], 200),
        # A Cluster Service tries a check named like its load balancer too, and that check's
        # firewall though the check was not found: upstream deletes it "to prevent leaking".
        ("DELETE", "httpHealthChecks", lbs["web-0"], 404),
        ("DELETE", "firewalls", f"k8s-{lbs['web-0']}-http-hc", 404),
    ]
    assert ("DELETE", "httpHealthChecks", nodes, 400) in writes(world)  # refused: in use

    world.kube.delete("Service", NS, "web-1")
    wait_for(lambda: gone(world, "web-1"), what="web-1 released")
    # legacy-3's pool carries no check, so nothing uses the nodes check any more.
    assert nodes not in world.compute.http_health_checks(project)
    assert firewall not in world.compute.firewalls(project)
    assert checks_of(pool(world, "legacy-3")) == []

    world.kube.delete("Service", NS, "local-2")
    wait_for(lambda: gone(world, "local-2"), what="local-2 released")
    assert lbs["local-2"] not in world.compute.http_health_checks(project)
    assert f"k8s-{lbs['local-2']}-http-hc" not in world.compute.firewalls(project)
    assert world.deleted_pools == [lbs["web-0"], lbs["web-1"], lbs["local-2"]]

    rbs_ip = ingress(world, "rbs-4")[0]["ip"]
    world.kube.delete("Service", NS, "rbs-4")
    wait_for(lambda: gone(world, "rbs-4"), what="rbs-4 released")
    rules = world.compute.forwarding_rules(project, region).values()
    assert rbs_ip not in {r["IPAddress"] for r in rules}


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("rbs-class", {"loadBalancerClass": "networking.gke.io/l4-regional-external"}),
        ("rbs-note", {"annotations": {"cloud.google.com/l4-rbs": "enabled"}}),
        ("internal", {"annotations": {"networking.gke.io/load-balancer-type": "Internal"}}),
    ],
)
def test_services_the_cloud_provider_leaves_to_ingress_gce_get_no_pool(
    name: str, extra: dict[str, Any]
) -> None:
    """RBS Services, and internal ones under GKE subsetting (the sandbox's default)."""
    with current(0) as sandbox:
        add_service(sandbox, name, **extra)
        wait_for(lambda: ingress(sandbox, name), what=f"{name}'s load balancer IP")
        assert pool(sandbox, name) is None
        spec = sandbox.spec
        rule = next(
            r
            for r in sandbox.compute.forwarding_rules(spec.project, spec.region).values()
            if r["IPAddress"] == ingress(sandbox, name)[0]["ip"]
        )
        assert "backendService" in rule and "target" not in rule
