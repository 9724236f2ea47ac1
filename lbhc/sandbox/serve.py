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

from lbhc.kube.snapshot_file import SnapshotFileError, load_cluster_snapshot
from lbhc.sandbox.cloud_provider import provision_load_balancers
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer


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
    try:
        cluster = load_cluster_snapshot(args.cluster_snapshot)
    except SnapshotFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    fake = ComputeFake(operation_latency=args.operation_latency)
    fake.add_network(args.project, args.network)
    pools = provision_load_balancers(
        fake, args.project, args.region, cluster.services, cluster.nodes
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with ComputeFakeServer(fake, port=args.port) as server:
        print(
            f"Compute fake serving {server.url} (project {args.project}, region "
            f"{args.region}); {len(pools)} target pools seeded as the legacy cloud provider "
            "made them (no health checks). Ctrl-C stops it.",
            flush=True,
        )
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
