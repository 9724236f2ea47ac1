"""Scale scenario 7: start-up, from process start to ready, with the time and RSS of each
step, on the converged 5,000-node / 1,000-Service cluster of scenario 1 (a restart: what a
rolling update or a rescheduled Pod does).

- `lbhc run` itself, as a process: seconds to /readyz answering 200 and to /plan holding
  the first plan, its RSS then and its peak (from /proc/PID/status), observed from outside.
- The same start-up step by step (startup_child.py, a fresh interpreter each time): imports
  of lbhc, of the kubernetes client's API modules, of google-cloud-compute; building the
  app; caches synced; the first GCE read; the first plan.
- What google-cloud-compute costs: its import alone in a fresh interpreter (seconds, RSS),
  next to google-auth's requests transport (what lbhc already uses for the legacy checks,
  and all a hand-written REST client for the other ~10 calls would need), and where the
  import time of the whole start-up goes (`-X importtime`, self time by package).

Pools list every node as an instance, as in scale_bench (lbhc asks for them without).
Run: `python -m tests.bench.startup_bench --json PATH`.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from tests.bench.machine import peak_rss_mb, rss_mb
from tests.bench.report import add_output_args, emit
from tests.bench.world import NODE_TAG, PROJECT, REGION, ROOT, FakeWorld, WorldSpec, child_env

VARIANTS: dict[str, int | None] = {"full-pools": None}
IMPORT_PROBES = {
    "google.cloud.compute_v1": "import google.cloud.compute_v1",
    "google.auth.transport.requests": "import google.auth.transport.requests",
    "kubernetes client + CoreV1Api/AppsV1Api": (
        "from kubernetes import client; client.CoreV1Api; client.AppsV1Api"
    ),
    "lbhc.controller.app": "import lbhc.controller.app",
}
STARTUP_IMPORTS = (
    "import lbhc.cli, lbhc.cli.run, lbhc.controller.app; from kubernetes import client; "
    "client.CoreV1Api; client.AppsV1Api; import google.cloud.compute_v1"
)


def _python(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(),
        timeout=timeout,
        check=True,
    )


def import_cost(statement: str) -> dict[str, float]:
    """Seconds and RSS growth of one import statement in a fresh interpreter."""
    script = (
        "import time, json\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'): return int(line.split()[1]) / 1024\n"
        "r0, t0 = rss(), time.perf_counter()\n"
        f"{statement}\n"
        "print(json.dumps({'seconds': time.perf_counter() - t0, 'rss_mb': rss() - r0}))\n"
    )
    result = json.loads(_python("-c", script).stdout.strip().splitlines()[-1])
    return {k: round(v, 2) for k, v in result.items()}


def import_profile(statement: str = STARTUP_IMPORTS, top: int = 8) -> dict[str, float]:
    """Self import time of `lbhc run`'s whole import set, summed by package (seconds)."""
    stderr = _python("-X", "importtime", "-c", statement).stderr
    by_package: Counter[str] = Counter()
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "[us]" in line:
            continue
        self_us, _, name = (part.strip() for part in line[len("import time:") :].split("|"))
        parts = name.split(".")
        group = ".".join(parts[:3] if parts[0] == "google" and len(parts) > 2 else parts[:1])
        if parts[0] == "google" and parts[1:2] != ["cloud"]:
            group = ".".join(parts[:2])
        by_package[group] += int(self_us)
    return {name: round(us / 1e6, 2) for name, us in by_package.most_common(top)}


