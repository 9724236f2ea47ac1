"""Human and JSON renderings of plans and apply results."""

from __future__ import annotations

import json
from typing import Any

from lbhc.executor import ApplyResult, Outcome, Status
from lbhc.model.cloud import resource_name
from lbhc.model.plan import Action, Attach, Change, Detach, Plan

_SYMBOL = {
    Action.CREATE: "+",
    Action.UPDATE: "~",
    Action.DELETE: "-",
    Action.ATTACH: ">",
    Action.DETACH: "<",
}


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else json.dumps(value)


def render_change(change: Change) -> list[str]:
    symbol = _SYMBOL[change.action]
    title = f"  {symbol} {change.kind} {change.name}"
    if isinstance(change, Attach | Detach):
        title += f" ({change.action.value} {resource_name(change.health_check_url)})"
    lines = [title, f"      # {change.reason}"]
    width = max((len(k) for k in change.diff), default=0)
    for field, delta in change.diff.items():
        if change.action is Action.CREATE:
            lines.append(f"      + {field.ljust(width)} = {_value(delta.after)}")
        else:
            lines.append(
                f"      ~ {field.ljust(width)} = {_value(delta.before)} -> {_value(delta.after)}"
            )
    return lines


def render_plan_text(plan: Plan) -> str:
    lines: list[str] = []
    if plan.fallback:
        lines += [f"Fallback: {plan.fallback.reason}", ""]
    if plan.changes:
        lines.append(
            f"lbhc will perform these actions (shared health check {plan.health_check_name}):"
        )
        lines.append("")
        for change in plan.changes:
            lines += render_change(change)
            lines.append("")
    else:
        lines += [
            f"No changes. {plan.health_check_name} and the target pools match the desired state.",
            "",
        ]
    if plan.withheld:
        lines.append("Withheld until the view is complete (never removed on a partial read):")
        for change in plan.withheld:
            lines.append(f"  {_SYMBOL[change.action]} {change.kind} {change.name}: {change.reason}")
        lines.append("")
    for warning in plan.warnings:
        lines.append(f"Warning: {warning}")
    if plan.warnings:
        lines.append("")
    s = plan.summary()
    lines.append(
        f"Plan: {s['create']} to create, {s['update']} to update, {s['attach']} to attach, "
        f"{s['detach']} to detach, {s['delete']} to delete"
        + (f", {s['withheld']} withheld." if s["withheld"] else ".")
    )
    return "\n".join(lines)


def render_outcome_line(outcome: Outcome, position: int, total: int) -> str:
    """One streamed line per change as it completes: `[12/800] attach TargetPool a1b2: done`."""
    change = outcome.change
    line = f"[{position}/{total}] {change.action.value} {change.kind} {change.name}: "
    line += outcome.status.value
    return line + (f" ({outcome.detail})" if outcome.detail else "")


def render_result_summary(result: ApplyResult) -> str:
    return (
        f"Applied: {result.count(Status.DONE)} done, {result.count(Status.FAILED)} failed, "
        f"{result.count(Status.SKIPPED)} skipped."
    )


def render_json(plan: Plan, result: ApplyResult | None = None, *, interrupted: bool = False) -> str:
    return json.dumps(plan_document(plan, result, interrupted=interrupted), indent=2)


def plan_document(
    plan: Plan, result: ApplyResult | None = None, *, interrupted: bool = False
) -> dict[str, Any]:
    """The plan as data and, once carried out, what became of each change (`results`): one
    shape for `apply --output json` and the controller's GET /plan."""
    body = plan.to_json()
    if result is not None:
        body["results"] = [o.to_json() for o in result.outcomes]
        body["ok"] = result.ok and not interrupted
        body["interrupted"] = interrupted
    return body
