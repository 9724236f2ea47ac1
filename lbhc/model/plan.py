"""The plan: what lbhc would change, and why. Produced by the planner, run by the executor."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal

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


class FindingKind(StrEnum):
    """What a finding is about, for code to act on (Events, metrics); the text is for people
    and may hold names users chose, so nothing is ever decided by reading it."""

    # A name lbhc needs is held by a resource it does not own, or its rule is on another
    # network: lbhc leaves it alone and cannot do its job until someone resolves it.
    CONFLICT = "conflict"
    # A target pool lbhc will not touch: no Service of this cluster provably owns it.
    POOL_NOT_CLAIMED = "pool-not-claimed"
    # A pool carries a check that is not kube-proxy's /healthz (coexist mode leaves it).
    OTHER_CHECK = "other-check"
    # A Service's opt-out annotation has a value that is neither true nor false.
    UNCLEAR_OPT_OUT = "unclear-opt-out"
    # fallback_policy never: nodes that cannot answer the check keep it anyway.
    SKEW_TOLERATED = "skew-tolerated"
    # Something could not be read in full: removals (and maybe additions) wait.
    INCOMPLETE_VIEW = "incomplete-view"
    # Services have load balancers, none of them in the configured project and region.
    OUT_OF_SCOPE = "out-of-scope"
    # The takeover ledger in lbhc's check description has no room for more pools.
    LEDGER_FULL = "ledger-full"
    # A check lbhc replaced is gone, so it cannot be given back.
    GIVE_BACK_MISSING = "give-back-missing"
    # No Service needs lbhc's check, but pools outside the view still carry it.
    GC_WAITING = "gc-waiting"
    # lbhc's firewall rule could not be read (a Shared VPC host project lbhc may not read).
    FIREWALL_UNREADABLE = "firewall-unreadable"
    # The firewall drops a pool's health-check probes: its instances all read UNHEALTHY and
    # the pool fails open (it drains nothing).
    PROBES_BLOCKED = "probes-blocked"
    # No kube-proxy Pods, and a known replacement (Cilium, GKE Dataplane V2) runs instead.
    KUBE_PROXY_REPLACED = "kube-proxy-replaced"


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    subject: str  # what it is about: "TargetPool a1b2...", "Service ns/name"; "" plan-wide
    text: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "subject": self.subject, "text": self.text}


# Actions that remove something: withheld whenever the view of the world is incomplete.
DESTRUCTIVE_ACTIONS = frozenset({Action.DELETE, Action.DETACH})


@dataclass(frozen=True)
class FieldChange:
    before: Any
    after: Any


def _change_json(change: Change) -> dict[str, Any]:
    return {
        "action": change.action.value,
        "kind": change.kind.value,
        "name": change.name,
        "reason": change.reason,
        "diff": {k: {"from": v.before, "to": v.after} for k, v in change.diff.items()},
    }


@dataclass(frozen=True)
class Ensure:
    """Create or update lbhc's check or firewall so that it is `desired`."""

    action: Literal[Action.CREATE, Action.UPDATE]
    desired: HttpHealthCheck | Firewall
    reason: str
    diff: dict[str, FieldChange] = field(default_factory=dict)
    service: ClassVar[str] = ""

    @property
    def kind(self) -> Kind:
        if isinstance(self.desired, HttpHealthCheck):
            return Kind.HTTP_HEALTH_CHECK
        return Kind.FIREWALL

    @property
    def name(self) -> str:
        return self.desired.name

    def to_json(self) -> dict[str, Any]:
        return _change_json(self)


@dataclass(frozen=True)
class Attach:
    """Put `health_check_url` on target pool `name`. `replaces`: the check a takeover removes
    first; `restores`: set on a give-back, where the URL is the recorded check put back on a
    pool left with none (from the takeover ledger)."""

    name: str
    health_check_url: str
    reason: str
    diff: dict[str, FieldChange] = field(default_factory=dict)
    replaces: str = ""
    restores: str = ""
    service: str = ""  # ns/name of the Service owning the pool (for Events)
    action: ClassVar[Action] = Action.ATTACH
    kind: ClassVar[Kind] = Kind.TARGET_POOL

    def to_json(self) -> dict[str, Any]:
        return _change_json(self)


@dataclass(frozen=True)
class Detach:
    """Take `health_check_url` off target pool `name`, then put `restores` (the check lbhc
    replaced, from the takeover ledger) back on, if set."""

    name: str
    health_check_url: str
    reason: str
    diff: dict[str, FieldChange] = field(default_factory=dict)
    restores: str = ""
    service: str = ""
    action: ClassVar[Action] = Action.DETACH
    kind: ClassVar[Kind] = Kind.TARGET_POOL

    def to_json(self) -> dict[str, Any]:
        return _change_json(self)


@dataclass(frozen=True)
class Delete:
    """Delete lbhc's check or firewall `name`."""

    kind: Literal[Kind.HTTP_HEALTH_CHECK, Kind.FIREWALL]
    name: str
    reason: str
    diff: dict[str, FieldChange] = field(default_factory=dict)
    service: ClassVar[str] = ""
    action: ClassVar[Action] = Action.DELETE

    def to_json(self) -> dict[str, Any]:
        return _change_json(self)


# One step of a plan: each variant has exactly the fields its action needs.
Change = Ensure | Attach | Detach | Delete
PoolChange = Attach | Detach


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
    findings: tuple[Finding, ...] = ()
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
    # Pools whose getHealth can show that the nodes answer the check port (their probes are
    # admitted): read by the caller when lbhc's firewall waits on that evidence.
    evidence_wanted: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """The findings as people read them."""
        return tuple(f.text for f in self.findings)

    def count(self, kind: FindingKind) -> int:
        return sum(1 for f in self.findings if f.kind is kind)

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
            "findings": [f.to_json() for f in self.findings],
            "withheld": [c.to_json() for c in self.withheld],
            "outOfScope": self.out_of_scope,
            "firewallCommand": self.firewall_command,
        }
