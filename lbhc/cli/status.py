"""`lbhc status`: per Service and per node, what lbhc sees and why, plus the fallback and
kube-proxy health summaries; with --lb-health, what GCE's own health checking reports for
each node (targetPools.getHealth), and with --watch, when each marked node turned
UNHEALTHY in the load balancer relative to when it was marked."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lbhc.cli.parser import EXIT_OK

if TYPE_CHECKING:
    from lbhc.gce.client import GceClient
    from lbhc.model.cluster import ClusterSnapshot
    from lbhc.model.lb_health import LbHealthView
    from lbhc.planner.hold import HoldPlan
    from lbhc.planner.status import StatusReport
    from lbhc.settings import Settings


def status(args: argparse.Namespace) -> int:
    try:
        return _status(args)
    except KeyboardInterrupt:
        if args.watch:  # Ctrl-C is how a watch ends, as with kubectl get --watch
            print(file=sys.stderr)
            return EXIT_OK
        raise


def _status(args: argparse.Namespace) -> int:
    from lbhc.cli.oneshot import read_cluster, settings_from
    from lbhc.gce.client import GceClient
    from lbhc.planner.fail_open import fail_open

    settings = settings_from(args)
    gce = GceClient(settings.gce_client_config(read_only=True))
    first_unhealthy: dict[str, Unhealthy] = {}
    seen: dict[str, str] = {}
    failing_since: float | None = None
    while True:
        try:
            cluster = read_cluster(args, settings)
            report, lb_health = _assess(cluster, gce, settings, with_lb_health=args.lb_health)
        except Exception as exc:
            if not args.watch or not _passing(exc):
                raise
            # A watch outlives a read that failed (the API server restarting): it says so in
            # one line, shows no status from it, and tries again.
            from lbhc.cli.messages import user_message

            why = user_message(exc) or f"{type(exc).__name__}: {exc}"
            print(f"lbhc: error: {why} (watching: next try in {args.watch:g} s)", file=sys.stderr)
            sys.stderr.flush()
            time.sleep(args.watch)
            continue
        now = time.time()
        track_unhealthy(lb_health, seen, first_unhealthy, now)
        failing = fail_open(report, lb_health)
        warning = ""
        if failing is None:
            failing_since = None
        else:
            failing_since = failing_since or now
            warning = failing.message(now - failing_since if args.watch else None)
        holds = hold_status(cluster, report, settings, now)
        if args.output == "json":
            body = status_json(report, lb_health, first_unhealthy, holds)
            print(json.dumps({**body, "failOpen": warning or None}, indent=2))
        else:
            text = render_status_text(report, lb_health, first_unhealthy, holds)
            print(text + (f"\nWarning: {warning}" if warning else ""))
        if not args.watch:
            return EXIT_OK
        sys.stdout.flush()
        time.sleep(args.watch)


def _passing(exc: BaseException) -> bool:
    """A failure to read that may pass by itself (something down or refused), as opposed to
    one the user must fix (a setting, a file) that no retry mends."""
    from google.api_core import exceptions as core

    from lbhc.errors import RunFailure
    from lbhc.kube.client import KubeReadError
    from lbhc.settings import SettingsError

    if isinstance(exc, SettingsError):
        return False
    return isinstance(exc, KubeReadError | RunFailure | core.GoogleAPICallError | OSError)


def _assess(
    cluster: ClusterSnapshot, gce: GceClient, settings: Settings, *, with_lb_health: bool
) -> tuple[StatusReport, dict[str, str]]:
    """The report, and with `with_lb_health` what GCE says of each node in the sampled pool
    (the report is then judged again with it, so its verdicts carry that evidence as the
    controller's do)."""
    import dataclasses

    from lbhc.evidence import EvidencePlanner
    from lbhc.planner.planner import shared_name
    from lbhc.planner.status import assess

    config = settings.planner_config()
    _, name = shared_name(cluster, config)
    the_plan, cloud = EvidencePlanner(gce, config).plan(
        cluster, gce.read_snapshot(name, complete=True, backends=True)
    )
    report = assess(cluster, cloud, config, the_plan)
    if not with_lb_health:
        return report, {}
    states = lb_health_by_node(cluster, report, gce, settings)
    view = lb_health_view(report, states)
    judged = assess(cluster, dataclasses.replace(cloud, lb_health=view), config, the_plan)
    return judged, states


def hold_status(
    cluster: ClusterSnapshot, report: StatusReport, settings: Settings, now: float
) -> HoldPlan | None:
    """Each node's deletion hold, as the controller decides it (planner/hold), when the hold
    is on or some node carries lbhc's annotation (it was on once); None otherwise."""
    from lbhc.planner.hold import is_held, plan_holds

    if settings.hold.deletion != "on" and not any(is_held(n) for n in cluster.nodes):
        return None
    complete = cluster.complete and cluster.versions_complete
    return plan_holds(cluster.nodes, report.nodes, settings.hold_config(), now, complete=complete)


def lb_health_view(report: StatusReport, states: dict[str, str]) -> LbHealthView:
    """GCE's answers for the sampled pool as the planner takes them. A refusal is not taken
    to mean "not in the pool" here (the controller confirms that from the pool's instance
    list); it, like a failed read, says nothing."""
    import time

    from lbhc.model.lb_health import HealthReading, InstanceHealth
    from lbhc.model.lb_health import LbHealthView as _view
    from lbhc.planner.fail_open import sampled_pool

    sampled = sampled_pool(report)
    now = time.time()
    if sampled is None:
        return _view(as_of=now, off="no pool carries a kube-proxy /healthz check")
    known = {"HEALTHY": InstanceHealth.HEALTHY, "UNHEALTHY": InstanceHealth.UNHEALTHY}
    readings = {}
    for node, said in states.items():
        state = known.get(said)
        if state is not None:
            since = now if state is InstanceHealth.UNHEALTHY else None
            readings[(sampled[0], node)] = HealthReading(sampled[0], node, state, now, since)
    return _view(readings, now, max_age=60.0, off="")


def lb_health_by_node(
    cluster: ClusterSnapshot,
    report: StatusReport,
    gce: GceClient,
    settings: Settings,
) -> dict[str, str]:
    """One getHealth per node, in the first pool (by name) carrying a kube-proxy /healthz
    check, whoever owns it: every such pool probes the same port and path, so one is
    representative."""
    from lbhc.gce.lb_health import NO_POOL, node_health
    from lbhc.model.cloud import instance_urls
    from lbhc.planner.fail_open import sampled_pool

    sampled = sampled_pool(report)
    if sampled is None:
        return {node.name: NO_POOL for node in cluster.nodes}
    instances = instance_urls(cluster.nodes, settings.gce.project, settings.gce.region)
    return node_health(gce, sampled[0], instances, settings.gce.max_concurrent_pool_calls)


@dataclass(frozen=True)
class Unhealthy:
    """When a node was first seen UNHEALTHY; `exact` when it was seen otherwise just before
    (else it turned UNHEALTHY at some point before `at`)."""

    at: float
    exact: bool


def track_unhealthy(
    lb_health: dict[str, str], seen: dict[str, str], first: dict[str, Unhealthy], now: float
) -> None:
    for node, state in lb_health.items():
        if state != "UNHEALTHY":
            first.pop(node, None)
        elif node not in first:
            first[node] = Unhealthy(now, exact=node in seen and seen[node] != "UNHEALTHY")
        seen[node] = state


def _since(marked_at: str, unhealthy: Unhealthy | None) -> str:
    if unhealthy is None or not marked_at:
        return ""
    try:
        marked = datetime.fromisoformat(marked_at).timestamp()
    except ValueError:
        return ""
    return f"{'' if unhealthy.exact else '<='}+{unhealthy.at - marked:.0f}s"


def status_json(
    report: StatusReport,
    lb_health: dict[str, str],
    first_unhealthy: dict[str, Unhealthy],
    holds: HoldPlan | None = None,
) -> dict[str, Any]:
    body = report.to_json()
    body["holds"] = holds.to_json() if holds is not None else None
    for node, entry in zip(report.nodes, body["nodes"], strict=True):
        if lb_health:
            entry["lbHealth"] = lb_health.get(node.node, "")
            since = first_unhealthy.get(node.node)
            entry["unhealthyInLb"] = (
                {
                    "firstSeen": datetime.fromtimestamp(since.at, UTC).strftime(
                        "%Y-%m-%dT%H:%M:%SZ"
                    ),
                    "exact": since.exact,
                }
                if since
                else None
            )
    return body


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return lines


def _yes_no(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "?"}[value]


def render_status_text(
    report: StatusReport,
    lb_health: dict[str, str],
    first_unhealthy: dict[str, Unhealthy],
    holds: HoldPlan | None = None,
) -> str:
    health = report.kube_proxy
    condition = {True: "healthy", False: "UNHEALTHY", None: "unknown"}[health.healthy]
    drains = ", ".join(f"{n} {state}" for state, n in report.drain_counts().items() if n)
    coverage = ", ".join(f"{n} {kind}" for kind, n in report.coverage_counts().items() if n)
    fallback = f"{report.fallback.reason} ({report.fallback.effect})" if report.fallback else "no"
    lines = [
        f"lbhc's check {report.health_check}: "
        + (f"on {report.lbhc_pools} pool(s)" if report.check_in_use else "on no pool"),
        f"Coverage: {coverage or 'no LoadBalancer Services'}",
        f"Fallback: {fallback}",
        f"kube-proxy: {condition} - {health.message.removeprefix('kube-proxy: ')} "
        + (
            f"(Pods selected by {report.kube_proxy_selector})"
            if report.kube_proxy_selector
            else "(none to select)"
            if report.kube_proxy_replacement
            else "(no kube-proxy Pods found: set kube_proxy.selector)"
        ),
        f"Nodes: {drains or 'none'}",
        "",
        "SERVICES",
    ]
    lines += _table(
        ["SERVICE", "POLICY", "LOAD BALANCER", "COVERAGE", "CHECK", "LBHC", "WHY"],
        [
            [
                s.service,
                s.traffic_policy,
                s.pool or s.backend_service or "-",
                s.coverage.value,
                s.check or "-",
                s.lbhc.value,
                s.reason,
            ]
            for s in report.services
        ],
    )
    lines += ["", "NODES"]
    headers = [
        "NODE",
        "KUBE-PROXY",
        "SOURCE",
        "HEALTHZ",
        "LIVEZ",
        "DRAINS",
        "DRAIN",
        "BOUND",
        "POD",
    ]
    if lb_health:
        headers += ["LB", "MARKED AT", "UNHEALTHY IN LB"]
    rows = []
    for node in report.nodes:
        caps = node.kube_proxy.capabilities
        row = [
            node.node,
            node.kube_proxy.version.display(),
            node.kube_proxy.source.value,
            _yes_no(caps.serves_healthz),
            _yes_no(caps.serves_livez),
            _yes_no(caps.drains_when_deleted),
            node.drain.state.value,
            f"{node.drain.bound_seconds}s" if node.drain.bound_seconds else "-",
            node.pod_state or "-",
        ]
        if lb_health:
            row += [
                lb_health.get(node.node, "-"),
                node.drain.marked_at or "-",
                _since(node.drain.marked_at, first_unhealthy.get(node.node)) or "-",
            ]
        rows.append(row)
    lines += _table(headers, rows)
    for node in report.nodes:
        if node.drain.state.value in ("not-draining", "unknown"):
            lines.append(
                f"Warning: node {node.node} is {node.drain.state.value}: {node.drain.reason}"
            )
        elif node.drain.state.value == "partially-draining":
            lines.append(f"Note: node {node.node} is partially-draining: {node.drain.reason}")
        if node.kube_proxy.note:
            lines.append(f"Note: node {node.node}: {node.kube_proxy.note}")
    if holds is not None:
        lines += ["", f"DELETION HOLDS ({holds.holds} node(s) carry lbhc's annotation)"]
        lines += _table(
            ["NODE", "HOLD", "WHY"],
            [[h.node, h.state.value, h.reason] for h in holds.nodes],
        )
    if report.readiness.findings:
        lines += ["", "KUBE-PROXY PROBES"]
        for finding in report.readiness.findings:
            lines.append(
                f"  {finding.subject_kind} {finding.daemonset} [{finding.container}] "
                f"{finding.kind}: {finding.message}"
            )
    if report.firewall_command:
        lines.append(
            "Firewall: lbhc's rule is not there (yet); if lbhc may not write it (a Shared VPC "
            f"host project), a network admin runs: {report.firewall_command}"
        )
    for warning in report.warnings:
        lines.append(f"Warning: {warning}")
    return "\n".join(lines)
