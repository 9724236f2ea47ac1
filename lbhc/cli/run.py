"""`lbhc run`: the controller in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import logging
import signal

from lbhc.cli.oneshot import settings_from
from lbhc.cli.parser import EXIT_OK, UsageError

log = logging.getLogger(__name__)


def run(args: argparse.Namespace) -> int:
    from lbhc.controller.app import ControllerApp, RunOptions
    from lbhc.controller.leader import LeaseConfig

    settings = settings_from(args)
    options = RunOptions(
        dry_run=args.dry_run,
        leader_elect=args.leader_elect,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        lease_namespace=args.leader_elect_resource_namespace,
        lease_name=args.leader_elect_resource_name,
        resync_period=args.resync_period,
        http_address=args.http_address,
    )
    if options.leader_elect:  # one clear error for inconsistent timings, before any I/O
        try:
            LeaseConfig(
                options.lease_namespace,
                options.lease_name,
                "check",
                options.lease_duration,
                options.renew_deadline,
                options.retry_period,
            )
        except ValueError as exc:
            raise UsageError(
                f"--leader-elect-retry-period, --leader-elect-renew-deadline, "
                f"--leader-elect-lease-duration: {exc}"
            ) from exc
    app = ControllerApp(settings, options)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: app.stop())
    log.info(
        "lbhc %s starting as %s%s",
        "controller",
        app.identity,
        " (dry run: no GCE changes)" if options.dry_run else "",
    )
    app.run()
    log.info("lbhc stopped")
    return EXIT_OK
