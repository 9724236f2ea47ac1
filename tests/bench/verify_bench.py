"""GCE's own view within the read budget, at GKE's scale: `python -m tests.bench.verify_bench`.

A cluster of N nodes and M LoadBalancer Services (a fifth Local) on the cloud provider's node
check, through a scale-down: at minute 2, K nodes are tainted for deletion at once. The
controller's verifier ticks once a second for the simulated minutes on a clock the bench
moves, against a recording health source (the bench measures the verifier's own reads and
costs; what one getHealth costs through the real client and the Compute fake over HTTP is
measured on its own, below). Figures:

- reads per simulated minute (max, mean) against the budget, and what was put off;
- seconds from the taint until every marked node was read in every class;
- CPU per resync: assess() (status, every pool's class and every marked node's evidence),
  and the verifier's observe(); CPU per tick (choose the reads and judge the classes);
- RSS of the process, and the readings kept;
- ms per getHealth through GceClient against the Compute fake over HTTP.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.lb_verifier import LbVerifier, VerifierOptions
from lbhc.controller.metrics import Metrics
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.model.cloud import CloudSnapshot, instance_urls, resource_path
from lbhc.model.cluster import ClusterSnapshot
from lbhc.planner.planner import plan
from lbhc.planner.status import StatusReport, assess
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from tests.bench.report import TARGETS, add_output_args, emit, target
from tests.builders import CLOUD_PROVIDER_CHECK as CP
from tests.builders import (
    KUBE_SYSTEM_UID,
    PROJECT,
    REGION,
    TO_BE_DELETED,
    config,
    node,
    pool_for,
    rule_for,
    service,
)
from tests.builders.gce import ADMITTING

START = 1_800_000_000.0  # a Unix time: taints carry Unix seconds
TAINTED_AT = 120  # seconds after START: the scale-down


class RecordingHealth:
    """A health source that records each call and answers as GCE would for a pool holding
    every node whose check passes on serving nodes and fails on marked ones."""

    def __init__(self, marked: set[str]) -> None:
        self.marked = marked
        self.calls: list[tuple[float, str]] = []
        self.now = START

    def get_health(self, pool: str, instance_url: str) -> tuple[str, ...]:
        self.calls.append((self.now, "getHealth"))
        name = instance_url.rsplit("/", 1)[-1]
        tainted = self.now >= START + TAINTED_AT
        return ("UNHEALTHY",) if tainted and name in self.marked else ("HEALTHY",)

    def pool_instances(self, pool: str) -> frozenset[str]:
        self.calls.append((self.now, "pool_instances"))
        return frozenset()


def make_world(services: int, nodes: int, marked: int) -> tuple[ClusterSnapshot, CloudSnapshot]:
    svcs = tuple(
        service(f"svc-{i}", namespace=f"ns-{i % 50}", policy="Local" if i % 5 == 0 else "Cluster")
        for i in range(services)
    )
    taint = str(int(START) + TAINTED_AT)
    all_nodes = tuple(
        node(f"node-{i}", taints=TO_BE_DELETED, taint_value=taint)
        if i < marked
        else node(f"node-{i}")
        for i in range(nodes)
    )
    pools = tuple(
        pool_for(
            s, health_checks=(CP.self_link,) if s.spec.external_traffic_policy == "Cluster" else ()
        )
        for s in svcs
    )
    ips = [f"34.{i // 250 % 250}.{i % 250}.1" for i in range(services)]
    rules = tuple(rule_for(s, ip=ip) for s, ip in zip(svcs, ips, strict=True))
    cloud = CloudSnapshot(
        None,
        None,
        pools,
        rules,
        health_checks={resource_path(CP.self_link): CP},
        effective_firewall=ADMITTING,
    )
    return ClusterSnapshot(all_nodes, svcs, (), KUBE_SYSTEM_UID), cloud


def bench_budget(
    services: int, nodes: int, marked: int, minutes: int, budget: int
) -> dict[str, Any]:
    cluster, cloud = make_world(services, nodes, marked)
    unmarked = replace(cluster, nodes=tuple(node(n.name) for n in cluster.nodes))
    cfg = config()
    urls = instance_urls(cluster.nodes, cfg.project, cfg.region)
    source = RecordingHealth({f"node-{i}" for i in range(marked)})
    events: list[EventSpec] = []
    verifier = LbVerifier(
        source,
        Metrics(),
        events.append,
        ObjectRef("Lease", "lbhc", "lbhc-system"),
        lambda _: None,
        VerifierOptions(budget, sample_every=60),
        clock=lambda: source.now,
    )
    the_plan = plan(unmarked, cloud, cfg)
    assess_cpu: list[float] = []
    observe_cpu: list[float] = []
    tick_cpu: list[float] = []
    all_read_at: float | None = None
    for second in range(minutes * 60):
        source.now = START + second
        if second % 60 == 0 or second == TAINTED_AT:  # a pass a minute, and on the taints
            snapshot = cluster if second >= TAINTED_AT else unmarked
            with_view = replace(cloud, lb_health=verifier.view())
            started = time.process_time()
            report = assess(snapshot, with_view, cfg, the_plan)
            assess_cpu.append(time.process_time() - started)
            started = time.process_time()
            verifier.observe(report, urls)
            observe_cpu.append(time.process_time() - started)
        started = time.process_time()
        verifier.tick()
        tick_cpu.append(time.process_time() - started)
        if second >= TAINTED_AT and all_read_at is None and _all_read(verifier, report, marked):
            all_read_at = second - TAINTED_AT
    per_minute = Counter(int((t - START) // 60) for t, _ in source.calls)
    calls = [per_minute.get(m, 0) for m in range(minutes)]
    return {
        "nodes": nodes,
        "services": services,
        "marked": marked,
        "budget_per_minute": budget,
        "reads_per_minute_max": max(calls),
        "reads_per_minute_mean": round(statistics.mean(calls), 1),
        "reads_by_minute": calls,
        "classes": len(report.pool_classes),
        "marked_all_read_after_s": all_read_at,
        "assess_cpu_ms_median": round(statistics.median(assess_cpu) * 1000, 1),
        "observe_cpu_ms_median": round(statistics.median(observe_cpu) * 1000, 1),
        "tick_cpu_ms_median": round(statistics.median(tick_cpu) * 1000, 2),
        "tick_cpu_ms_max": round(max(tick_cpu) * 1000, 2),
        "readings_kept": len(verifier.view().readings),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _all_read(verifier: LbVerifier, report: StatusReport, marked: int) -> bool:
    """Every marked node read in every class."""
    view = verifier.view()
    return all(
        view.newest_in(v.pool_class.members, f"node-{i}") is not None
        for i in range(marked)
        for v in report.pool_classes
    )


def bench_http_call(calls: int) -> dict[str, Any]:
    """One getHealth through the real client over HTTP to the Compute fake, in ms."""
    fake = ComputeFake()
    fake.add_http_health_check(PROJECT, CP.name, port=10256, requestPath="/healthz")
    web = service("web")
    urls = instance_urls((node("node-0"),), PROJECT, REGION)
    fake.add_target_pool(
        PROJECT,
        REGION,
        pool_for(web).name,
        instances=list(urls.values()),
        health_checks=[CP.self_link],
    )
    with ComputeFakeServer(fake) as server:
        gce = GceClient(GceClientConfig(project=PROJECT, region=REGION, endpoint=server.url))
        gce.get_health(pool_for(web).name, urls["node-0"])  # connection made
        timings = []
        for _ in range(calls):
            started = time.perf_counter()
            gce.get_health(pool_for(web).name, urls["node-0"])
            timings.append(time.perf_counter() - started)
    return {"get_health_ms_median": round(statistics.median(timings) * 1000, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--services", type=int, default=5_000)
    parser.add_argument("--nodes", type=int, default=15_000)
    parser.add_argument("--marked", type=int, default=20)
    parser.add_argument("--minutes", type=int, default=6)
    parser.add_argument("--budget", type=int, default=30)
    parser.add_argument("--http-calls", type=int, default=200)
    add_output_args(parser)
    args = parser.parse_args(argv)
    budget = bench_budget(args.services, args.nodes, args.marked, args.minutes, args.budget)
    budget[TARGETS] = [
        target(
            "verify_reads_per_minute",
            "GCE's own view: getHealth reads in any minute",
            budget["reads_per_minute_max"],
            f"<= {args.budget}",
            budget["reads_per_minute_max"] <= args.budget,
        )
    ]
    figures = {"budget": budget, "http": bench_http_call(args.http_calls)}
    return emit(figures, args.json, args.compare)


if __name__ == "__main__":
    raise SystemExit(main())
