"""`lbhc plan` and `lbhc apply`: one read-plan-execute pass over settings, readers,
planner and executor."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lbhc.cli.apply import Applied
    from lbhc.executor import ComputeWriter
    from lbhc.model.cluster import ClusterSnapshot
    from lbhc.model.plan import Plan
    from lbhc.planner.config import PlannerConfig
    from lbhc.settings import Settings

from lbhc.cli.parser import EXIT_CHANGES, EXIT_OK


def settings_from(args: argparse.Namespace, **more: Any) -> Settings:
    """Settings from the flags every settings command has (and `more`): None means "not
    given", so LBHC_* and the file decide."""
    from lbhc.settings import load_settings

    return load_settings(
        args.config,
        project=args.project,
        region=args.region,
        network=args.network,
        network_project=args.network_project,
        node_tags=args.node_tags,
        cluster_id=args.cluster_id,
        gce_endpoint=args.gce_endpoint,
        kubeconfig=args.kubeconfig,
        context=args.context,
        health_check_mode=args.health_check_mode,
        **more,
    )


def plan_or_apply(args: argparse.Namespace) -> int:
    from lbhc.evidence import EvidencePlanner
    from lbhc.gce.client import GceClient
    from lbhc.planner.planner import shared_name
    from lbhc.render import render_json, render_plan_text

    settings = settings_from(args)
    config = settings.planner_config()
    cluster = read_cluster(args, settings)
    _, name = shared_name(cluster, config)
    applying = args.command == "apply"
    # Plan mode opens a read-only client: a mutation would raise before reaching GCE.
    gce = GceClient(settings.gce_client_config(read_only=not applying))
    the_plan, _ = EvidencePlanner(gce, config).plan(cluster, gce.read_snapshot(name, complete=True))
    refuse_out_of_scope(the_plan, config)

    if not applying:
        print(render_json(the_plan) if args.output == "json" else render_plan_text(the_plan))
        return EXIT_CHANGES if args.detailed_exitcode and the_plan.has_changes else EXIT_OK
    return apply_and_report(the_plan, gce, settings.gce.max_concurrent_pool_calls, args).exit_code


def refuse_out_of_scope(the_plan: Plan, config: PlannerConfig) -> None:
    """GCE shows a project or region with none of the cluster's load balancers exactly as a
    cluster without any: "No changes" (exit 0 under --detailed-exitcode) would pass a CI gate
    on a wrong view. The fix is --project or --region: exit 2 (1 under --detailed-exitcode)."""
    from lbhc.errors import SetupError
    from lbhc.planner.scope import ScopeMismatch

    if the_plan.out_of_scope:
        raise SetupError(ScopeMismatch(the_plan.out_of_scope).message(config, one_shot=True))


def apply_and_report(
    the_plan: Plan, gce: ComputeWriter, max_concurrency: int, args: argparse.Namespace
) -> Applied:
    """Shared by `apply` and `teardown`: the plan, the question, the streamed changes, the
    summary (or, after Ctrl-C, what was and was not done)."""
    from lbhc.cli.apply import Progress, confirm, execute, render_applied
    from lbhc.render import render_json, render_plan_text

    text = args.output != "json"
    if not text and not args.auto_approve and sys.stdin.isatty() and the_plan.changes:
        # The question would land in the JSON, asked about a plan not yet shown (terraform
        # requires -auto-approve with -json for the same reason).
        from lbhc.cli.parser import UsageError

        raise UsageError(f"{args.command} --output json on a terminal needs --auto-approve")
    if text:
        print(render_plan_text(the_plan), flush=True)
    confirm(the_plan, sys.stdin, sys.stdout, args.auto_approve)
    if text and the_plan.changes:
        print()
    progress = Progress(len(the_plan.changes), sys.stdout, sys.stderr, stream=text)
    applied = execute(the_plan, gce, max_concurrency, progress)
    if text:
        print(render_applied(the_plan, applied))
    else:
        print(render_json(the_plan, applied.result, interrupted=applied.interrupted))
    return applied


def read_cluster(args: argparse.Namespace, settings: Settings) -> ClusterSnapshot:
    """The cluster as a one-shot command sees it: read in full, or a KubeReadError naming
    what could not be read and why (never a plan or status from half a cluster; the
    controller withholds removals instead). No retries below lbhc: a server that cannot be
    reached, or does not answer, is one line within kube.connect_timeout_sec or
    kube.request_timeout_sec, not a page of urllib3 warnings first."""
    from lbhc.kube.client import KubeReader, connect
    from lbhc.kube.snapshot_file import load_cluster_snapshot
    from lbhc.planner.config import ReadinessPolicy

    if args.cluster_snapshot is not None:
        return load_cluster_snapshot(args.cluster_snapshot)
    kube_config = settings.kube_config()
    api_client, target = connect(kube_config)
    reader = KubeReader(
        api_client,
        kube_config,
        settings.kube_proxy.namespace,
        settings.kube_proxy.selector,
        read_cluster_uid=settings.health_check.cluster_id is None,
        daemonset_selector=(
            None
            if settings.readiness.policy is ReadinessPolicy.OFF
            else settings.readiness.selector
        ),
        target=target,
    )
    return reader.read_snapshot(complete=True)
