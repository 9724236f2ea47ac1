"""The command line: `lbhc plan`, `lbhc apply` (one pass), `lbhc status` (what lbhc sees),
`lbhc run` (the controller), `lbhc teardown` and `lbhc release-holds` (uninstall: GCE, and
the Nodes' annotations), `lbhc sandbox` and `lbhc demo` (no cloud needed), `lbhc version`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from lbhc.cli.parser import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    UsageError,
    build_parser,
    usage_exit_code,
)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(arguments)
    except UsageError as exc:
        return _report(str(exc), usage_exit_code(arguments))
    from lbhc import logs

    default_level = "INFO" if args.command == "run" else "WARNING"
    # `run` configures its format again once its settings are read (LBHC_LOG_FORMAT, or
    # log.format in the file).
    logs.configure(args.log_level or default_level, args.log_format or "json")
    try:
        if args.command == "version":
            from lbhc.cli.version import version

            return version(args)
        if args.command == "completion":
            from lbhc.cli.completion import completion

            return completion(args)
        if args.command == "run":
            from lbhc.cli.run import run

            return run(args)
        if args.command in ("sandbox", "demo"):
            from lbhc.cli import sandbox

            return sandbox.sandbox(args) if args.command == "sandbox" else sandbox.demo(args)
        if args.command == "status":
            from lbhc.cli.status import status

            return status(args)
        if args.command == "teardown":
            from lbhc.cli.teardown import teardown

            return teardown(args)
        if args.command == "release-holds":
            from lbhc.cli.release_holds import release_holds

            return release_holds(args)
        from lbhc.cli.oneshot import plan_or_apply

        return plan_or_apply(args)
    except KeyboardInterrupt:
        # Ctrl-C outside an apply (which accounts for itself): nothing was changed.
        return _report("interrupted", EXIT_INTERRUPTED)
    except Exception as exc:  # one clear line, never a traceback, for expected failures
        from lbhc.cli.apply import ApplyDeclined
        from lbhc.cli.messages import user_message
        from lbhc.planner.planner import PlanningError
        from lbhc.settings import SettingsError

        if isinstance(exc, ApplyDeclined):
            return _report(str(exc), EXIT_ERROR)
        # The fix is a flag, a setting or a file: a cluster id that cannot be known or makes
        # no valid name is fixed by --cluster-id, as a snapshot file by another file.
        if isinstance(exc, UsageError | SettingsError | PlanningError):
            return _report(str(exc), usage_exit_code(arguments))
        message = user_message(exc)
        if message is None:
            raise
        return _report(message, EXIT_ERROR)


def _report(message: str, code: int) -> int:
    # One line per problem (several invalid settings give several), each prefixed, so every
    # line on stderr reads on its own in a log.
    for line in message.splitlines() or [""]:
        print(f"lbhc: error: {line}", file=sys.stderr)
    return code
