"""Judging a kill9 trial from the fake's state, operations and journal: what lbhc owns must
be exactly what the cluster needs, nothing foreign may have changed or been written to, no
shared resource may have been inserted twice, and the safe order must hold across processes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake, JournalEntry
from tests.chaos.kill9_scenario import Scenario
from tests.chaos.kill9_world import (
    CLUSTER_ID,
    DESIRED_CHECK,
    DESIRED_FIREWALL,
    Seeded,
    our_check_url,
)
from tests.controller.harness import NAME, PROJECT, REGION

_FOREIGN_POOL_ROLES = ("other_cluster", "other_lbhc", "orphan", "local_own")


def _ours(resource: dict[str, Any]) -> bool:
    try:
        mark = json.loads(resource.get("description") or "{}")
    except ValueError:
        return False
    return (
        isinstance(mark, dict)
        and mark.get("managedBy") == "lbhc"
        and mark.get("clusterId") == CLUSTER_ID
    )


def _mismatch(resource: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    listed = ("sourceRanges", "targetTags")
    have = {k: sorted(resource.get(k, [])) if k in listed else resource.get(k) for k in desired}
    bad = {k: v for k, v in have.items() if v != desired[k]}
    for extra in ("destinationRanges", "sourceTags"):
        if resource.get(extra):
            bad[extra] = resource[extra]
    return bad


def convergence_problems(compute: ComputeFake, scenario: Scenario, seeded: Seeded) -> list[str]:
    """Leaked and missing, as text; empty once the cloud is what the cluster needs."""
    return leaked(compute, scenario, seeded) + missing(compute, scenario, seeded)


def leaked(compute: ComputeFake, scenario: Scenario, seeded: Seeded) -> list[str]:
    """Resources of ours the desired state does not want."""
    out: list[str] = []
    for kind, items in (
        ("HttpHealthCheck", compute.http_health_checks(PROJECT)),
        ("Firewall", compute.firewalls(PROJECT)),
    ):
        for name, resource in items.items():
            if _ours(resource) and (name != NAME or not scenario.eligible):
                out.append(f"leaked {kind} {name}")
    url = our_check_url()
    allowed = {*_wanted_pools(scenario, seeded), *seeded.role("orphan")}
    for name, pool in compute.target_pools(PROJECT, REGION).items():
        if url in pool.get("healthChecks", []) and name not in allowed:
            out.append(f"leaked attachment on pool {name}")
    return out


def _wanted_pools(scenario: Scenario, seeded: Seeded) -> list[str]:
    wanted = seeded.role("attach") + seeded.role("attached")
    return wanted + (seeded.role("foreign_checked") if scenario.takeover else [])


def missing(compute: ComputeFake, scenario: Scenario, seeded: Seeded) -> list[str]:
    """What the desired state wants and the cloud lacks (a drift left is a missing repair)."""
    out: list[str] = []
    if scenario.eligible:
        for kind, items, desired in (
            ("HttpHealthCheck", compute.http_health_checks(PROJECT), DESIRED_CHECK),
            ("Firewall", compute.firewalls(PROJECT), DESIRED_FIREWALL),
        ):
            resource = items.get(NAME)
            if resource is None or not _ours(resource):
                out.append(f"missing {kind} {NAME}")
            elif bad := _mismatch(resource, desired):
                out.append(f"{kind} {NAME} not repaired: {bad}")
    pools = compute.target_pools(PROJECT, REGION)
    for name in _wanted_pools(scenario, seeded):
        if pools[name].get("healthChecks") != [our_check_url()]:
            out.append(f"pool {name} carries {pools[name].get('healthChecks')}, not ours")
    return out


@dataclass(frozen=True)
class Untouchable:
    """Everything lbhc must leave exactly as it was, split into foreign and our own kept
    pools (touching those would be churn on a working load balancer)."""

    foreign: dict[str, Any]
    kept: dict[str, Any]


def untouchable(compute: ComputeFake, scenario: Scenario, seeded: Seeded) -> Untouchable:
    pools = compute.target_pools(PROJECT, REGION)
    foreign: dict[str, Any] = {}
    for name, check in compute.http_health_checks(PROJECT).items():
        if name != NAME:
            foreign[f"check:{name}"] = check
    for name, firewall in compute.firewalls(PROJECT).items():
        if name != NAME:
            foreign[f"firewall:{name}"] = firewall
    foreign_pools = [p for role in _FOREIGN_POOL_ROLES for p in seeded.role(role)]
    if not scenario.takeover:
        foreign_pools += seeded.role("foreign_checked")
    foreign.update({f"pool:{name}": pools[name] for name in foreign_pools})
    for name, rule in compute.forwarding_rules(PROJECT, REGION).items():
        foreign[f"rule:{name}"] = rule
    kept = {f"pool:{name}": pools[name] for name in seeded.role("attached")}
    return Untouchable(foreign, kept)


_KEYS = {
    "httpHealthChecks": "check",
    "firewalls": "firewall",
    "targetPools": "pool",
    "forwardingRules": "rule",
}


def _targets(entry: JournalEntry) -> set[str]:
    """ "kind:name" of what a request writes: the resource in its path, or an insert's body."""
    parts = entry.path.split("/")
    for collection, kind in _KEYS.items():
        if collection in parts:
            at = parts.index(collection)
            if at + 1 < len(parts):
                return {f"{kind}:{parts[at + 1]}"}
            name = (entry.body or {}).get("name")
            return {f"{kind}:{name}"} if isinstance(name, str) else set()
    return set()


