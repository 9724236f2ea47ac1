"""Takeover bookkeeping: which ledger entries are still needed, and how many new ones fit."""

from __future__ import annotations

from collections.abc import Mapping

from lbhc.model.cloud import CloudSnapshot
from lbhc.model.plan import Finding, FindingKind
from lbhc.planner.claims import carries
from lbhc.planner.ledger import MAX_DESCRIPTION, TakeoverLedger
from lbhc.planner.shared import ownership_description


def ledger_still_needed(
    ledger: TakeoverLedger, cloud: CloudSnapshot, check_url: str
) -> TakeoverLedger:
    """Entries stay while their pool carries lbhc's check or none (a give-back may still be
    due); once it carries anything else, or is gone, the record has served. A recorded check
    that does not exist right now keeps its entry: the cloud provider deletes its node check
    once no pool uses it (which a full takeover allows) and makes it again under the same
    name with its next load balancer. Only a complete listing can prove a pool gone."""
    if not ledger or not cloud.complete:
        return ledger
    pending = [
        pool.name
        for pool in cloud.target_pools
        if not pool.health_checks or carries(pool, check_url)
    ]
    return ledger.restricted_to(pending)


def fit_ledger(
    cluster_id: str,
    ledger: TakeoverLedger,
    takeovers: Mapping[str, str],
    findings: list[Finding],
) -> tuple[TakeoverLedger, set[str]]:
    """The ledger with this pass's takeovers recorded, as many as fit in the description;
    (ledger, pools whose takeover must wait). A pool is never taken over unrecorded."""
    accepted = dict(takeovers)
    while True:
        recorded = ledger.with_records(accepted)
        if len(ownership_description(cluster_id, recorded)) <= MAX_DESCRIPTION or not accepted:
            break
        del accepted[max(accepted)]
    refused = set(takeovers) - set(accepted)
    if refused:
        findings.append(
            Finding(
                FindingKind.LEDGER_FULL,
                "",
                f"takeover: the ledger in lbhc's check description is full ({len(recorded)} "
                f"pools recorded); {len(refused)} pool(s) keep their current check",
            )
        )
    return recorded, refused
