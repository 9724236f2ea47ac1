"""`lbhc teardown`: everything lbhc made in a region, undone in the safe order, from GCE alone
(an uninstall may come after the cluster is gone): lbhc's check off every pool carrying it,
each check lbhc replaced put back (from the ledger in lbhc's check), then lbhc's check, then
its firewall."""

from __future__ import annotations

from lbhc.model.cloud import CloudSnapshot, resource_name
from lbhc.model.plan import Change, Delete, Finding, FindingKind, Kind, Plan
from lbhc.planner.claims import carries
from lbhc.planner.pools import detach_change, give_back_change
from lbhc.planner.shared import is_owned, read_ledger


def plan_teardown(cloud: CloudSnapshot, name: str, cluster_id: str, check_url: str) -> Plan:
    findings: list[Finding] = []
    check_owned = cloud.health_check is not None and is_owned(
        cloud.health_check.description, cluster_id
    )
    firewall_owned = cloud.firewall is not None and is_owned(cloud.firewall.description, cluster_id)
    for kind, resource, owned in (
        (Kind.HTTP_HEALTH_CHECK, cloud.health_check, check_owned),
        (Kind.FIREWALL, cloud.firewall, firewall_owned),
    ):
        if resource is not None and not owned:
            findings.append(
                Finding(
                    FindingKind.CONFLICT,
                    f"{kind} {name}",
                    f"{kind} {name} is not lbhc's (cluster {cluster_id}): left alone",
                )
            )
    ledger = read_ledger(cloud.health_check if check_owned else None)

    pool_changes: list[Change] = []
    for pool in sorted(cloud.target_pools, key=lambda p: p.name):
        give_back = ledger.recorded_url(pool.name)
        if give_back and cloud.check_gone(give_back):
            findings.append(
                Finding(
                    FindingKind.GIVE_BACK_MISSING,
                    f"TargetPool {pool.name}",
                    f"target pool {pool.name}: {resource_name(give_back)}, which lbhc replaced, "
                    "no longer exists; the pool is left with no health check",
                )
            )
            give_back = ""
        if check_owned and carries(pool, check_url):
            pool_changes.append(detach_change(pool, check_url, "teardown", "", give_back))
        elif give_back and not pool.health_checks:  # cut between remove and add
            pool_changes.append(give_back_change(pool, give_back, "teardown", ""))

    deletes: list[Change] = []
    if check_owned:
        deletes.append(Delete(Kind.HTTP_HEALTH_CHECK, name, "teardown"))
    if firewall_owned:
        deletes.append(Delete(Kind.FIREWALL, name, "teardown; deleted after the check"))
    if cloud.gaps:
        # Unlisted pools may hold lbhc's check or a give-back the ledger alone remembers:
        # deleting the check (and with it the ledger) must wait for a complete listing.
        findings.append(
            Finding(
                FindingKind.INCOMPLETE_VIEW,
                "",
                f"incomplete view ({'; '.join(cloud.gaps)}): the check and firewall are kept "
                "until a complete read; run teardown again",
            )
        )
        return Plan(name, tuple(pool_changes), None, tuple(findings), tuple(deletes))
    return Plan(name, tuple(pool_changes + deletes), None, tuple(findings))
