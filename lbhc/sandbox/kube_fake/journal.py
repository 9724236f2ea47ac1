"""The request journal: every request the fake saw, including failed and injected ones."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class JournalEntry:
    method: str
    path: str  # without the query, e.g. "/api/v1/namespaces/kube-system/pods"
    query: dict[str, str]  # first value of each parameter, as Go's url.Values.Get reads it
    status: int
    # Who asked; left out of equality so entries compare by what was asked and answered.
    user_agent: str = field(default="", compare=False)
    client_id: str = field(default="", compare=False)  # the x-lbhc-client-id header
    time: float = field(default=0.0, compare=False)  # time.monotonic() when it arrived
    server: str = field(default="", compare=False)  # the KubeFakeServer's name that took it
    # The one object's resourceVersion in the answer ("" for lists, watches and errors):
    # with KubeFake.revisions() it says which version of an object a client was shown.
    resource_version: str = field(default="", compare=False)
