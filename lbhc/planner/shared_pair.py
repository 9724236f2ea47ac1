"""The decisions about lbhc's shared check and firewall, each returning what it decided:
garbage collection when no pool needs them, otherwise the firewall's and the check's
create or repair. Firewall first, so the check never probes through a closed port."""

from __future__ import annotations

from dataclasses import dataclass

from lbhc.model.cloud import (
    CloudSnapshot,
    Firewall,
    HttpHealthCheck,
    firewall_to_json,
    health_check_to_json,
)
from lbhc.model.plan import Action, Change, Delete, Ensure, FieldChange, Finding, FindingKind, Kind
from lbhc.planner.config import PlannerConfig
from lbhc.planner.ledger import TakeoverLedger
from lbhc.planner.shared import (
    desired_firewall,
    desired_health_check,
    firewall_command,
    reconcile_firewall,
    reconcile_health_check,
    same_network,
)


@dataclass(frozen=True)
class SharedPair:
    """What there is and what lbhc wants, for the check and firewall named `name`."""

    name: str
    cloud: CloudSnapshot
    config: PlannerConfig
    check_owned: bool
    firewall_owned: bool
    want_check: HttpHealthCheck
    want_firewall: Firewall

    @classmethod
    def of(
        cls,
        cluster_id: str,
        name: str,
        cloud: CloudSnapshot,
        config: PlannerConfig,
        ledger: TakeoverLedger,
        *,
        check_owned: bool,
        firewall_owned: bool,
        firewall_priority: int = 1000,
    ) -> SharedPair:
        return cls(
            name,
            cloud,
            config,
            check_owned,
            firewall_owned,
            desired_health_check(name, cluster_id, config, ledger),
            desired_firewall(name, cluster_id, config, firewall_priority),
        )


@dataclass(frozen=True)
class FirewallNeed:
    """Whether lbhc's firewall must stay when no pool needs lbhc's check: other owners'
    pools whose probes only it admits (or whether any do is unknown), and whether it may be
    created for them."""

    keep: bool = False
    may_create: bool = False
    reason: str = ""  # why, for the plan


@dataclass(frozen=True)
class Decision:
    changes: tuple[Change, ...] = ()
    findings: tuple[Finding, ...] = ()
    # Whether new attaches of lbhc's check may go ahead (its firewall and check are usable).
    attach_ok: bool = True


def plan_shared(
    pair: SharedPair,
    *,
    wanted: bool,
    may_add: bool,
    still_attached: tuple[str, ...],
    for_probes: FirewallNeed | None = None,
) -> Decision:
    probes = for_probes or FirewallNeed()
    if not wanted:
        garbage = collect_garbage(pair, still_attached, keep_firewall=probes.keep)
        if not probes.keep:
            return garbage
        # The check may go; the firewall stays (repaired), or is made, for other pools.
        firewall = decide_firewall(pair, may_add=probes.may_create, reason=probes.reason)
        return Decision(
            garbage.changes + firewall.changes,
            garbage.findings + firewall.findings,
            attach_ok=False,
        )
    firewall = decide_firewall(pair, may_add=may_add)
    check = decide_check(pair, may_add=may_add)
    return Decision(
        firewall.changes + check.changes,
        firewall.findings + check.findings,
        attach_ok=firewall.attach_ok and pair.check_owned,
    )


