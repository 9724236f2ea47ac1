"""The connection runs in words: the table, the JSON, and what they show."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbhc.demo.connections import ConnectionRun


def drain_bound_seconds_default() -> float:
    """How long lbhc's default check takes to call a node UNHEALTHY at most: interval x
    (unhealthy threshold + 1), the bound the long delay must exceed."""
    from lbhc.settings.groups import HealthCheckSettings

    check = HealthCheckSettings()
    return float(check.check_interval_sec * (check.unhealthy_threshold + 1))


def render_table(runs: Sequence[ConnectionRun]) -> str:
    header = (
        f"{'run':<28} {'delete delay':>12} {'attempted':>9} {'completed':>9} {'failed':>6} "
        f"{'cut':>4}"
    )
    rows = [header]
    for run in runs:
        c = run.counts
        rows.append(
            f"{run.name:<28} {run.delete_delay:>11g}s {c.attempted:>9} {c.completed:>9} "
            f"{c.failed:>6} {c.cut:>4}"
        )
    return "\n".join(rows)


def connections_json(runs: Sequence[ConnectionRun]) -> dict[str, Any]:
    return {run.name: run.counts.to_json() for run in runs}


def explain(runs: Sequence[ConnectionRun], time_scale: float) -> list[str]:
    """What the table shows: what a check prevents, what it cannot, and what fixes the rest."""
    bound = drain_bound_seconds_default()
    long = [run for run in runs if run.delete_delay > bound and not run.hold]
    short = [run for run in runs if run.delete_delay <= bound and not run.hold]
    held = [run for run in runs if run.hold]
    lines = []
    if long:
        failed = {run.kind: run.counts.failed for run in long}
        lines.append(
            f"delete delay {long[0].delete_delay:g}s, over the drain bound ({bound:g}s; "
            f"{bound * time_scale:g}s at time scale {time_scale:g}): new connections failed "
            + ", ".join(f"{kind} {n}" for kind, n in failed.items())
            + "; a /healthz check took the node out of new connections before its VM went"
        )
    lines.append(
        "cut: long-lived connections already on the node when its VM went; a target pool "
        "has no connection draining, so no health check can save them"
    )
    if short:
        lines.append(
            f"delete delay {short[0].delete_delay:g}s (cluster-autoscaler's default): no check "
            f"can mark the node UNHEALTHY in time; give --node-delete-delay-after-taint "
            f"{bound:g}s or more, or turn on lbhc's hold (hold.deletion)"
        )
    if held:
        failed = {run.kind: run.counts.failed for run in held}
        lines.append(
            f"delete delay {held[0].delete_delay:g}s with lbhc's hold: the autoscaler waited "
            "for lbhc's delay-deletion annotation to go, which lbhc took off once GCE's "
            "getHealth called the node UNHEALTHY; new connections failed "
            + ", ".join(f"{kind} {n}" for kind, n in failed.items())
        )
    return lines
