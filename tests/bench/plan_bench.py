"""Benchmarks for the reconciliation core. Run: `make bench`.

1. Planning time for N Services and M nodes (pure planner, best of several runs).
2. GCE calls to converge from nothing, through the real client and the Compute fake.
3. GCE calls for one reconcile of the converged state.
Prints a table and writes the figures as JSON (--json PATH).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from typing import Any

from lbhc.executor import Executor
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cloud import CloudSnapshot, http_health_check_url
from lbhc.model.cluster import ClusterSnapshot
from lbhc.planner.hold import HoldConfig, plan_holds
from lbhc.planner.planner import plan
from lbhc.planner.status import assess
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.bench.report import add_output_args, load, print_comparison
from tests.builders import KUBE_SYSTEM_UID, PROJECT, REGION, config, names, node, pool_for, service
from tests.worlds import compute_fake


def make_cluster(services: int, nodes: int, local_share: float = 0.2) -> ClusterSnapshot:
    local_every = int(1 / local_share) if local_share else 0
    svcs = tuple(
        service(
            f"svc-{i}",
            namespace=f"ns-{i % 50}",
            policy="Local" if local_every and i % local_every == 0 else "Cluster",
        )
        for i in range(services)
    )
    return ClusterSnapshot(
        tuple(node(f"node-{i}") for i in range(nodes)), svcs, (), KUBE_SYSTEM_UID
    )


def bench_planning(services: int, nodes: int, repeats: int) -> dict[str, Any]:
    cluster = make_cluster(services, nodes)
    _, _, url = names()
    pools = tuple(
        pool_for(s, health_checks=(url,) if s.spec.external_traffic_policy == "Cluster" else ())
        for s in cluster.services
    )
    from tests.builders import our_check, our_firewall

    converged = CloudSnapshot(our_check(), our_firewall(), pools, ())
    empty = CloudSnapshot(None, None, tuple(pool_for(s) for s in cluster.services), ())
    figures: dict[str, Any] = {"plan_services": services, "plan_nodes": nodes}
    worlds = (
        ("converged", converged),
        ("from_nothing", empty),
        ("per_lb_denies", with_per_lb_denies(converged, cluster)),
    )
    for label, cloud in worlds:
        timings, assessing, holding = [], [], []
        for _ in range(repeats):
            start = time.perf_counter()
            result = plan(cluster, cloud, config())
            planned = time.perf_counter()
            report = assess(cluster, cloud, config(), result)  # every pool's probe reach
            assessed = time.perf_counter()
            # hold.deletion on: every node's hold, from the report (lbhc/planner/hold.py)
            plan_holds(cluster.nodes, report.nodes, HoldConfig(), time.time(), complete=True)
            holding.append(time.perf_counter() - assessed)
            assessing.append(assessed - planned)
            timings.append(planned - start)
        figures[f"plan_ms_{label}_best"] = round(min(timings) * 1000, 1)
        figures[f"plan_ms_{label}_median"] = round(statistics.median(timings) * 1000, 1)
        figures[f"assess_ms_{label}_best"] = round(min(assessing) * 1000, 1)
        figures[f"hold_plan_ms_{label}_best"] = round(min(holding) * 1000, 1)
        figures[f"changes_{label}"] = len(result.changes)
    return figures


def with_per_lb_denies(cloud: CloudSnapshot, cluster: ClusterSnapshot) -> CloudSnapshot:
    """The converged cloud as the cloud provider leaves it with enableL4DenyFirewallRule:
    one forwarding rule per pool on its own IP, and per load balancer an allow for its ports
    and a deny of everything else, both pinned to that IP; its node check firewall pinned to
    the first IP. Probe reach is judged for every pool (lbhc's own rule admits them all)."""
    from dataclasses import replace

    from lbhc.model.cloud import Firewall, FirewallAllowed
    from tests.builders import our_firewall, rule_for
    from tests.builders.gce import effective, node_check_firewall

    ips = [f"34.{i // 250 % 250}.{i % 250}.{1 + i // 62500}" for i in range(len(cluster.services))]
    rules = tuple(rule_for(s, ip=ip) for s, ip in zip(cluster.services, ips, strict=True))
    firewalls: list[Firewall] = [node_check_firewall(pinned_to=ips[0], priority=999)]
    for svc, ip in zip(cluster.services, ips, strict=True):
        name = f"k8s-fw-{pool_for(svc).name}"
        pinned = {
            "target_tags": ("gke-node",),
            "destination_ranges": (ip,),
            "source_ranges": ("0.0.0.0/0",),
        }
        firewalls.append(
            Firewall(f"{name}-deny", priority=1000, denied=(FirewallAllowed("all"),), **pinned)
        )
        firewalls.append(
            Firewall(name, priority=999, allowed=(FirewallAllowed("tcp", ("80",)),), **pinned)
        )
    ours = our_firewall(priority=999)
    return replace(
        cloud, firewall=ours, forwarding_rules=rules, effective_firewall=effective(*firewalls, ours)
    )


def _calls(fake: ComputeFake) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for entry in fake.journal:
        parts = entry.path.rstrip("/").split("/")
        collection = next(
            (
                p
                for p in reversed(parts)
                if p
                in {"httpHealthChecks", "firewalls", "targetPools", "forwardingRules", "operations"}
            ),
            "?",
        )
        tail = parts[-1]
        verb = tail if tail in {"addHealthCheck", "removeHealthCheck", "wait"} else ""
        counts[f"{entry.method} {collection}{' ' + verb if verb else ''}"] += 1
    return dict(sorted(counts.items()))


def bench_gce_calls(services: int) -> dict[str, Any]:
    cluster = make_cluster(services, 3)
    fake = compute_fake(PROJECT)
    for svc in cluster.services:
        pool = pool_for(svc)
        fake.add_target_pool(PROJECT, REGION, pool.name, description=pool.description)
    _, name, _ = names()
    with ComputeFakeServer(fake) as server:
        gce = GceClient(
            GceClientConfig(
                project=PROJECT,
                region=REGION,
                endpoint=server.url,
                mutations_per_second=10_000,
                reads_per_second=10_000,
            )
        )
        start = time.perf_counter()
        result = Executor(gce, 16).apply(plan(cluster, gce.read_snapshot(name), config()))
        converge_seconds = time.perf_counter() - start
        assert result.ok
        from_nothing = _calls(fake)
        fake.clear_journal()
        again = plan(cluster, gce.read_snapshot(name), config())
        converged = _calls(fake)
    eligible = sum(1 for s in cluster.services if s.spec.external_traffic_policy == "Cluster")
    url = http_health_check_url(PROJECT, name)
    attached = sum(
        1 for p in fake.target_pools(PROJECT, REGION).values() if url in p.get("healthChecks", [])
    )
    return {
        "gce_services": services,
        "eligible_pools": eligible,
        "attached_pools": attached,
        "converge_seconds": round(converge_seconds, 2),
        "calls_from_nothing": from_nothing,
        "calls_converged": converged,
        "changes_after_converge": len(again.changes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--gce-services", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=9)
    add_output_args(parser)
    args = parser.parse_args(argv)
    previous = load(args.compare)

    planning = bench_planning(args.services, args.nodes, args.repeats)
    calls = bench_gce_calls(args.gce_services)
    print(f"{'figure':44} value")
    for key, value in {
        **planning,
        **{k: v for k, v in calls.items() if not k.startswith("calls")},
    }.items():
        print(f"{key:44} {value}")
    for phase in ("calls_from_nothing", "calls_converged"):
        for call, count in calls[phase].items():
            print(f"{phase + ': ' + call:44} {count}")
    figures = {"planning": planning, "gce": calls}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if args.compare:
        print_comparison(args.compare, previous, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
