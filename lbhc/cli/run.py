"""`lbhc run`: the controller in the foreground until SIGTERM or SIGINT. SIGTERM is how
Kubernetes stops a Pod: a normal end, exit 0. SIGINT is Ctrl-C: exit 130, as every other
command interrupted (128 + SIGINT, as shells report it)."""

from __future__ import annotations

import argparse
import logging
import signal

from lbhc.cli.oneshot import settings_from
from lbhc.cli.parser import EXIT_INTERRUPTED, EXIT_OK

log = logging.getLogger(__name__)


def run(args: argparse.Namespace) -> int:
    from lbhc import logs
    from lbhc.controller.app import ControllerApp, RunOptions
    from lbhc.settings import RUN_SETTINGS

    # The run flags are settings too: a flag given wins over LBHC_* and the file.
    settings = settings_from(args, **{name: getattr(args, name) for name in RUN_SETTINGS})
    logs.configure(args.log_level or "INFO", settings.log.format)
    options = RunOptions.of(settings)
    app = ControllerApp(settings, options)
    stopped_by: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopped_by.append(signum)
        app.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    log.info(
        "lbhc %s starting as %s%s",
        "controller",
        app.identity,
        " (dry run: no GCE changes)" if options.dry_run else "",
    )
    app.run()
    interrupted = stopped_by[:1] == [signal.SIGINT]
    log.info("lbhc stopped%s", " (interrupted)" if interrupted else "")
    return EXIT_INTERRUPTED if interrupted else EXIT_OK
