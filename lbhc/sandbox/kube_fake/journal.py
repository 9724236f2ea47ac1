"""The request journal: every request the fake saw, including failed and injected ones."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JournalEntry:
    method: str
    path: str  # without the query, e.g. "/api/v1/namespaces/kube-system/pods"
    query: dict[str, str]  # first value of each parameter, as Go's url.Values.Get reads it
    status: int
