"""The request journal: every request the fake saw, including failed and injected ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JournalEntry:
    time: float  # the fake's clock when the request arrived
    method: str
    path: str  # as requested, e.g. "/compute/v1/projects/p/global/firewalls/fw"
    query: dict[str, str]
    body: dict[str, Any] | None
    status: int
    mutating: bool
    user_agent: str
    client_id: str  # header "x-lbhc-client-id", "" when absent
    field_mask: str = ""  # the partial response asked for (`fields` or X-Goog-FieldMask)