def collect_garbage(
    pair: SharedPair, still_attached: tuple[str, ...], *, keep_firewall: bool = False
) -> Decision:
    """No eligible pool needs lbhc's check. The check goes first; a firewall deleted while
    the check lives would make every node fail it (ingress-gce#1625). Pools lbhc may not
    detach (no Service of ours claims them; the cloud provider deletes those of deleted
    Services) hold it back. `keep_firewall`: other pools' probes need it; the caller
    decides its repair."""
    name, check, firewall = pair.name, pair.cloud.health_check, pair.cloud.firewall
    # A rule of ours someone widened is narrowed even while it awaits deletion: the delete
    # may be withheld (a partial view) or held back (below) for a long time.
    repairs: tuple[Change, ...] = ()
    if keep_firewall:
        firewall = None  # neither repaired nor deleted here
    if firewall is not None and pair.firewall_owned and same_network(firewall, pair.want_firewall):
        repairs = _firewall_repair(
            firewall, pair.want_firewall, "drifted from the desired rule; restored until deleted"
        )
    if still_attached and check is not None and pair.check_owned:
        shown = ", ".join(still_attached[:5]) + (" ..." if len(still_attached) > 5 else "")
        waiting = Finding(
            FindingKind.GC_WAITING,
            f"{Kind.HTTP_HEALTH_CHECK} {name}",
            f"no eligible Service remains, but HttpHealthCheck {name} is still attached to "
            f"target pool(s) {shown}; garbage collection waits until they are gone",
        )
        return Decision(repairs, (waiting,), attach_ok=False)
    deletes: list[Change] = []
    if check is not None and pair.check_owned:
        deletes.append(Delete(Kind.HTTP_HEALTH_CHECK, name, "no eligible Service remains"))
    if firewall is not None and pair.firewall_owned and not pair.cloud.firewall_unreadable:
        deletes.append(
            Delete(
                Kind.FIREWALL, name, "no eligible Service remains; deleted after the health check"
            )
        )
    return Decision((*repairs, *deletes), attach_ok=False)


def decide_firewall(pair: SharedPair, *, may_add: bool, reason: str = "") -> Decision:
    name, config, firewall, want = pair.name, pair.config, pair.cloud.firewall, pair.want_firewall
    if pair.cloud.firewall_unreadable:
        # It may not exist: a check attached now could fail closed.
        unreadable = Finding(
            FindingKind.FIREWALL_UNREADABLE,
            f"{Kind.FIREWALL} {name}",
            f"Firewall {name} in project {config.firewall_project} could not be read "
            f"({pair.cloud.firewall_unreadable}); nothing new is attached until lbhc can see "
            "it. If lbhc may not manage firewalls there (a Shared VPC host project), a network "
            f"admin runs: {firewall_command(want, config.firewall_project)}",
        )
        return Decision(findings=(unreadable,), attach_ok=False)
    if firewall is None:
        if not may_add:
            return Decision()
        why = reason or f"lets Google's health checkers reach kube-proxy on tcp:{config.port}"
        return Decision((_create(firewall_to_json(want), want, why),))
    if not pair.firewall_owned:
        return Decision(attach_ok=False)  # a conflict, said once for the pair
    if not same_network(firewall, want):
        wrong_network = Finding(
            FindingKind.CONFLICT,
            f"{Kind.FIREWALL} {name}",
            f"conflict: Firewall {name} is on network {firewall.network}, expected "
            f"{want.network}; fix --network or delete the rule by hand",
        )
        return Decision(findings=(wrong_network,), attach_ok=False)
    return Decision(_firewall_repair(firewall, want, "drifted from the desired rule"))


def decide_check(pair: SharedPair, *, may_add: bool) -> Decision:
    check, want, config = pair.cloud.health_check, pair.want_check, pair.config
    if check is None:
        if not may_add:
            return Decision()
        reason = (
            f"shared kube-proxy {config.request_path} check for externalTrafficPolicy=Cluster pools"
        )
        return Decision((_create(health_check_to_json(want), want, reason),))
    if not pair.check_owned:
        return Decision(attach_ok=False)
    merged = reconcile_health_check(check, want, config.raise_only_timings)
    if not merged.diff:
        return Decision()
    return Decision(
        (Ensure(Action.UPDATE, merged.resource, "drifted from the desired check", merged.diff),)
    )


def _firewall_repair(actual: Firewall, desired: Firewall, reason: str) -> tuple[Change, ...]:
    merged = reconcile_firewall(actual, desired)
    if not merged.diff:
        return ()
    return (Ensure(Action.UPDATE, merged.resource, reason, merged.diff),)


def _create(body: dict[str, object], desired: HttpHealthCheck | Firewall, reason: str) -> Ensure:
    diff = {key: FieldChange(None, value) for key, value in body.items() if key != "name"}
    return Ensure(Action.CREATE, desired, reason, diff)
