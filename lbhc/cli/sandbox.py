"""`lbhc sandbox` (serve everything lbhc talks to, locally, until interrupted) and `lbhc demo`
(the real controller against a fresh sandbox, walking a scale-down scenario)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import TYPE_CHECKING

from lbhc.cli.parser import EXIT_ERROR, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:  # imported when used: the controller image has no sandbox
    from lbhc.sandbox.seed import SandboxSpec


def sandbox(args: argparse.Namespace) -> int:
    from lbhc.httpserver import BindError

    require_sandbox()
    from lbhc.sandbox.sandbox import Sandbox, SandboxOptions

    try:
        options = SandboxOptions(
            spec=sandbox_spec(args),
            operation_latency=args.operation_latency,
            time_scale=args.time_scale,
            directory=args.dir,
            kube_port=args.kube_port,
            compute_port=args.compute_port,
        )
    except ValueError as exc:  # options that parse one by one but not together
        print(f"lbhc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        with Sandbox(options) as running:
            print(running.usage(), flush=True)
            stop.wait()
    except BindError as exc:
        # The sandbox names the server whose port was taken; the flag that set it is ours.
        raise exc.with_flag(_PORT_FLAGS.get(exc.name, "--kube-port or --compute-port")) from exc
    return EXIT_OK


def sandbox_spec(args: argparse.Namespace) -> SandboxSpec:
    """The world `lbhc sandbox` seeds from its flags (ValueError when they do not fit)."""
    from lbhc.sandbox.seed import SandboxSpec

    return SandboxSpec(
        nodes=args.nodes,
        services=args.services,
        local_services=min(args.local_services, args.services),
        kube_proxy_versions=tuple(args.kube_proxy_versions),
        cloud_provider=args.cloud_provider,
    )


# The flag that sets the port of each server the sandbox starts, by the server's name.
_PORT_FLAGS = {"kube-fake-server": "--kube-port", "compute-fake-server": "--compute-port"}


def demo(args: argparse.Namespace) -> int:
    require_sandbox()
    from lbhc.demo.scenario import DemoOptions, run_demo

    if args.timeline is not None:
        from lbhc.demo.picture import require_plotly

        require_plotly()  # now, not after the runs: they would be lost for want of a library
    try:
        options = DemoOptions(
            time_scale=args.time_scale,
            operation_latency=args.operation_latency,
            cloud_provider=args.cloud_provider,
            timeline=args.timeline,
        )
        summary = run_demo(options, out=None if args.output == "json" else sys.stdout)
    except ValueError as exc:
        print(f"lbhc: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.output == "json":
        print(json.dumps(summary.to_json(), indent=2))
    return EXIT_OK if summary.ok else EXIT_ERROR


def require_sandbox() -> None:
    """The controller image leaves the sandbox and demo out: say so in one line (exit 2)
    rather than with an ImportError."""
    import importlib.util

    from lbhc.errors import SetupError

    if importlib.util.find_spec("lbhc.sandbox") is None or (
        importlib.util.find_spec("lbhc.demo") is None
    ):
        raise SetupError(
            "this installation of lbhc has no sandbox (the controller image leaves it out): "
            "run lbhc sandbox and lbhc demo from a checkout, with pip install '.[sandbox]'"
        )
