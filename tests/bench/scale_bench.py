"""Scale scenarios 1 and 2: cold start at scale, then steady-state resyncs.

1. Cold start: 5,000 nodes, 1,000 LoadBalancer Services (800 Cluster, 200 Local), their
   5,000 kube-proxy Pods, a zero-latency Compute fake. The real controller (ControllerApp)
   starts with nothing in GCE; we report seconds from start (the app is built; modules
   already imported: start-up is scenario 7) to every Cluster pool carrying the check, and
   GCE calls by method.
2. Steady state: resyncs of that converged cluster (the pass the resync timer runs), reads,
   writes and CPU seconds of this process (the fakes run in another), next to a per-Service
   sync (a get of pool and check per LoadBalancer Service) run by the same harness.

Variants, each in a fresh process with a fresh world; pools hold every node as an instance,
as the cloud provider builds them (lbhc lists them as partial responses without instances):
- full-pools: mutations paced at 1,000/s, so the figure is lbhc's own cost, as a
  zero-latency fake means.
- default-pacing: lbhc's default 10 mutations/s pacing (800 attaches take 80 s by design).
Run: `python -m tests.bench.scale_bench --json PATH` (or through run_all).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.machine import peak_rss_mb, rss_mb
from tests.bench.report import add_output_args, emit, target
from tests.bench.world import ROOT, child_env

UNPACED = 1000.0
VARIANTS: dict[str, dict[str, Any]] = {
    "full-pools": {"pool_instances": None, "pacing": UNPACED, "steady": True},
    "default-pacing": {"pool_instances": None, "pacing": None, "steady": False},
    # A mixed cluster at 15,000 nodes: a third of 5,000 Services on ingress-gce backend
    # services (read, never written). Pools hold 100 instances each: 3,333 pools of 15,000
    # would be 50 million URLs in the fake, and lbhc never reads a pool's instance list.
    "backend-third": {
        "pool_instances": 100,
        "pacing": UNPACED,
        "steady": True,
        "rbs_every": 3,
        "nodes": 15_000,
        "services": 5_000,
    },
}
LABELS = {
    "full-pools": "",
    "default-pacing": " [default 10 mutations/s]",
    "backend-third": " [mixed, 1/3 RBS]",
}
PER_SERVICE_ID = "per-service-sync"


def run_variant(
    name: str, nodes: int, services: int, resyncs: int, timeout: float, profile: bool = False
) -> Any:
    # Imported here: the parent process only orchestrates.
    from lbhc.gce.client import GceClient
    from tests.bench.baselines import PerServiceSync
    from tests.bench.controller_run import IDENTITY, BenchController, warm_imports
    from tests.bench.world import CHECK_NAME, FakeWorld, WorldSpec

    warm_imports()  # start-up costs are scenario 7's
    variant = VARIANTS[name]
    nodes = nodes or variant.get("nodes", 5_000)
    services = services or variant.get("services", 1_000)
    spec = WorldSpec(
        nodes=nodes,
        services=services,
        pool_instances=variant["pool_instances"],
        rbs_every=variant.get("rbs_every", 0),
    )
    overrides = {} if variant["pacing"] is None else {"gce_mutations_per_second": variant["pacing"]}
    with FakeWorld(spec) as world:
        eligible = len(world.cluster_pools)
        ctl = BenchController(world, overrides)
        cpu0 = time.process_time()
        ctl.start()
        converged_at = world.wait_attached(None, timeout)
        if converged_at is None:
            raise TimeoutError(f"not converged after {timeout:.0f} s")
        ctl.wait_passes(1, timeout)
        ctl.wait_idle(timeout)
        cold_cpu = time.process_time() - cpu0
        calls = world.calls(IDENTITY)
        assert ctl.app is not None and ctl.app.controller is not None
        cold: dict[str, Any] = {
            "nodes": nodes,
            "services": services,
            "cluster_services": eligible,
            "backend_services": world.info["backend_services"],
            "pool_instances": world.info["pool_instances"],
            "mutation_pacing_per_second": variant["pacing"] or 10.0,
            "converged_seconds": round(converged_at - ctl.started_at, 2),
            "caches_synced_seconds": ctl.since_start(ctl.synced_at),
            "first_gce_read_seconds": ctl.since_start(ctl.first_gce_read_at),
            "cpu_seconds": round(cold_cpu, 2),
            "passes": ctl.passes(),
            "pass_log": ctl.passes_summary(),
            "attached": world.attached(),
            "gce_calls": calls["by_method"],
            "gce_reads": calls["reads"],
            "gce_writes": calls["writes"],
            "rss_mb_after": rss_mb(),
            "peak_rss_mb": peak_rss_mb(),
        }
        figures: dict[str, Any] = {"variant": name, "cold_start": cold}
        if not variant["steady"]:
            ctl.stop()
            return figures
        profiler = _profile_passes(ctl.app.controller) if profile else None
        runs = []
        for _ in range(resyncs):
            ctl.wait_idle(timeout)
            world.clear_journal()
            cpu0, wall0 = time.process_time(), time.monotonic()
            done = ctl.resync(timeout)
            cpu = time.process_time() - cpu0
            calls = world.calls(IDENTITY)
            last = ctl.app.controller.last_plan
            runs.append(
                {
                    "cpu_seconds": round(cpu, 3),
                    "pass_thread_cpu_seconds": round(ctl.pass_log[-1]["thread_cpu"], 3),
                    "wall_seconds": round(done - wall0, 3),
                    "reads": calls["reads"],
                    "writes": calls["writes"],
                    "gce_calls": calls["by_method"],
                    "changes": len(last.changes) if last else None,
                }
            )
        if profiler is not None:
            _print_profile(profiler)
            figures["profiled"] = True  # the resync CPU figures include cProfile's overhead
        services_seen = ctl.app.cache.snapshot().services if ctl.app.cache else ()
        pools_total = len(world.cluster_pools) + len(world.info["local_pools"])
        backends = int(world.info["backend_services"])
        checks_total = 1  # the bench world seeds no legacy check: lbhc's is the only one
        ctl.stop()
        gce = GceClient(ctl.settings.gce_client_config(read_only=True, client_id=PER_SERVICE_ID))
        world.clear_journal()
        cpu0, wall0 = time.process_time(), time.monotonic()
        attached = PerServiceSync(gce, CHECK_NAME).resync(services_seen)
        per_cpu, per_wall = time.process_time() - cpu0, time.monotonic() - wall0
        per_calls = world.calls(PER_SERVICE_ID)
    ours_cpu = statistics.median(r["cpu_seconds"] for r in runs)
    ours_wall = statistics.median(r["wall_seconds"] for r in runs)
    ours_reads = runs[0]["reads"]
    figures["steady_state"] = {
        "resyncs": len(runs),
        "reads": ours_reads,
        "writes": max(r["writes"] for r in runs),
        # Two gets (our check, our firewall), two of the network (it and its effective
        # firewall, for probe reach: none per pool), then pages of the project's legacy checks
        # (coverage), the region's pools and its forwarding rules (one rule per pool or
        # backend service), of backend services, and of global and regional non-legacy
        # checks (the shared one, and Local Services' own): pages, never a read per Service.
        # The shared instance group's members (a page per 500 nodes) are read only while a
        # node is leaving; no node is here.
        "reads_allowed": 4
        + max(1, math.ceil(checks_total / 500))
        + math.ceil(pools_total / 500)
        + math.ceil((pools_total + backends) / 500)
        + max(1, math.ceil(backends / 500))
        + 1
        + max(1, math.ceil((1 + backends) / 500)),
        "cpu_seconds_median": round(ours_cpu, 3),
        "cpu_seconds_max": max(r["cpu_seconds"] for r in runs),
        "pass_thread_cpu_seconds_median": round(
            statistics.median(r["pass_thread_cpu_seconds"] for r in runs), 3
        ),
        "wall_seconds_median": round(ours_wall, 3),
        "changes": runs[0]["changes"],
        "gce_calls": runs[0]["gce_calls"],
        "per_service": {
            "reads": per_calls["reads"],
            "writes": per_calls["writes"],
            "attaches": attached,
            "cpu_seconds": round(per_cpu, 3),
            "wall_seconds": round(per_wall, 2),
            "reads_per_second_pacing": gce.config.reads_per_second,
        },
        "ratio_reads": _ratio(per_calls["reads"], ours_reads),
        "ratio_cpu": _ratio(per_cpu, ours_cpu),
        "ratio_wall": _ratio(per_wall, ours_wall),
        "peak_rss_mb": peak_rss_mb(),
    }
    return figures


def _profile_passes(controller: Any) -> Any:
    """cProfile around every later pass, in the controller's thread (diagnosis only)."""
    import cProfile

    profiler = cProfile.Profile()
    reconcile = controller.reconcile

    def profiled(reasons: list[str]) -> Any:
        profiler.enable()
        try:
            return reconcile(reasons)
        finally:
            profiler.disable()

    controller.reconcile = profiled
    return profiler


