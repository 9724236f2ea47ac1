"""`lbhc plan` and `lbhc apply`: one read-plan-execute pass over settings, readers,
planner and executor."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lbhc.model.cluster import ClusterSnapshot
    from lbhc.settings import Settings

from lbhc.cli.parser import EXIT_CHANGES, EXIT_ERROR, EXIT_OK


def settings_from(args: argparse.Namespace) -> Settings:
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
    )


def plan_or_apply(args: argparse.Namespace) -> int:
    from lbhc.executor import Executor
    from lbhc.gce.client import GceClient
    from lbhc.planner.planner import plan as make_plan
    from lbhc.planner.planner import shared_name
    from lbhc.render import render_json, render_plan_text, render_result_text

    settings = settings_from(args)
    config = settings.planner_config()
    cluster = read_cluster(args, settings)
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


def read_cluster(args: argparse.Namespace, settings: Settings) -> ClusterSnapshot:
    from lbhc.kube.client import KubeConfig, KubeReader, make_api_client
    from lbhc.kube.snapshot_file import load_cluster_snapshot
    from lbhc.planner.config import ReadinessPolicy

    if args.cluster_snapshot is not None:
        return load_cluster_snapshot(args.cluster_snapshot)
    kube_config = KubeConfig(kubeconfig=settings.kubeconfig, context=settings.context)
    reader = KubeReader(
        make_api_client(kube_config),
        kube_config,
        settings.kube_proxy_namespace,
        settings.kube_proxy_selector,
        read_cluster_uid=settings.cluster_id is None,
        daemonset_selector=(
            None
            if settings.readiness_policy is ReadinessPolicy.OFF
            else settings.readiness_selector
        ),
    )
    return reader.read_snapshot()
