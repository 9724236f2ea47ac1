"""Event-to-attached latency: a new LoadBalancer Service appears in the API (and its pool in
GCE); how long until the running controller has attached the shared check to it. Both
fakes over HTTP, a zero-latency Compute fake, the real controller. Run: `make bench`."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from tests.bench.report import add_output_args, emit
from tests.controller.harness import world
from tests.waiting import wait_for


def bench_event_to_attached(services: int, warm: int) -> dict[str, Any]:
    latencies: list[float] = []
    with world() as w:
        pools = [w.add_service(f"warm-{i}") for i in range(warm)]
        w.start()
        wait_for(lambda: all(w.attached(p) for p in pools), timeout=60, what="warm-up")
        for i in range(services):
            start = time.perf_counter()
            pool = w.add_service(f"new-{i}")
            while not w.attached(pool):
                time.sleep(0.001)
                if time.perf_counter() - start > 30:
                    raise AssertionError(f"service new-{i} not attached in 30 s")
            latencies.append(time.perf_counter() - start)
    ordered = sorted(latencies)
    return {
        "new_services": services,
        "attached_median_ms": round(statistics.median(ordered) * 1000, 1),
        "attached_p99_ms": round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 1),
        "attached_max_ms": round(ordered[-1] * 1000, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--warm", type=int, default=50)
    add_output_args(parser)
    args = parser.parse_args(argv)
    figures = bench_event_to_attached(args.services, args.warm)
    return emit(figures, args.json, args.compare)


if __name__ == "__main__":
    raise SystemExit(main())
