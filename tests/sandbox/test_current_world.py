"""lbhc against today's GCE, end to end through its real CLI: the sandbox's current profile,
whose cloud provider attaches its own node check k8s-<uid>-node to every Cluster pool it
creates, and once made a pool without one (an older provider's, never backfilled). lbhc must
backfill only that pool, judge drain from the cloud provider's check where it is the one
attached, survive a Cluster <-> Local flip that recreates a pool, and, in takeover mode,
give every check it replaced back on `lbhc teardown`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lbhc.cli import main
from lbhc.model.cloud import http_health_check_url
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
from lbhc.sandbox.seed import SandboxSpec, node_name
from lbhc.sandbox.upstream.compute import USER_AGENT as CLOUD_PROVIDER
from tests.waiting import wait_for

TAINT = "ToBeDeletedByClusterAutoscaler"
# web-0, web-1 carry the cloud provider's check; legacy-2 carries none. No backend-service load
# balancers: their checks' firewalls would admit every probe on 10256, and these tests are
# about the cloud provider's firewall pinned to one pool's IP.
SPEC = SandboxSpec(
    nodes=2, services=2, local_services=0, cloud_provider="current", backend_service_lbs=False
)


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxOptions(spec=SPEC, time_scale=0.05, operation_latency=0.02)) as running:
        yield running


def lbhc(sandbox: Sandbox, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    flags = sandbox.lbhc_flags() if args[0] != "teardown" else _gce_flags(sandbox)
    code = main([*args, *flags])
    return code, capsys.readouterr().out


def _gce_flags(sandbox: Sandbox) -> list[str]:
    spec = sandbox.spec
    return [
        "--project",
        spec.project,
        "--region",
        spec.region,
        "--gce-endpoint",
        sandbox.compute_url,
    ]


def pool(sandbox: Sandbox, service: str) -> str:
    return sandbox.load_balancer_name(SPEC.namespace, service)


def rule_ip(sandbox: Sandbox, lb: str) -> str:
    return str(sandbox.compute.forwarding_rules(SPEC.project, SPEC.region)[lb]["IPAddress"])


def carried(sandbox: Sandbox) -> dict[str, list[str]]:
    pools = sandbox.compute.target_pools(SPEC.project, SPEC.region)
    return {n: [u.rsplit("/", 1)[-1] for u in p.get("healthChecks", [])] for n, p in pools.items()}


def lbhc_writes(sandbox: Sandbox) -> list[Any]:
    """Mutations by lbhc (the cloud provider's come with a User-Agent of their own)."""
    return [e for e in sandbox.compute.mutating_requests() if e.user_agent != CLOUD_PROVIDER]


def status(sandbox: Sandbox, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code, out = lbhc(sandbox, capsys, "status", "--output", "json", *extra)
    assert code == 0, out
    body: dict[str, Any] = json.loads(out)
    return body


def test_converges_with_one_attach_for_the_legacy_pool_and_nothing_for_the_rest(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = lbhc(sandbox, capsys, "apply", "--output", "json")
    assert code == 0, out
    changes = {(c["action"], c["kind"], c["name"]) for c in json.loads(out)["changes"]}
    name = json.loads(out)["healthCheck"]
    assert changes == {
        ("create", "Firewall", name),
        ("create", "HttpHealthCheck", name),
        ("attach", "TargetPool", pool(sandbox, "legacy-2")),
    }
    cp = sandbox.node_health_check_name
    assert carried(sandbox) == {
        pool(sandbox, "web-0"): [cp],
        pool(sandbox, "web-1"): [cp],
        pool(sandbox, "legacy-2"): [name],
    }
    written = {e.path.rsplit("/", 2)[-2] for e in lbhc_writes(sandbox) if "targetPools" in e.path}
    assert written == {pool(sandbox, "legacy-2")}  # never a write to a covered pool

    coverage = {
        s["service"]: (s["coverage"], s["checkName"]) for s in status(sandbox, capsys)["services"]
    }
    assert coverage == {
        "demo/web-0": ("cloud-provider", cp),
        "demo/web-1": ("cloud-provider", cp),
        "demo/legacy-2": ("lbhc", name),
    }
    code, out = lbhc(sandbox, capsys, "plan", "--detailed-exitcode")
    assert code == 0, out


def test_a_tainted_node_drains_through_the_cloud_providers_check(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lbhc(sandbox, capsys, "apply")[0] == 0
    victim = node_name(1)
    sandbox.kube.taint(victim, TAINT, "1", "NoSchedule")
    covered = pool(sandbox, "web-0")
    cp_url = http_health_check_url(SPEC.project, str(sandbox.node_health_check_name))
    assert sandbox.compute.target_pools(SPEC.project, SPEC.region)[covered]["healthChecks"] == [
        cp_url
    ]

    def unhealthy() -> bool:
        nodes = {n["node"]: n for n in status(sandbox, capsys, "--lb-health")["nodes"]}
        return nodes[victim]["lbHealth"] == "UNHEALTHY"

    wait_for(unhealthy, timeout=30, what=f"{victim} UNHEALTHY in getHealth")
    nodes = {n["node"]: n for n in status(sandbox, capsys)["nodes"]}
    assert nodes[victim]["drain"]["state"] == "draining"
    assert nodes[victim]["drain"]["boundSeconds"] == 32  # the cloud provider's 8 s x (3 + 1)
    assert nodes[node_name(0)]["drain"]["state"] == "serving"


def test_a_traffic_policy_flip_recreates_the_pool_and_lbhc_follows(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lbhc(sandbox, capsys, "apply")[0] == 0
    before = pool(sandbox, "legacy-2")
    ip = rule_ip(sandbox, before)
    sandbox.set_traffic_policy(SPEC.namespace, "legacy-2", "Local")
    wait_for(lambda: len(sandbox.recreations) == 1, timeout=30, what="the pool recreated")
    # Upstream recreated the pool with the Service's own per-Service check: lbhc's is off it.
    wait_for(
        lambda: carried(sandbox).get(before) == [before], timeout=30, what="the Local check on it"
    )
    code, out = lbhc(sandbox, capsys, "plan", "--output", "json")
    assert code == 0, out
    kinds = {(c["action"], c["kind"]) for c in json.loads(out)["changes"]}
    # Nothing needs lbhc's check any more: it is collected. Its firewall stays: the cloud
    # provider pinned its own to web-0's IP, so only lbhc's admits web-1's probes.
    assert kinds == {("delete", "HttpHealthCheck")}
    services = {s["service"]: s["coverage"] for s in status(sandbox, capsys)["services"]}
    assert services["demo/legacy-2"] == "local"
    assert services["demo/web-1"] == "cloud-provider"

    sandbox.set_traffic_policy(SPEC.namespace, "legacy-2", "Cluster")
    wait_for(lambda: len(sandbox.recreations) == 2, timeout=30, what="recreated again")
    cp = sandbox.node_health_check_name
    wait_for(lambda: carried(sandbox).get(before) == [cp], timeout=30, what="the node check on it")
    services = {s["service"]: s["coverage"] for s in status(sandbox, capsys)["services"]}
    assert services["demo/legacy-2"] == "cloud-provider"
    recreation = sandbox.recreations[-1]
    # Same name, same IP: a new pool behind the same address.
    assert (recreation.pool, recreation.ip) == (before, ip)
    assert rule_ip(sandbox, before) == ip


def test_takeover_then_teardown_gives_the_cloud_providers_check_back(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = lbhc(sandbox, capsys, "apply", "--health-check-mode", "takeover")
    assert code == 0, out
    name = json.loads(lbhc(sandbox, capsys, "plan", "--output", "json")[1])["healthCheck"]
    assert set(map(tuple, carried(sandbox).values())) == {(name,)}
    services = {s["service"]: s for s in status(sandbox, capsys)["services"]}
    assert "taken over from" in services["demo/web-0"]["reason"]

    code, out = lbhc(sandbox, capsys, "teardown", "--dry-run")
    assert code == 0 and "giving back" in out
    assert set(map(tuple, carried(sandbox).values())) == {(name,)}  # a dry run changes nothing

    # Found, not named: shown and refused, so a guess never tears down another cluster's.
    cluster_id = name.removeprefix("k8s-l4-healthcheck-")
    capsys.readouterr()
    assert main(["teardown", *_gce_flags(sandbox)]) == 2
    assert f"--cluster-id {cluster_id}" in capsys.readouterr().err
    assert set(map(tuple, carried(sandbox).values())) == {(name,)}

    code, out = lbhc(sandbox, capsys, "teardown", "--cluster-id", cluster_id)
    assert code == 0, out
    cp = sandbox.node_health_check_name
    assert carried(sandbox) == {
        pool(sandbox, "web-0"): [cp],
        pool(sandbox, "web-1"): [cp],
        pool(sandbox, "legacy-2"): [],
    }
    assert name not in sandbox.compute.http_health_checks(SPEC.project)
    assert name not in sandbox.compute.firewalls(SPEC.project)
    assert cp in sandbox.compute.http_health_checks(SPEC.project)  # never touched

    # Again: nothing is changed, and nothing of that cluster is left to call "No changes"
    # (the same answer a mistyped id gets).
    capsys.readouterr()
    code = main(["teardown", "--cluster-id", cluster_id, *_gce_flags(sandbox)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", out
    assert f"nothing of lbhc's for cluster {cluster_id}" in err and "already torn down" in err
    code, out = lbhc(sandbox, capsys, "teardown")
    assert code == 0 and out.startswith("Nothing to tear down"), out


def test_a_fully_covered_cluster_gets_only_lbhcs_firewall_for_the_pool_the_pinned_rule_misses(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox.kube.delete("Service", SPEC.namespace, "legacy-2")
    wait_for(
        lambda: len(sandbox.deleted_pools) == 1,
        timeout=30,
        what="the legacy Service's load balancer gone",
    )
    # The cloud provider pinned its node firewall to the first load balancer's IP, so the
    # other pool's probes meet the implied deny: lbhc plans only its own unpinned rule, with
    # GCE's getHealth of the admitted pool as evidence, and no check.
    code, out = lbhc(sandbox, capsys, "plan", "--detailed-exitcode")
    assert code == 2 and "no rule admits" in out and "getHealth calls" in out, out
    assert lbhc(sandbox, capsys, "apply")[0] == 0
    assert [(w.method, w.path.rsplit("/", 1)[-1]) for w in lbhc_writes(sandbox)] == [
        ("POST", "firewalls")
    ]
    body = status(sandbox, capsys)
    assert body["coverageCounts"]["cloud-provider"] == 2
    assert body["coverageCounts"]["probe-blocked"] == 0  # lbhc's rule admits web-1's probes
