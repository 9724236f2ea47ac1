"""`lbhc sandbox` (serve everything lbhc talks to, locally, until interrupted) and `lbhc demo`
(the real controller against a fresh sandbox, walking a scale-down scenario)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from lbhc.cli.parser import EXIT_ERROR, EXIT_OK


def sandbox(args: argparse.Namespace) -> int:
    from lbhc.sandbox.sandbox import Sandbox, SandboxOptions
    from lbhc.sandbox.seed import SandboxSpec

    try:
        options = SandboxOptions(
            spec=SandboxSpec(
                nodes=args.nodes,
                services=args.services,
                local_services=min(args.local_services, args.services),
                kube_proxy_versions=tuple(args.kube_proxy_versions),
                cloud_provider=args.cloud_provider,
            ),
            operation_latency=args.operation_latency,
            time_scale=args.time_scale,
            directory=args.dir,
            kube_port=args.kube_port,
            compute_port=args.compute_port,
        )
    except ValueError as exc:
        print(f"lbhc: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with Sandbox(options) as running:
        print(running.usage(), flush=True)
        stop.wait()
    return EXIT_OK


def demo(args: argparse.Namespace) -> int:
    from lbhc.demo.scenario import DemoOptions, run_demo

    try:
        options = DemoOptions(
            time_scale=args.time_scale,
            operation_latency=args.operation_latency,
            cloud_provider=args.cloud_provider,
        )
        summary = run_demo(options, out=None if args.output == "json" else sys.stdout)
    except ValueError as exc:
        print(f"lbhc: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.output == "json":
        print(json.dumps(summary.to_json(), indent=2))
    return EXIT_OK if summary.ok else EXIT_ERROR
