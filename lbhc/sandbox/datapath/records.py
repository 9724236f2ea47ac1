"""What the data path saw of every connection: where it went and how it ended, so a demo can
attribute each failed connection to a node (the one being deleted, or not).

Outcomes, as the data path saw them (the client may only notice later, or never):
- "completed": the client or the node backend closed the connection in the ordinary way.
- "reset": the data path reset the client (its instance left the load balancer, and the
  instance its packets were re-hashed to had no state for them), or the node refused it.
- "dropped": its packets went nowhere: no member to send them to, a member whose node's VM is
  gone or has no backend, or a forwarding rule deleted under it; the client only times out.
- "open": not ended yet.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Literal

Outcome = Literal["open", "completed", "reset", "dropped"]
OUTCOMES: frozenset[str] = frozenset({"open", "completed", "reset", "dropped"})


@dataclass(frozen=True)
class FlowRecord:
    rule: str  # the forwarding rule's name
    client_port: int
    instance: str | None  # the instance URL chosen; None when there was none to choose
    node: str | None  # the node standing for it; None when no node does
    started: float  # clock time (time.time by default, as the service controller's cuts)
    ended: float | None = None
    outcome: Outcome = "open"


class FlowLog:
    """Thread-safe: flows are opened and ended on the data path's loop, read from anywhere.
    Keeps every open flow and the last `keep` ended ones."""

    def __init__(self, keep: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._open: dict[int, FlowRecord] = {}
        self._ended: deque[FlowRecord] = deque(maxlen=keep)

    def open(self, record: FlowRecord) -> int:
        with self._lock:
            flow_id = next(self._ids)
            self._open[flow_id] = record
            return flow_id

    def end(self, flow_id: int, outcome: Outcome, at: float) -> FlowRecord | None:
        """End an open flow; None if it had ended already."""
        if outcome == "open":
            raise ValueError("a flow ends completed, reset or dropped")
        with self._lock:
            record = self._open.pop(flow_id, None)
            if record is None:
                return None
            ended = replace(record, ended=at, outcome=outcome)
            self._ended.append(ended)
            return ended

    def records(self) -> list[FlowRecord]:
        """Every flow, ended ones first (in the order they ended), then the open ones (in the
        order they started)."""
        with self._lock:
            return [*self._ended, *self._open.values()]
