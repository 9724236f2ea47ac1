"""Serve the Compute fake on 127.0.0.1, seeded with the load balancers the legacy cloud
provider would have made for a cluster dump (pools without checks; `lbhc sandbox` also models
today's), so `lbhc plan`/`apply` can be tried with no cloud account:

    python -m lbhc.sandbox.serve --cluster-snapshot examples/cluster.json --port 8080
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from lbhc.httpserver import BindError
from lbhc.kube.snapshot_file import SnapshotFileError, load_cluster_snapshot
from lbhc.sandbox.cloud_provider import provision_load_balancers
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.compute_fake.store import GCE_REGIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lbhc.sandbox.serve", description=__doc__)
    parser.add_argument("--cluster-snapshot", type=Path, required=True)
    parser.add_argument("--project", default="demo-project")
    parser.add_argument("--region", default="us-central1")
    parser.add_argument("--network", default="default")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument(
        "--operation-latency",
        type=float,
        default=0.0,
        help="seconds each GCE operation stays PENDING/RUNNING",
    )
    args = parser.parse_args(argv)
    if args.region not in GCE_REGIONS:
        return _fail(f"--region {args.region}: not a GCE region (e.g. us-central1)", 2)
    try:
        cluster = load_cluster_snapshot(args.cluster_snapshot)
    except SnapshotFileError as exc:
        return _fail(str(exc), 2)
    fake = ComputeFake(operation_latency=args.operation_latency)
    fake.add_network(args.project, args.network)
    pools = provision_load_balancers(
        fake, args.project, args.region, cluster.services, cluster.nodes
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        server = ComputeFakeServer(fake, port=args.port).start()
    except BindError as exc:
        return _fail(str(exc.with_flag("--port")), 1)
    with server:
        print(
            f"Compute fake serving {server.url} (project {args.project}, region "
            f"{args.region}); {len(pools)} target pools seeded as the legacy cloud provider "
            "made them (no health checks). Ctrl-C stops it.",
            flush=True,
        )
        stop.wait()
    return 0


def _fail(message: str, code: int) -> int:
    """One line, as lbhc's own commands say it; 2 when the fix is a flag or file."""
    print(f"lbhc: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