def run_steps(world: FakeWorld, timeout: float) -> dict[str, Any]:
    spawned = time.monotonic()
    out = _python(
        "-m",
        "tests.bench.startup_child",
        str(spawned),
        world.kube_url,
        world.compute_url,
        str(timeout),
        timeout=timeout + 60,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def run_cli(world: FakeWorld, directory: Path, timeout: float) -> dict[str, Any]:
    """`python -m lbhc run` against the world, observed from outside."""
    kubeconfig = world.write_kubeconfig(directory / "kubeconfig")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = (directory / "lbhc-run.log").open("w")
    spawned = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "lbhc", "run", "--kubeconfig", str(kubeconfig),
         "--project", PROJECT, "--region", REGION, "--node-tags", NODE_TAG,
         "--gce-endpoint", world.compute_url, "--http-address", f"127.0.0.1:{port}",
         "--leader-elect=false", "--log-format", "text"],
        cwd=ROOT, env=child_env(), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    ready = planned = None
    ready_rss = planned_rss = peak = None
    try:
        deadline = spawned + timeout
        while planned is None and time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"lbhc run exited with {process.returncode}; see its log")
            if ready is None and _status(base + "/readyz") == 200:
                ready, ready_rss = time.monotonic(), rss_mb(process.pid)
            if ready is not None and _status(base + "/plan") == 200:
                planned, planned_rss = time.monotonic(), rss_mb(process.pid)
            time.sleep(0.02)
        peak = peak_rss_mb(process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
    return {
        "ready_seconds": None if ready is None else round(ready - spawned, 2),
        "rss_mb_at_ready": ready_rss,
        "first_plan_seconds": None if planned is None else round(planned - spawned, 2),
        "rss_mb_at_first_plan": planned_rss,
        "peak_rss_mb": peak,
    }


def _median_steps(runs: list[dict[str, Any]]) -> dict[str, Any]:
    steps: dict[str, Any] = {}
    for position, first in enumerate(runs[0]["steps"]):
        same = [r["steps"][position] for r in runs if len(r["steps"]) > position]
        steps[first["step"]] = {
            "seconds": round(statistics.median(s["seconds"] for s in same), 3),
            "rss_mb": round(statistics.median(s["rss_mb"] for s in same), 1),
        }
    return steps


def _median(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def run_variant(
    name: str, nodes: int, services: int, repeats: int, timeout: float, cli: bool
) -> Any:
    spec = WorldSpec(nodes=nodes, services=services, pool_instances=VARIANTS[name], converged=True)
    with FakeWorld(spec) as world, tempfile.TemporaryDirectory(prefix="lbhc-start-") as tmp:
        cli_run = run_cli(world, Path(tmp), timeout) if cli else None
        runs = [run_steps(world, timeout) for _ in range(repeats)]
        pool_instances = world.info["pool_instances"]
    return {
        "nodes": nodes,
        "services": services,
        "pool_instances": pool_instances,
        "lbhc_run": cli_run,
        "steps_median": _median_steps(runs),
        "step_runs": repeats,
        "ready_since_spawn_median": _median(r["ready_since_spawn"] for r in runs),
        "first_plan_since_spawn_median": _median(r["planned_since_spawn"] for r in runs),
        "gce_read_seconds_median": _median(r["gce_read_seconds"] for r in runs),
        "peak_rss_mb_median": _median(r["peak_rss_mb"] for r in runs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--services", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3, help="step-by-step runs")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--timeout", type=float, default=1200.0)
    parser.add_argument(
        "--no-import-probes", action="store_true", help="skip the import-cost measurements"
    )
    parser.add_argument(
        "--skip-cli", action="store_true", help="only the step-by-step runs, not `lbhc run`"
    )
    add_output_args(parser)
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"scenario": "7 start-up"}
    if not args.no_import_probes:
        print("startup_bench: import costs ...", flush=True)
        figures["import_alone"] = {n: import_cost(stmt) for n, stmt in IMPORT_PROBES.items()}
        figures["import_self_seconds_by_package"] = import_profile()
    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        print(f"startup_bench: variant {name} ...", flush=True)
        # One step-by-step run where pools are full: the GCE read dominates and takes minutes.
        repeats = args.repeats
        figures[name] = run_variant(
            name, args.nodes, args.services, repeats, args.timeout, not args.skip_cli
        )
    if "import_alone" in figures:
        compute = figures["import_alone"]["google.cloud.compute_v1"]
        auth = figures["import_alone"]["google.auth.transport.requests"]
        figures["google_cloud_compute"] = {
            "import_seconds": compute["seconds"],
            "import_rss_mb": compute["rss_mb"],
            "rest_transport_import_seconds": auth["seconds"],
            "rest_transport_import_rss_mb": auth["rss_mb"],
        }
    figures["targets"] = []  # scenario 7 reports; it sets no target
    return emit(figures, args.json, args.compare)


if __name__ == "__main__":
    raise SystemExit(main())
