"""`lbhc teardown`: what an operator runs to uninstall. GCE settings only (the cluster may be
gone already): shows the plan, then detaches lbhc's check from every pool of the region, gives
back every check lbhc replaced, and deletes the check and its firewall. Safe to run again;
`--dry-run` only shows the plan. Without `--cluster-id` it finds lbhc's check in the project
and only shows the plan: acting on a guess could tear down another cluster's. A
--cluster-id that names nothing (a typo, or a teardown already complete) exits 2
naming the checks lbhc does own, never "No changes"."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from lbhc.cli.parser import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from lbhc.errors import SetupError

if TYPE_CHECKING:
    from lbhc.gce.client import GceClient
    from lbhc.settings import Settings


class TeardownError(SetupError):
    """Which of lbhc's checks to tear down cannot be told, or --cluster-id names none: the
    fix is a flag (exit 2; one line, naming it)."""


def teardown(args: argparse.Namespace) -> int:
    from lbhc.cli.oneshot import apply_and_report
    from lbhc.gce.client import GceClient
    from lbhc.model.cloud import http_health_check_url
    from lbhc.planner.teardown import plan_teardown
    from lbhc.render import render_json, render_plan_text
    from lbhc.settings import GceOnlySettings, load_settings

    settings = load_settings(
        args.config,
        base=GceOnlySettings,
        project=args.project,
        region=args.region,
        network=args.network,
        network_project=args.network_project,
        node_tags=args.node_tags,
        cluster_id=args.cluster_id,
        gce_endpoint=args.gce_endpoint,
        health_check_mode=args.health_check_mode,
    )
    named = settings.health_check.cluster_id is not None
    gce = GceClient(settings.gce_client_config(read_only=args.dry_run or not named))
    found = _find(gce, settings)
    if found is None:
        message = (
            "Nothing to tear down: no health check of lbhc's "
            f"({settings.health_check.base_name}-*) in "
            f"project {settings.gce.project}. If its firewall remains (a teardown cut short after "
            "the check went), run again with --cluster-id."
        )
        print(json.dumps({"changes": [], "message": message}) if args.output == "json" else message)
        return EXIT_OK
    cluster_id, name = found
    cloud = gce.read_snapshot(name)
    check_url = http_health_check_url(settings.gce.project, name)
    the_plan = plan_teardown(cloud, name, cluster_id, check_url)
    if named and not the_plan.changes and not the_plan.withheld:
        raise TeardownError(_nothing_of(cluster_id, name, gce, settings))
    if args.dry_run or not named or not the_plan.changes:
        print(render_json(the_plan) if args.output == "json" else render_plan_text(the_plan))
        if not named and the_plan.changes and not args.dry_run:
            print(
                f"lbhc: found the check of cluster {cluster_id}; nothing was changed: to tear it "
                f"down, run again with --cluster-id {cluster_id}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        return EXIT_OK if not the_plan.withheld else EXIT_ERROR
    applied = apply_and_report(the_plan, gce, settings.gce.max_concurrent_pool_calls, args)
    result = applied.result
    if applied.interrupted:
        return applied.exit_code
    # Withheld or refused (a pool elsewhere still uses the check): not done, and scripts must
    # see that.
    blocked = any(o.blocked for o in result.outcomes)
    if result.ok and (blocked or the_plan.withheld):
        print(
            f"lbhc: teardown of {name} is not complete (see the warnings and skipped steps); "
            "run it again once they are resolved",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK if result.ok else EXIT_ERROR


def _nothing_of(cluster_id: str, name: str, gce: GceClient, settings: Settings) -> str:
    """ "No changes" for a cluster id that names nothing would read as success while another
    cluster's check, firewall and attachments remain (a mistyped id). A run after a complete
    teardown lands here too: the message says both, and names the checks lbhc does own."""
    owned = _owned_checks(gce, settings)
    found = (
        "lbhc's checks in the project: "
        + ", ".join(f"{check} (cluster {owner})" for owner, check in owned)
        + "; pass one of those clusters' --cluster-id"
        if owned
        else "no other check of lbhc's is in the project either"
    )
    return (
        f"nothing of lbhc's for cluster {cluster_id} in project {settings.gce.project}, "
        f"region {settings.gce.region}: no check or firewall {name}, no pool carrying it "
        f"(already torn down, or check --cluster-id and --project); {found}"
    )


def _owned_checks(gce: GceClient, settings: Settings) -> list[tuple[str, str]]:
    """(cluster id, check name) of every check lbhc's ownership mark says is lbhc's."""
    from lbhc.planner.shared import owner_of

    prefix = f"{settings.health_check.base_name}-"
    return sorted(
        (owner, check.name)
        for check in gce.list_http_health_checks()
        if check.name.startswith(prefix) and (owner := owner_of(check.description))
    )


def _find(gce: GceClient, settings: Settings) -> tuple[str, str] | None:
    """(cluster id, name) of lbhc's check: by --cluster-id, else the one lbhc owns in the
    project (shown, never acted on)."""
    from lbhc.planner.names import shared_resource_name

    check_settings = settings.health_check
    if check_settings.cluster_id:
        cluster_id = check_settings.cluster_id
        return cluster_id, shared_resource_name(check_settings.base_name, cluster_id)
    owned = _owned_checks(gce, settings)
    if len(owned) > 1:
        listed = ", ".join(f"{name} (cluster {owner})" for owner, name in owned)
        raise TeardownError(
            f"lbhc manages health checks for {len(owned)} clusters in project "
            f"{settings.gce.project}: {listed}; pass --cluster-id to say which to tear down"
        )
    return owned[0] if owned else None
