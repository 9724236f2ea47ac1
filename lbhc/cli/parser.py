"""Flags. The controller's follow the Kubernetes components' conventions (durations like
`30s`, booleans that accept `--flag=false`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, NoReturn

from lbhc import __version__
from lbhc.durations import http_address, parse_bool, positive_duration

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2
# Ctrl-C: 128 + SIGINT, as shells report it.
EXIT_INTERRUPTED = 130
# Invalid flags or settings: nothing was started. The usage-error code of argparse and of
# most Unix tools, except under --detailed-exitcode, where 2 means "changes" (then 1, as
# terraform does).
EXIT_USAGE = 2


def usage_exit_code(argv: list[str]) -> int:
    return EXIT_ERROR if "--detailed-exitcode" in argv else EXIT_USAGE


class UsageError(ValueError):
    """Flags that parse one by one but not together (e.g. inconsistent lease timings)."""


class _HelpFormatter(argparse.HelpFormatter):
    """Every flag's help ends with its default, unless the text already says it or there is
    none to say (a setting whose default lives in the settings model says it itself), and a
    flag that is a setting names it as the file and the environment spell it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = (action.help or "") + _setting_names(action)
        default = action.default
        if (
            "default" in text
            or default in (None, False, argparse.SUPPRESS)
            or isinstance(action, argparse._HelpAction | argparse._VersionAction)
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


def _setting_names(action: argparse.Action) -> str:
    from lbhc.settings import FLAG_SETTINGS, lookup

    # A setting's flag defaults to None (not given: the variable, the file or the model
    # decide); teardown's and release-holds' own --dry-run share a name with a setting but
    # are not one.
    if action.dest not in FLAG_SETTINGS or action.default is not None:
        return ""
    name = lookup(action.dest)
    return f" [{name.path}, {name.env}]"


class _Parser(argparse.ArgumentParser):
    """Usage errors become a UsageError for main() to report as one line, not argparse's
    usage block (the error is what the reader needs; --help has the rest), with the exit
    code usage_exit_code() gives. Abbreviations are refused: `--proj` silently meaning
    `--project` would break the day a second flag starts with it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _bool_flag(group: argparse._ArgumentGroup, name: str, help_: str) -> None:
    setting = name.removeprefix("--").replace("-", "_")
    group.add_argument(
        name,
        nargs="?",
        const=True,
        type=parse_bool,
        metavar="BOOL",
        help=f"{help_} (default: {_setting_default(setting)})",
    )


def _setting_default(name: str) -> str:
    """The settings model's default for a setting, for help text: written once, there."""
    from lbhc.settings import default_text

    return default_text(name)


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _log_level_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--log-level",
        default=None,
        choices=_LOG_LEVELS,
        help="how much to log on stderr (default: INFO for run, WARNING otherwise)",
    )


def _gce_endpoint_flag(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--gce-endpoint",
        metavar="URL",
        help="Compute API endpoint; plain http:// uses no credentials (a sandbox) "
        f"(default: {_setting_default('gce_endpoint')})",
    )


def _gce_flags(gce: argparse._ArgumentGroup, *, teardown: bool = False) -> None:
    """The GCE flags of plan, apply, status and run, and of teardown too, so that a script
    passes the same flags to each (teardown needs fewer: it ignores --node-tags and
    --health-check-mode, and --cluster-id there is needed to change anything)."""
    gce.add_argument("--project", help="the GCP project of the load balancers (required)")
    gce.add_argument(
        "--region",
        help="the region whose target pools to detach (required)"
        if teardown
        else "the region of the target pools (required)",
    )
    gce.add_argument(
        "--network",
        help="the VPC network the firewall rule goes on, a name or a projects/... path "
        f"(default: {_setting_default('network')})",
    )
    gce.add_argument(
        "--network-project",
        metavar="PROJECT",
        help="a Shared VPC's host project, where the network and its firewall rules live "
        "(default: --project)",
    )
    gce.add_argument(
        "--node-tags",
        metavar="TAG,TAG",
        help="accepted so a script passes plan's flags unchanged; teardown deletes by name "
        "and needs none (default: none)"
        if teardown
        else "comma-separated network tags of the nodes: the firewall rule's targets (required)",
    )
    gce.add_argument(
        "--cluster-id",
        help="whose check to tear down; needed to change anything (default: none, which "
        "shows the plan for the one lbhc health check in the project and changes nothing)"
        if teardown
        else "names lbhc's check and firewall (default: a hash of the kube-system namespace UID)",
    )
    _gce_endpoint_flag(gce)
    gce.add_argument(
        "--health-check-mode",
        metavar="coexist|takeover",
        help="accepted so a script passes plan's flags unchanged; teardown gives back every "
        f"check lbhc replaced in either mode (default: {_setting_default('health_check_mode')})"
        if teardown
        else "coexist: leave a pool's existing check, such as the cloud provider's "
        "k8s-<uid>-node; takeover: replace it with lbhc's, recording it to give back "
        f"(default: {_setting_default('health_check_mode')})",
    )