def _print_profile(profiler: Any, top: int = 30) -> None:
    import io
    import pstats

    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)  # where the CPU goes, waits aside
    print(text.getvalue(), flush=True)


def _ratio(theirs: float, ours: float) -> float | None:
    return round(theirs / ours, 1) if ours else None


def targets(name: str, figures: dict[str, Any]) -> list[dict[str, Any]]:
    label = LABELS[name]
    cold = figures["cold_start"]
    calls = cold["gce_calls"]
    eligible = cold["cluster_services"]
    inserts = (calls.get("POST httpHealthChecks", 0), calls.get("POST firewalls", 0))
    attaches = calls.get("POST targetPools addHealthCheck", 0)
    seconds = cold["converged_seconds"]
    floor = eligible / cold["mutation_pacing_per_second"]
    log = cold.get("pass_log", [])
    attaching = next((p for p in log if p["changes"]), None)
    early = log.index(attaching) if attaching else len(log)
    slow_why = (
        f"{eligible} attaches paced at {cold['mutation_pacing_per_second']:g}/s take at least "
        f"{floor:.0f} s"
        if floor >= 15
        else f"{early} pass(es) ran before the caches synced (caches synced at "
        f"{cold['caches_synced_seconds']} s) and planned nothing, each reading every pool "
        f"({cold['pool_instances']} instances each); the attaching pass started at "
        f"{attaching['start'] if attaching else '?'} s"
    )
    out = [
        target(
            f"1.inserts{label}",
            f"1 cold start: one insert per shared resource{label}",
            list(inserts),
            "[1, 1]",
            inserts == (1, 1),
        ),
        target(
            f"1.attaches{label}",
            f"1 cold start: addHealthCheck once per Cluster pool{label}",
            attaches,
            f"== {eligible}",
            attaches == eligible,
        ),
        target(
            f"1.converged{label}",
            f"1 cold start: converged (s){label}",
            seconds,
            "< 15",
            seconds < 15,
            slow_why,
        ),
    ]
    steady = figures.get("steady_state")
    if steady:
        cpu = steady["cpu_seconds_median"]
        out += [
            target(
                f"2.writes{label}",
                f"2 resync: writes{label}",
                steady["writes"],
                "== 0",
                steady["writes"] == 0,
            ),
            target(
                f"2.reads{label}",
                f"2 resync: reads{label}",
                steady["reads"],
                f"<= {steady['reads_allowed']}",
                steady["reads"] <= steady["reads_allowed"],
            ),
            target(
                f"2.cpu{label}",
                f"2 resync: CPU seconds (median){label}",
                cpu,
                "< 0.5",
                cpu < 0.5,
                "the pass itself (plan and status over every node) and decoding the list "
                "pages through protobuf: see docs/benchmarks.md",
            ),
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--nodes", type=int, default=0, help="default: 5,000, or the variant's own size"
    )
    parser.add_argument(
        "--services", type=int, default=0, help="default: 1,000, or the variant's own size"
    )
    parser.add_argument("--resyncs", type=int, default=3)
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma list of {', '.join(VARIANTS)}"
    )
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print where the resyncs' CPU goes (cProfile; inflates their CPU figures)",
    )
    parser.add_argument("--variant", help=argparse.SUPPRESS)  # one variant, in this process
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the variants in this process (smoke tests: peak RSS then accumulates)",
    )
    add_output_args(parser)
    args = parser.parse_args(argv)
    if args.variant:
        figures = run_variant(
            args.variant, args.nodes, args.services, args.resyncs, args.timeout, args.profile
        )
        assert args.json is not None
        args.json.write_text(json.dumps(figures))
        return 0
    results: dict[str, Any] = {"scenario": "1 cold start, 2 steady state"}
    all_targets: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lbhc-bench-") as tmp:
        for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
            if name not in VARIANTS:
                parser.error(f"unknown variant {name!r}")
            out = Path(tmp) / f"{name}.json"
            print(f"scale_bench: variant {name} ...", flush=True)
            started = time.monotonic()
            if args.in_process:
                sizes = (args.nodes, args.services, args.resyncs, args.timeout, args.profile)
                out.write_text(json.dumps(run_variant(name, *sizes)))
            else:
                subprocess.run(
                    [sys.executable, "-m", "tests.bench.scale_bench", "--variant", name,
                     "--nodes", str(args.nodes), "--services", str(args.services),
                     "--resyncs", str(args.resyncs), "--timeout", str(args.timeout),
                     "--json", str(out), *(["--profile"] if args.profile else [])],
                    check=True, cwd=ROOT, env=child_env(),
                )  # fmt: skip
            figures = json.loads(out.read_text())
            figures["variant_seconds"] = round(time.monotonic() - started, 1)
            results[name] = figures
            all_targets += targets(name, figures)
    results["targets"] = all_targets
    return emit(results, args.json, args.compare)


if __name__ == "__main__":
    raise SystemExit(main())
