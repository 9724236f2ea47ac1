"""What lbhc lists and watches, named once for the client, the cache and the controller."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from lbhc.kube.decode import Undecodable


class Resource(StrEnum):
    """What lbhc lists and watches; the value names it in logs, gaps and metrics."""

    NODES = "nodes"
    SERVICES = "services"
    KUBE_PROXY_PODS = "kube-proxy pods"
    # Only for the readiness-probe policy: never a gap for the planner (see ClusterCache).
    KUBE_PROXY_DAEMONSETS = "kube-proxy daemonsets"

    @property
    def rbac_name(self) -> str:
        """The resource as an RBAC rule names it."""
        return self.value.removeprefix("kube-proxy ")


def undecodable_gap(resource: Resource, undecodable: Sequence[Undecodable]) -> str:
    """One line for a gap or a log: how many, and the first by name with its problem."""
    first = undecodable[0]
    more = f" and {len(undecodable) - 1} more" if len(undecodable) > 1 else ""
    return (
        f"{resource}: {len(undecodable)} object(s) could not be decoded "
        f"({first.key}: {first.problem}{more})"
    )