def _settings_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="YAML settings file (flags override it)"
    )
    _gce_flags(
        parser.add_argument_group(
            "GCE (each flag is also a setting in --config and an LBHC_* variable, named in "
            "[brackets]; flags win, then variables, then the file)"
        )
    )
    _kube_flags(parser.add_argument_group("Kubernetes"))
    _log_level_flag(parser)


def _kube_flags(kube: argparse._ArgumentGroup) -> None:
    kube.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="default: in-cluster config, else $KUBECONFIG, else ~/.kube/config",
    )
    kube.add_argument("--context", help="kubeconfig context (default: its current-context)")


def _versions(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _timing_flags(parser: argparse.ArgumentParser, time_scale: float, latency: float) -> None:
    parser.add_argument(
        "--time-scale",
        type=float,
        default=time_scale,
        help=f"health checking runs this much faster than real time (0.25: an 8 s interval "
        f"takes 2 s); lbhc's logic is unchanged (default: {time_scale})",
    )
    parser.add_argument(
        "--operation-latency",
        type=float,
        default=latency,
        metavar="SECONDS",
        help=f"how long each GCE operation stays PENDING/RUNNING (default: {latency})",
    )
    parser.add_argument(
        "--cloud-provider",
        choices=("current", "legacy"),
        default="current",
        help="which GCE cloud provider made the load balancers: current (attaches its own "
        "node check k8s-<uid>-node to the Cluster pools it creates) or legacy (no checks) "
        "(default: current)",
    )
    parser.set_defaults(log_format="text", log_level=None)


def _sandbox_parsers(sub: argparse._SubParsersAction[_Parser]) -> None:
    sandbox = sub.add_parser(
        "sandbox",
        help="serve a fake cluster and Compute API locally (kubectl and lbhc work against it)",
    )
    _timing_flags(sandbox, time_scale=1.0, latency=0.2)
    sandbox.add_argument("--nodes", type=int, default=3, help="Nodes in the fake cluster")
    # The count stated here is checked against what the sandbox serves
    # (tests/sandbox/test_service_count.py).
    sandbox.add_argument(
        "--services",
        type=int,
        default=4,
        metavar="N",
        help="target-pool LoadBalancer Services web-<i>, the last --local-services of them "
        "Local (named local-<i>); the current cloud provider adds 4 when N > 0: legacy-<N>, "
        "whose pool was made without a check, and one on each kind of backend service (rbs-, "
        "ilb-, ilb-v1-). In all N+4 LoadBalancer Services (legacy: N), in namespace demo, and "
        "no other Service (default: 4, so 8 Services)",
    )
    sandbox.add_argument(
        "--local-services",
        type=int,
        default=1,
        metavar="L",
        help="how many of the N are externalTrafficPolicy: Local",
    )
    sandbox.add_argument(
        "--kube-proxy-versions",
        type=_versions,
        default=["v1.31.4"],
        metavar="V1,V2",
        help="kube-proxy versions, assigned to nodes round-robin (e.g. v1.31.4,v1.29.6)",
    )
    sandbox.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write the kubeconfig (default: a new temporary directory)",
    )
    sandbox.add_argument("--kube-port", type=int, default=0, help="0 picks a free port")
    sandbox.add_argument("--compute-port", type=int, default=0, help="0 picks a free port")
    demo = sub.add_parser(
        "demo", help="run the real controller against a fresh sandbox through a scale-down"
    )
    _timing_flags(demo, time_scale=0.25, latency=0.05)
    _output_flag(demo)
    demo.add_argument(
        "--timeline",
        type=_timeline_file,
        metavar="FILE",
        help="also write the picture of the runs to FILE (.html): each node's health per load "
        "balancer over time, every client connection's outcome, the scale-down's events; one "
        "self-contained page that opens in a browser without network access (needs the "
        "sandbox extra's plotly) (default: none written)",
    )


def _timeline_file(text: str) -> Path:
    """--timeline's FILE, refused before the demo runs rather than after: an .html file in
    a directory that exists and is writable, not a directory itself."""
    path = Path(text)
    if path.suffix.lower() != ".html":
        raise argparse.ArgumentTypeError(f"{text!r}: the timeline is an HTML page, name it *.html")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory")
    parent = path.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: no directory {str(parent)!r} to write it in")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: directory {str(parent)!r} is not writable")
    return path


def _teardown_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    teardown = sub.add_parser(
        "teardown",
        help="uninstall from GCE: detach lbhc's check from every pool of the region, give "
        "back every check it replaced, delete its check and firewall (GCE access only)",
    )
    teardown.add_argument(
        "--config", type=Path, metavar="FILE", help="YAML settings file (flags override it)"
    )
    _gce_flags(
        teardown.add_argument_group("GCE (also settings: LBHC_GCE_* variables or --config)"),
        teardown=True,
    )
    teardown.add_argument("--dry-run", action="store_true", help="show the plan, change nothing")
    _auto_approve_flag(teardown)
    _output_flag(teardown)
    _log_level_flag(teardown)
    teardown.set_defaults(log_format="text")


