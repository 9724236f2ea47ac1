"""Operation lifecycle: PENDING -> RUNNING -> DONE over the latency, effect applied at DONE.
An injected stall keeps an operation RUNNING that much longer (for ever when infinite).

Operations advance lazily: whoever touches the store first calls `advance`, which completes every
operation whose due time has passed, in due order. No background thread is needed and an injected
clock fully controls progress.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import urls
from .errors import ComputeError

if TYPE_CHECKING:
    from .store import Store

OPERATION_USER = "fake@lbhc"


@dataclass(eq=False)
class OpRecord:
    project: str
    scope: str  # "global", "regions/<r>" or "zones/<z>"
    name: str
    fields: dict[str, Any]  # the JSON fields that do not change over the op's life
    created: float
    latency: float
    apply: Callable[[], None] | None
    release: Callable[[], None] | None  # undoes reservations when the op fails
    failure: ComputeError | None  # injected failure; replaces the effect
    stall: float = 0.0  # injected: seconds RUNNING beyond the latency (inf: never DONE)
    done: bool = False
    error: ComputeError | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def due(self) -> float:
        return self.created + self.latency + self.stall

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.project, self.scope, self.name)


def create(
    store: Store,
    *,
    project: str,
    scope: str,
    operation_type: str,
    target_link: str,
    target_id: str,
    apply: Callable[[], None] | None,
    release: Callable[[], None] | None = None,
) -> OpRecord:
    """Register a new operation; the caller must hold the store lock."""
    now = store.clock()
    name = store.ids.operation_name(store.times.wall(now))
    fields: dict[str, Any] = {
        "kind": "compute#operation",
        "id": store.ids.new_id(),
        "name": name,
        "operationType": operation_type,
        "targetLink": target_link,
        "targetId": target_id,
        "user": OPERATION_USER,
        "insertTime": store.times.rfc3339(now),
        "selfLink": urls.resource_url(project, scope, "operations", name),
    }
    if scope.startswith("regions/"):
        fields["region"] = urls.region_url(project, scope.split("/", 1)[1])
    elif scope.startswith("zones/"):
        fields["zone"] = urls.zone_url(project, scope.split("/", 1)[1])
    op = OpRecord(
        project=project,
        scope=scope,
        name=name,
        fields=fields,
        created=now,
        latency=max(0.0, store.operation_latency),
        apply=apply,
        release=release,
        failure=store.faults.take_operation_failure(operation_type),
        stall=store.faults.take_operation_stall(operation_type),
    )
    store.operations[op.key] = op
    store.pending.append(op)
    return op


def advance(store: Store) -> None:
    """Complete every due operation (caller holds the store lock)."""
    if not store.pending:
        return
    now = store.clock()
    due = sorted((op for op in store.pending if op.due <= now), key=lambda op: op.due)
    if not due:
        return
    for op in due:
        _complete(op)
        store.pending.remove(op)
    store.cond.notify_all()


def _complete(op: OpRecord) -> None:
    try:
        if op.failure is not None:
            raise op.failure
        if op.apply is not None:
            op.apply()
    except ComputeError as exc:
        op.error = exc
        if op.release is not None:
            op.release()
    op.done = True


def render(store: Store, op: OpRecord) -> dict[str, Any]:
    """The Operation resource as the API returns it at this moment."""
    body = copy.deepcopy(op.fields)
    started = op.created + op.latency / 2
    if op.done:
        body.update(status="DONE", progress=100)
        body["startTime"] = store.times.rfc3339(started)
        body["endTime"] = store.times.rfc3339(op.due)
    elif store.clock() < started:
        body.update(status="PENDING", progress=0)
    else:
        body.update(status="RUNNING", progress=50)
        body["startTime"] = store.times.rfc3339(started)
    if op.error is not None:
        body.update(op.error.operation_error())
    return body
