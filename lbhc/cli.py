"""`lbhc plan` and `lbhc apply`: the CLI adapter over settings, readers, planner, executor."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from lbhc.model.cluster import ClusterSnapshot
    from lbhc.settings import Settings

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2
log = logging.getLogger("lbhc")


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 1: argparse's 2 would read as "changes" under --detailed-exitcode."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"lbhc: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lbhc",
        description=(
            "Keep one shared kube-proxy /healthz health check and its firewall on every "
            "externalTrafficPolicy=Cluster target pool."
        ),
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("--config", type=Path, help="YAML settings file")
    gce = common.add_argument_group("GCE (also LBHC_* env vars or --config)")
    gce.add_argument("--project")
    gce.add_argument("--region")
    gce.add_argument("--network")
    gce.add_argument("--node-tags", help="comma-separated network tags of the nodes")
    gce.add_argument("--cluster-id", help="default: a hash of the kube-system namespace UID")
    gce.add_argument(
        "--gce-endpoint", help="Compute API endpoint; plain http:// uses no credentials"
    )
    kube = common.add_argument_group("cluster")
    kube.add_argument(
        "--cluster-snapshot",
        type=Path,
        help="plan from `kubectl get nodes,services,pods -A -o json` output",
    )
    kube.add_argument("--kubeconfig")
    kube.add_argument("--context")
    common.add_argument("--output", choices=("text", "json"), default="text")
    common.add_argument(
        "--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    )

    plan = sub.add_parser("plan", parents=[common], help="show what would change; changes nothing")
    plan.add_argument(
        "--detailed-exitcode",
        action="store_true",
        help="exit 0 for no changes, 2 for changes, 1 for errors",
    )
    sub.add_parser("apply", parents=[common], help="compute the plan and carry it out")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _run(args)
    except KeyboardInterrupt:
        return EXIT_ERROR
    except Exception as exc:  # one clear line, never a traceback, for expected failures
        from lbhc.errors import user_message

        message = user_message(exc)
        if message is None:
            raise
        print(f"lbhc: error: {message}", file=sys.stderr)
        return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    from lbhc.executor import Executor
    from lbhc.gce.client import GceClient
    from lbhc.planner.planner import plan as make_plan
    from lbhc.planner.planner import shared_name
    from lbhc.render import render_json, render_plan_text, render_result_text
    from lbhc.settings import load_settings

    settings = load_settings(
        args.config,
        project=args.project,
        region=args.region,
        network=args.network,
        node_tags=args.node_tags,
        cluster_id=args.cluster_id,
        gce_endpoint=args.gce_endpoint,
        kubeconfig=args.kubeconfig,
        context=args.context,
    )
    config = settings.planner_config()
    cluster = _read_cluster(args, settings)
    _, name = shared_name(cluster, config)
    applying = args.command == "apply"
    # Plan mode opens a read-only client: a mutation would raise before reaching GCE.
    gce = GceClient(settings.gce_client_config(read_only=not applying))
    the_plan = make_plan(cluster, gce.read_snapshot(name), config)

    if not applying:
        print(render_json(the_plan) if args.output == "json" else render_plan_text(the_plan))
        return EXIT_CHANGES if args.detailed_exitcode and the_plan.has_changes else EXIT_OK

    result = Executor(gce, settings.max_concurrent_pool_calls).apply(the_plan)
    if args.output == "json":
        print(render_json(the_plan, result))
    else:
        print(render_plan_text(the_plan))
        print()
        print(render_result_text(result))
    return EXIT_OK if result.ok else EXIT_ERROR


def _read_cluster(args: argparse.Namespace, settings: Settings) -> ClusterSnapshot:
    from lbhc.kube.client import KubeConfig, KubeReader, make_api_client
    from lbhc.kube.snapshot_file import load_cluster_snapshot

    if args.cluster_snapshot is not None:
        return load_cluster_snapshot(args.cluster_snapshot)
    kube_config = KubeConfig(kubeconfig=settings.kubeconfig, context=settings.context)
    reader = KubeReader(
        make_api_client(kube_config),
        kube_config,
        settings.kube_proxy_namespace,
        settings.kube_proxy_selector,
        read_cluster_uid=settings.cluster_id is None,
    )
    return reader.read_snapshot()


if __name__ == "__main__":
    sys.exit(main())
