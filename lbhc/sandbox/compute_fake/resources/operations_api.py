"""globalOperations / regionOperations / zoneOperations: get and wait."""

from __future__ import annotations

from .. import operations
from ..errors import not_found
from ..operations import OpRecord
from .common import Request, Response

# Longest a blocked `wait` sleeps before re-reading the clock; an injected clock can jump at any
# time without notifying anyone, so waiters poll it at this period.
_POLL_SECONDS = 0.05


def _lookup(req: Request) -> OpRecord:
    name = req.params["operation"]
    op = req.store.operations.get((req.project, req.scope, name))
    if op is None:
        raise not_found(f"projects/{req.project}/{req.scope}/operations/{name}")
    return op


def handle_get(req: Request) -> Response:
    return 200, operations.render(req.store, _lookup(req))


def handle_wait(req: Request) -> Response:
    """Block until DONE or `wait_timeout`, then return the op (maybe not DONE, as the real API).

    Runs without the store lock: `cond.wait` releases it while blocking.
    """
    store = req.store
    with store.cond:
        deadline = store.clock() + store.wait_timeout
        store.waiters += 1
        try:
            while True:
                operations.advance(store)
                op = _lookup(req)
                now = store.clock()
                if op.done or now >= deadline:
                    return 200, operations.render(store, op)
                remaining = min(op.due, deadline) - now
                store.cond.wait(timeout=min(max(remaining, 0.001), _POLL_SECONDS))
        finally:
            store.waiters -= 1
