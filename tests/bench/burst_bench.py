"""Scale scenario 3: a burst of new Services against a realistic Compute API.

500 new Cluster Services appear at once (each target pool created just before its Service,
as if the cloud provider had been quick) in a cluster lbhc already converged. Every GCE
operation takes 2 s to finish and the API admits 10 mutating calls per second (beyond that:
403 rateLimitExceeded, as the real quota answers). We report seconds from the first new
Service to every new pool carrying the check:

- lbhc as shipped (production settings: 10 mutations/s pacing, 8 concurrent pool calls,
  1 s initial backoff), and with more concurrent pool calls (`--tuned-concurrency`);
- a one-Service-at-a-time controller (tests/bench/baselines.py: read pool and check,
  attach, wait for DONE, next), on the same kind of world, in the same run. It is measured
  whole unless `--baseline-services N` asks for the first N only, in which case its time is
  extrapolated linearly to all of them (it is sequential, so each Service costs the same)
  and the output says so.

The bound the rate limit sets is count / quota (500 / 10 = 50 s).
Run: `python -m tests.bench.burst_bench --json PATH` (or through run_all).
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from tests.bench.report import add_output_args, emit, target

FIRST_NEW = 10_000  # index of the first new Service (objects.service names it svc-10000)
BASELINE_ID = "one-at-a-time"


def _spec(warm: int, latency: float, quota: float) -> Any:
    from tests.bench.world import WorldSpec

    return WorldSpec(
        nodes=10,
        services=warm,
        local_share=0.0,
        operation_latency=latency,
        mutation_quota=quota,
        converged=True,
    )


def run_ours(
    count: int, concurrency: int | None, warm: int, latency: float, quota: float, timeout: float
) -> dict[str, Any]:
    from tests.bench.controller_run import IDENTITY, BenchController, warm_imports
    from tests.bench.world import FakeWorld

    warm_imports()
    overrides = {} if concurrency is None else {"max_concurrent_pool_calls": concurrency}
    with FakeWorld(_spec(warm, latency, quota)) as world:
        ctl = BenchController(world, overrides)
        ctl.start()
        ctl.wait_passes(1, timeout)
        ctl.wait_idle(timeout)
        world.clear_journal()
        burst = world.burst(count, FIRST_NEW)
        done = world.wait_attached(burst["pools"], timeout)
        if done is None:
            raise TimeoutError(f"lbhc: not every new pool attached after {timeout:.0f} s")
        ctl.wait_idle(timeout)
        calls = world.calls(IDENTITY)
        passes = [p for p in ctl.pass_log if p["end"] > burst["started"]]
        ctl.stop()
    return {
        "max_concurrent_pool_calls": ctl.settings.gce.max_concurrent_pool_calls,
        "mutations_per_second_pacing": ctl.settings.gce.mutations_per_second,
        "seconds": round(done - burst["started"], 2),
        "services_added_in_seconds": round(burst["added"] - burst["started"], 2),
        "passes": len(passes),
        "attaches": calls["by_method"].get("POST targetPools addHealthCheck", 0),
        "writes_rejected_by_quota": calls["writes_rejected"],
        "reads": calls["reads"],
    }


def run_one_at_a_time(
    count: int, subset: int, warm: int, latency: float, quota: float, timeout: float
) -> dict[str, Any]:
    from lbhc.gce.client import GceClient
    from tests.bench.baselines import OneAtATime
    from tests.bench.world import CHECK_NAME, FakeWorld, settings

    with FakeWorld(_spec(warm, latency, quota)) as world:
        gce = GceClient(
            settings(world.compute_url).gce_client_config(read_only=False, client_id=BASELINE_ID)
        )
        burst = world.burst(count, FIRST_NEW)
        queue = burst["pools"][:subset]
        worker = threading.Thread(target=OneAtATime(gce, CHECK_NAME).run, args=(queue,))
        worker.start()
        done = world.wait_attached(queue, timeout)
        worker.join(timeout=60)
        if done is None:
            raise TimeoutError(f"one-at-a-time: not attached after {timeout:.0f} s")
        calls = world.calls(BASELINE_ID)
    measured = done - burst["started"]
    return {
        "services_measured": len(queue),
        "seconds_measured": round(measured, 2),
        "extrapolated": len(queue) < count,
        "seconds": round(measured * count / len(queue), 1),
        "writes_rejected_by_quota": calls["writes_rejected"],
        "reads": calls["reads"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--services", type=int, default=500, help="new Services in the burst")
    parser.add_argument("--warm", type=int, default=10, help="Services already converged")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per operation")
    parser.add_argument("--quota", type=float, default=10.0, help="mutating calls per second")
    parser.add_argument(
        "--tuned-concurrency", type=int, default=32, help="0: measure lbhc as shipped only"
    )
    parser.add_argument(
        "--baseline-services",
        type=int,
        default=None,
        help="measure the one-at-a-time baseline on the first N new Services only and "
        "extrapolate linearly (default: all of them)",
    )
    parser.add_argument("--timeout", type=float, default=None)
    add_output_args(parser)
    args = parser.parse_args(argv)
    count = args.services
    subset = min(count, args.baseline_services or count)
    per_op = args.latency + 0.5
    timeout = args.timeout or max(300.0, 2 * count * per_op)
    common = (args.warm, args.latency, args.quota, timeout)
    bound = count / args.quota
    started = time.monotonic()
    print("burst_bench: lbhc as shipped ...", flush=True)
    ours = run_ours(count, None, *common)
    tuned = None
    if args.tuned_concurrency:
        print(f"burst_bench: lbhc, {args.tuned_concurrency} concurrent pool calls ...", flush=True)
        tuned = run_ours(count, args.tuned_concurrency, *common)
    print(f"burst_bench: one at a time ({subset} of {count}) ...", flush=True)
    baseline = run_one_at_a_time(count, subset, *common)
    figures: dict[str, Any] = {
        "scenario": "3 burst",
        "new_services": count,
        "operation_latency_seconds": args.latency,
        "mutation_quota_per_second": args.quota,
        "rate_limit_bound_seconds": bound,
        "lbhc_default": ours,
        "one_at_a_time": baseline,
        "ratio_default": round(baseline["seconds"] / ours["seconds"], 1),
        "bench_seconds": round(time.monotonic() - started, 1),
    }
    extrapolated = " (extrapolated)" if baseline["extrapolated"] else ""
    within = 1.2 * bound
    figures["targets"] = [
        target(
            "3.seconds",
            "3 burst: seconds to all attached, as shipped",
            ours["seconds"],
            f"<= {within:g} (bound +20%)",
            ours["seconds"] <= within,
            f"{ours['max_concurrent_pool_calls']} concurrent pool calls / "
            f"{args.latency:g} s operations = at most "
            f"{ours['max_concurrent_pool_calls'] / args.latency:g} attaches/s, under the "
            f"{args.quota:g}/s quota; {int(args.latency * args.quota) + 1}+ concurrent calls "
            "would reach the quota",
        ),
        target(
            "3.ratio",
            f"3 burst: faster than one at a time{extrapolated}, as shipped",
            figures["ratio_default"],
            ">= 15",
            figures["ratio_default"] >= 15,
            f"one at a time is bound by the operation time ({args.latency:g} s each), lbhc as "
            f"shipped by its {ours['max_concurrent_pool_calls']} concurrent calls: the ratio "
            f"is at most about {ours['max_concurrent_pool_calls']}",
        ),
    ]
    if tuned is not None:
        figures["lbhc_tuned"] = tuned
        figures["ratio_tuned"] = round(baseline["seconds"] / tuned["seconds"], 1)
        figures["targets"] += [
            target(
                "3.seconds[tuned]",
                f"3 burst: seconds, {args.tuned_concurrency} concurrent pool calls",
                tuned["seconds"],
                f"<= {within:g} (bound +20%)",
                tuned["seconds"] <= within,
            ),
            target(
                "3.ratio[tuned]",
                f"3 burst: faster than one at a time{extrapolated}, tuned",
                figures["ratio_tuned"],
                ">= 15",
                figures["ratio_tuned"] >= 15,
            ),
        ]
    return emit(figures, args.json, args.compare)


if __name__ == "__main__":
    raise SystemExit(main())
