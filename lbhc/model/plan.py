"""The plan: what lbhc would change, and why. Produced by the planner, run by the executor."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lbhc.model.cloud import Firewall, HttpHealthCheck


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    ATTACH = "attach"
    DETACH = "detach"


class Kind(StrEnum):
    HTTP_HEALTH_CHECK = "HttpHealthCheck"
    FIREWALL = "Firewall"
    TARGET_POOL = "TargetPool"


# Actions that remove something: withheld whenever the view of the world is incomplete.
DESTRUCTIVE_ACTIONS = frozenset({Action.DELETE, Action.DETACH})


@dataclass(frozen=True)
class FieldChange:
    before: Any
    after: Any


@dataclass(frozen=True)
class Change:
    """One step. `desired` carries the full resource for create/update; `health_check_url`
    the check an attach adds or a detach removes; `replaces` the check a takeover attach
    removes first; `restores` the check a give-back puts on the pool (after a detach removes
    lbhc's, or alone on a pool left with none), from the takeover ledger."""

    action: Action
    kind: Kind
    name: str
    reason: str
    diff: dict[str, FieldChange] = field(default_factory=dict)
    desired: HttpHealthCheck | Firewall | None = None
    health_check_url: str = ""
    replaces: str = ""
    restores: str = ""
    service: str = ""  # ns/name of the Service owning a target pool (for Events)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action.value,
            "kind": self.kind.value,
            "name": self.name,
            "reason": self.reason,
            "diff": {k: {"from": v.before, "to": v.after} for k, v in self.diff.items()},
        }


@dataclass(frozen=True)
class NodeVersion:
    node: str
    version: str
    source: str


@dataclass(frozen=True)
class Fallback:
    """Why lbhc's check is withdrawn: nodes whose kube-proxy cannot serve it. Only lbhc's own
    check comes off; `others_stay` pools keep the cloud provider's (or an equivalent) check."""

    reason: str
    nodes: tuple[NodeVersion, ...]
    others_stay: int = 0

    @property
    def effect(self) -> str:
        """What fallback does, in one clause, for Events and status."""
        stays = (
            f"; the cloud provider's (or an equivalent) check stays on {self.others_stay} pool(s)"
            if self.others_stay
            else ""
        )
        return f"lbhc's check is withdrawn from the pools it covered{stays}"

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "effect": self.effect,
            "othersStay": self.others_stay,
            "nodes": [
                {"name": n.node, "version": n.version, "source": n.source} for n in self.nodes
            ],
        }


@dataclass(frozen=True)
class Plan:
    health_check_name: str
    changes: tuple[Change, ...] = ()
    fallback: Fallback | None = None
    warnings: tuple[str, ...] = ()
    # Detaches and deletes the planner wanted but held back because a view was incomplete.
    withheld: tuple[Change, ...] = ()
    # LoadBalancer Services with an ingress IP, none of whose load balancers is in the
    # configured project and region (0 unless the scope looks wrong).
    out_of_scope: int = 0
    # lbhc's check or firewall name is taken by a resource it does not own: pools that need
    # lbhc's check cannot get it.
    shared_conflict: bool = False
    # The gcloud command that makes lbhc's firewall, when lbhc needs it and may not (or
    # cannot yet tell whether it may) write it itself; "" otherwise.
    firewall_command: str = ""

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    def summary(self) -> dict[str, int]:
        counts = {action.value: 0 for action in Action}
        for change in self.changes:
            counts[change.action.value] += 1
        counts["total"] = len(self.changes)
        counts["withheld"] = len(self.withheld)
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "healthCheck": self.health_check_name,
            "changes": [c.to_json() for c in self.changes],
            "summary": self.summary(),
            "fallback": self.fallback.to_json() if self.fallback else None,
            "warnings": list(self.warnings),
            "withheld": [c.to_json() for c in self.withheld],
            "outOfScope": self.out_of_scope,
            "firewallCommand": self.firewall_command,
        }