def _release_holds_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    release = sub.add_parser(
        "release-holds",
        help="uninstall from the cluster: remove lbhc's delay-deletion annotation from every "
        "Node (hold.deletion; Kubernetes access only, other annotations untouched)",
    )
    release.add_argument(
        "--config", type=Path, metavar="FILE", help="YAML settings file (flags override it)"
    )
    _kube_flags(
        release.add_argument_group("Kubernetes (the kube.* settings apply, its timeouts included)")
    )
    release.add_argument(
        "--dry-run", action="store_true", help="list the nodes it would release, change nothing"
    )
    _output_flag(release)
    _log_level_flag(release)
    release.set_defaults(log_format="text")


def _output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", choices=("text", "json"), default="text", help="output format")


def _auto_approve_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--auto-approve",
        action="store_true",
        help="do not ask before changing GCE (the question is asked only when stdin is a terminal)",
    )


_LEASE_HELP = {
    "lease-duration": "how long a Lease held by another replica is respected after its "
    "last renewal before it may be taken over",
    "renew-deadline": "how long the leader keeps trying to renew before it stops writing "
    "(must be below the lease duration)",
    "retry-period": "how often to try to acquire or renew the Lease",
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lbhc",
        description=(
            "Keep one shared kube-proxy /healthz health check and its firewall on every "
            "externalTrafficPolicy=Cluster target pool."
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    oneshot = _Parser(add_help=False)
    _settings_flags(oneshot)
    oneshot.add_argument(
        "--cluster-snapshot",
        type=Path,
        metavar="FILE",
        help="read the cluster from this file instead of the API server: the output of "
        "`kubectl get nodes,services,pods,daemonsets,namespaces -A -o json`",
    )
    _output_flag(oneshot)
    oneshot.set_defaults(log_format="text")
    plan = sub.add_parser("plan", parents=[oneshot], help="show what would change; changes nothing")
    plan.add_argument(
        "--detailed-exitcode",
        action="store_true",
        help="exit 0 for no changes, 2 for changes, 1 for errors (invalid settings included)",
    )
    apply = sub.add_parser(
        "apply",
        parents=[oneshot],
        help="show the plan, ask on a terminal, carry it out streaming each change",
    )
    _auto_approve_flag(apply)
    status = sub.add_parser(
        "status",
        parents=[oneshot],
        help="per Service and node: check attached or why not, kube-proxy version, drain state",
    )
    status.add_argument(
        "--lb-health",
        action="store_true",
        help="add GCE's own view per node (targetPools.getHealth; one call per node)",
    )
    status.add_argument(
        "--watch",
        type=positive_duration,
        default=None,
        metavar="DURATION",
        help="repeat every DURATION until interrupted; with --lb-health, times when each "
        "marked node turned UNHEALTHY in the load balancer",
    )

    version = sub.add_parser(
        "version", help="print the version of lbhc, its commit and its main libraries"
    )
    _output_flag(version)
    version.set_defaults(log_format="text", log_level=None)
    completion = sub.add_parser(
        "completion", help="print a bash completion script: source <(lbhc completion bash)"
    )
    completion.add_argument("shell", choices=("bash",), help="the shell to complete for")
    completion.set_defaults(log_format="text", log_level=None)
    _teardown_parser(sub)
    _release_holds_parser(sub)
    _sandbox_parsers(sub)

    run = sub.add_parser(
        "run",
        help="the controller: keep everything converged",
        description="Every flag below is also a setting in --config and an LBHC_* variable, "
        "named in [brackets] (README's Settings lists them all): the flag wins, then the "
        "variable, then the file.",
    )
    _settings_flags(run)
    # Defaults None: a flag given overrides the setting; its default lives in the model.
    loop = run.add_argument_group("controller")
    _bool_flag(loop, "--dry-run", "log and export the plans, make no GCE change")
    loop.add_argument(
        "--resync-period",
        type=positive_duration,
        metavar="DURATION",
        help="re-read GCE and repair drift this often "
        f"(default: {_setting_default('resync_period')})",
    )
    loop.add_argument(
        "--http-address",
        type=http_address,
        metavar="HOST:PORT",
        help="/healthz, /readyz, /metrics, /plan (port 0 picks one) "
        f"(default: {_setting_default('http_address')})",
    )
    loop.add_argument(
        "--log-format",
        choices=("json", "text"),
        help="json: one object per line, for log collectors; text: for people "
        f"(default: {_setting_default('log_format')})",
    )
    election = run.add_argument_group("leader election")
    _bool_flag(election, "--leader-elect", "elect one writer among replicas")
    for timing in ("lease-duration", "renew-deadline", "retry-period"):
        setting = "leader_elect_" + timing.replace("-", "_")
        election.add_argument(
            f"--leader-elect-{timing}",
            type=positive_duration,
            metavar="DURATION",
            help=f"{_LEASE_HELP[timing]} (default: {_setting_default(setting)})",
        )
    election.add_argument(
        "--leader-elect-resource-namespace",
        help="namespace of the Lease (default: $POD_NAMESPACE, else lbhc-system)",
    )
    election.add_argument(
        "--leader-elect-resource-name",
        help="name of the Lease (coordination.k8s.io/v1) the replicas compete for "
        f"(default: {_setting_default('leader_elect_resource_name')})",
    )
    return parser