@dataclass
class Verdict:
    leaked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    foreign_touched: list[str] = field(default_factory=list)
    churn: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)  # from the SafetyMonitor
    wrong_writer: list[str] = field(default_factory=list)
    not_given_back: list[str] = field(default_factory=list)  # after `lbhc teardown`

    def problems(self) -> list[str]:
        return [p for value in vars(self).values() for p in value]


def touched(before: Untouchable, after: Untouchable, journal: list[JournalEntry]) -> Verdict:
    """State compared, and every mutation's target named against the untouchable set."""
    verdict = Verdict()
    for part, sink in (("foreign", verdict.foreign_touched), ("kept", verdict.churn)):
        was, now = getattr(before, part), getattr(after, part)
        sink += [f"{key} changed" for key in was if was[key] != now.get(key)]
        for entry in journal:
            if entry.mutating and _targets(entry) & was.keys():
                sink.append(f"{entry.method} {entry.path} by {entry.client_id!r}")
    return verdict


def duplicates(compute: ComputeFake) -> list[str]:
    """At most one successful insert per shared resource, over every process of the trial."""
    out: list[str] = []
    for collection in ("httpHealthChecks", "firewalls"):
        inserts = [
            op
            for op in compute.operations(PROJECT)
            if op["operationType"] == "insert"
            and op["targetLink"].endswith(f"/global/{collection}/{NAME}")
            and "error" not in op
        ]
        if len(inserts) > 1:
            out.append(f"{collection}/{NAME} inserted {len(inserts)} times")
    return out


def wrong_writers(
    journal: list[JournalEntry], killed_at: float, victim: str, successor: str
) -> list[str]:
    """Only the two processes write, and a successor with an identity of its own (a standby)
    writes nothing while the victim lives. The fake's clock is the test's monotonic clock."""
    out: list[str] = []
    for entry in (e for e in journal if e.mutating):
        what = f"{entry.method} {entry.path} by {entry.client_id!r}"
        if entry.client_id not in (victim, successor):
            out.append(what)
        elif entry.client_id != victim and entry.time < killed_at:
            out.append(f"{what} before the leader was killed")
    return out


def saw_in_flight(
    journal: list[JournalEntry],
    landed_at: float | None,
    latency: float,
    successor: str,
    since: float,
) -> bool:
    """Did the successor's first request (at `since` or later) come while the victim's k-th
    mutation, answered at `landed_at`, was still an operation in flight?"""
    first = min(
        (e.time for e in journal if e.time >= since and e.client_id == successor), default=None
    )
    return landed_at is not None and first is not None and first < landed_at + latency


def after_teardown(compute: ComputeFake, seeded: Seeded, upstream_url: str) -> list[str]:
    """`lbhc teardown` run on the converged world: every pool lbhc took over carries the
    check it carried before, no pool carries lbhc's, and lbhc's pair is gone."""
    out: list[str] = []
    pools = compute.target_pools(PROJECT, REGION)
    for name in seeded.role("foreign_checked"):
        if pools[name].get("healthChecks") != [upstream_url]:
            out.append(f"pool {name} carries {pools[name].get('healthChecks')} after teardown")
    out += [
        f"pool {n} still carries ours"
        for n, p in pools.items()
        if our_check_url() in p.get("healthChecks", [])
    ]
    if NAME in compute.http_health_checks(PROJECT) or NAME in compute.firewalls(PROJECT):
        out.append("lbhc's check or firewall left after teardown")
    return out
