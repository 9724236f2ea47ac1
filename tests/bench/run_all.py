"""Every benchmark, one after another, each in a process of its own (memory and start-up
figures need fresh processes; a crash in one does not lose the others), into one results
file: the machine, what else was running, each benchmark's figures and every target's
status. `--compare PATH` (the last results file) prints what changed and which targets
regressed. Run: `python -m tests.bench.run_all --json bench-results.json --compare
bench-results.json` (the old file is read before it is overwritten).

The scale scenarios: 1-2 scale_bench, 3 burst_bench, 4-5 cache_bench, 6 drain_bench,
7 startup_bench; plan_bench (planner at 10,000 Services / 5,000 nodes), verify_bench
(GCE's own view within the read budget at 15,000 nodes / 5,000 Services) and
controller_bench (event-to-attached latency) run alongside.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.bench.machine import OtherLoad, machine_info
from tests.bench.report import (
    add_output_args,
    collect_targets,
    load,
    print_comparison,
    print_targets,
)
from tests.bench.world import ROOT, child_env

# name: (module, what, full-size arguments, --quick arguments)
BENCHES: dict[str, tuple[str, str, list[str], list[str]]] = {
    "scale": (
        "tests.bench.scale_bench",
        "1 cold start, 2 steady state",
        [],
        ["--nodes", "50", "--services", "20", "--resyncs", "1"],
    ),
    "burst": (
        "tests.bench.burst_bench",
        "3 burst",
        [],
        ["--services", "10", "--latency", "0.2", "--quota", "20", "--tuned-concurrency", "8"],
    ),
    "cache": (
        "tests.bench.cache_bench",
        "4 memory, 5 watch throughput",
        [],
        ["--nodes", "50", "--services", "100", "--events", "200"],
    ),
    "drain": ("tests.bench.drain_bench", "6 drain", [], ["--trials", "2", "--time-scale", "0.05"]),
    "startup": (
        "tests.bench.startup_bench",
        "7 start-up",
        [],
        ["--nodes", "50", "--services", "20", "--repeats", "1"],
    ),
    "plan": (
        "tests.bench.plan_bench",
        "planner at scale",
        [],
        ["--services", "200", "--nodes", "100", "--gce-services", "50", "--repeats", "1"],
    ),
    "verify": (
        "tests.bench.verify_bench",
        "GCE's own view within the read budget",
        [],
        ["--services", "200", "--nodes", "300", "--marked", "5", "--minutes", "4"],
    ),
    "controller": (
        "tests.bench.controller_bench",
        "event to attached",
        [],
        ["--services", "5", "--warm", "3"],
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", help=f"comma list of {', '.join(BENCHES)}")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: try the harness")
    parser.add_argument(
        "--args",
        action="append",
        default=[],
        metavar="NAME=ARGS",
        help='extra arguments for one benchmark, e.g. burst="--baseline-services 50"',
    )
    add_output_args(parser)
    args = parser.parse_args(argv)
    names = [n.strip() for n in (args.only or ",".join(BENCHES)).split(",") if n.strip()]
    for name in names:
        if name not in BENCHES:
            parser.error(f"unknown benchmark {name!r}")
    extra: dict[str, list[str]] = {}
    for item in args.args:
        name, _, rest = item.partition("=")
        extra.setdefault(name, []).extend(shlex.split(rest))
    previous = load(args.compare)
    results: dict[str, Any] = {
        "command": "python -m tests.bench.run_all " + shlex.join(argv or sys.argv[1:]),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "machine": machine_info(),
        "benches": {},
        "bench_seconds": {},
        "failed": [],
    }
    load_all = OtherLoad()
    load_all.start()
    with tempfile.TemporaryDirectory(prefix="lbhc-bench-") as tmp:
        for name in names:
            module, what, full, quick = BENCHES[name]
            out = Path(tmp) / f"{name}.json"
            command = [sys.executable, "-m", module, *(quick if args.quick else full)]
            command += [*extra.get(name, []), "--json", str(out)]
            print(f"\n=== {name}: {what}\n$ {shlex.join(command[1:])}", flush=True)
            started = time.monotonic()
            code = subprocess.run(command, cwd=ROOT, env=child_env()).returncode
            results["bench_seconds"][name] = round(time.monotonic() - started, 1)
            if code != 0 or not out.is_file():
                results["failed"].append(name)
                print(f"=== {name} FAILED (exit {code})", flush=True)
                continue
            results["benches"][name] = json.loads(out.read_text())
    results["load"] = load_all.stop()
    print("\n=== summary")
    print(json.dumps({"machine": results["machine"], "load": results["load"]}, indent=2))
    print_targets(collect_targets(results))
    if results["failed"]:
        print(f"\nFAILED: {', '.join(results['failed'])}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nresults written to {args.json}")
    if args.compare is not None:
        print_comparison(args.compare, previous, results)
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
