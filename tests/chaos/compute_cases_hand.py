"""Compute fault cases made by hand: the shared check and firewall changed or deleted
behind lbhc's back, and resources of ours by name that someone else owns."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from lbhc.model.cloud import http_health_check_url
from tests.chaos.compute_cases import (
    START,
    Arm,
    Case,
    Run,
    Scale,
    clean_changes,
    converge_first,
    no_removal,
    now,
)
from tests.chaos.compute_checks import SLACK_SEC, URL, assert_conflict_stable
from tests.chaos.compute_world import API, FOREIGN_CHECK, FaultWorld
from tests.controller.harness import NAME, PROJECT
from tests.waiting import wait_for

CHECK = f"/global/httpHealthChecks/{NAME}"
FIREWALL = f"/global/firewalls/{NAME}"


# ---- the shared pair changed or deleted by hand ----------------------------------------
def hand_patch(path: str, body: Callable[[FaultWorld], dict[str, object]]) -> Arm:
    """Someone edits our check or firewall: the next resync restores it (one update) and
    says so in a Repaired Event; attachments are never touched for it."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        converge_first(fw)
        fw.call("PATCH", path, body(fw))

        def repaired(fw: FaultWorld) -> None:
            wait_for(lambda: fw.events("Repaired"), timeout=SLACK_SEC, what="a Repaired Event")
            no_removal(fw)

        return Run(
            changes=clean_changes(fw) + 1,
            resync=True,
            fault_end=now(),
            world_faults=1,
            check=repaired,
        )

    return arm


def _delete_check_by_hand(fw: FaultWorld) -> None:
    """As a person would: detach our check everywhere, delete it, and if lbhc reattached
    it in between (the delete is refused as in use), do it again."""
    while True:
        for pool in fw.cluster_pools:
            fw.pool_op(pool, "removeHealthCheck", URL)
        status, _, _ = fw.compute.handle("DELETE", API + CHECK)
        if status == 200:
            return


def hand_delete_check(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Someone detaches our check everywhere and deletes it: recreated, reattached."""
    converge_first(fw)
    _delete_check_by_hand(fw)
    return Run(
        changes=2 * clean_changes(fw),
        resync=True,
        creations={"httpHealthChecks": 2, "firewalls": 1},
        fault_end=now(),
        world_faults=1,
        check=no_removal,
    )


def check_deleted_while_attaching(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Someone deletes our check just as lbhc attaches it to a new Service's pool: the
    attach meets a 404 about the check (not the pool), which fails that pass; the pass is
    retried after its backoff, recreates the check and every pool carries it again."""
    converge_first(fw)
    fw.compute.faults.on_request(
        lambda: _delete_check_by_hand(fw), method="POST", path_contains="/addHealthCheck"
    )
    fw.add_services(1, prefix="late")
    wait_for(lambda: fw.compute.faults.injected().get("action"), timeout=SLACK_SEC, what="it")
    return Run(
        changes=2 * clean_changes(fw) + 1,
        failed_passes=1,
        creations={"httpHealthChecks": 2, "firewalls": 1},
        world_faults=1,
        check=no_removal,
    )


def hand_delete_firewall(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Someone deletes our firewall: recreated; the check stays attached meanwhile."""
    converge_first(fw)
    fw.call("DELETE", FIREWALL)
    return Run(
        changes=clean_changes(fw) + 1,
        resync=True,
        creations={"httpHealthChecks": 1, "firewalls": 2},
        fault_end=now(),
        world_faults=1,
        check=no_removal,
    )


def hand_disowned_check(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Someone rewrites our check's description, mark and all: it is no longer provably
    ours, so lbhc reports a conflict and changes nothing (no update, no detach) until the
    mark is back."""
    converge_first(fw)
    original = fw.compute.http_health_checks(PROJECT)[NAME]["description"]
    fw.call("PATCH", CHECK, {"description": "edited by hand"})
    wait_for(lambda: fw.events("Conflict"), timeout=SLACK_SEC, what="a Conflict Event")
    assert_conflict_stable(fw, scale.stable_passes, CHECK)
    assert all(fw.attached(p) for p in fw.cluster_pools), "a conflict never detaches"
    fw.call("PATCH", CHECK, {"description": original})
    return Run(changes=clean_changes(fw), resync=True, fault_end=now(), world_faults=1)


# ---- ours by name, not by owner --------------------------------------------------------
def foreign_check_named_ours(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """A check of our name made by someone else: a reported, stable conflict (nothing
    attached, the check never modified) until its owner deletes it."""
    fw.compute.add_http_health_check(
        PROJECT, NAME, description="another tool", port=10256, requestPath="/healthz"
    )
    fw.start(START)
    wait_for(lambda: fw.events("Conflict"), timeout=SLACK_SEC, what="a Conflict Event")
    assert_conflict_stable(fw, scale.stable_passes, CHECK)
    assert not any(fw.pool_checks(p) for p in fw.cluster_pools), "attached a foreign check"
    assert fw.metric("lbhc_target_pools", state="conflicting") >= 1
    fw.call("DELETE", CHECK)
    return Run(changes=clean_changes(fw), resync=True, fault_end=now(), world_faults=1)


def foreign_check_on_pool(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """A Cluster pool already carries another team's check (health_check_mode: takeover
    off): that pool is left as it is and reported; every other one converges."""
    pool = rng.choice(fw.cluster_pools)
    foreign = http_health_check_url(PROJECT, FOREIGN_CHECK)
    fw.pool_op(pool, "addHealthCheck", foreign)
    fw.start(START)

    def reported(fw: FaultWorld) -> None:
        assert fw.pool_checks(pool) == [foreign]
        wait_for(
            lambda: any(pool in w and "does not probe" in w for w in fw.warnings()),
            timeout=SLACK_SEC,
            what="the plan's warning",
        )
        # The metric is set at the end of the pass whose plan is already visible.
        wait_for(
            lambda: fw.metric("lbhc_target_pools", state="conflicting") >= 1,
            timeout=SLACK_SEC,
            what="the conflicting-pools metric",
        )
        no_removal(fw)

    return Run(
        changes=clean_changes(fw) - 1,
        conflict_pools=(pool,),
        world_faults=1,
        check=reported,
    )


CASES = [
    Case(
        "check-timings-lowered",
        "shared check changed by hand",
        hand_patch(CHECK, lambda fw: {"checkIntervalSec": 2, "unhealthyThreshold": 1}),
    ),
    Case(
        "check-port-path-changed",
        "shared check changed by hand",
        hand_patch(CHECK, lambda fw: {"port": 80, "requestPath": "/"}),
        short=False,
    ),
    Case(
        "check-description-edited",
        "shared check changed by hand",
        hand_patch(CHECK, lambda fw: {"description": _edited_mark(fw)}),
        short=False,
    ),
    Case("check-description-disowned", "shared check changed by hand", hand_disowned_check),
    Case("check-deleted", "shared check deleted by hand", hand_delete_check),
    Case(
        "check-deleted-while-attaching",
        "shared check deleted by hand",
        check_deleted_while_attaching,
        short=False,
    ),
    Case(
        "firewall-widened",
        "firewall changed by hand",
        hand_patch(
            FIREWALL,
            lambda fw: {
                "sourceRanges": ["0.0.0.0/0"],
                "allowed": [{"IPProtocol": "tcp", "ports": ["10256", "22"]}],
            },
        ),
    ),
    Case(
        "firewall-pinned-disabled",
        "firewall changed by hand",
        hand_patch(
            FIREWALL, lambda fw: {"destinationRanges": ["203.0.113.10/32"], "disabled": True}
        ),
        short=False,
    ),
    Case("firewall-deleted", "firewall deleted by hand", hand_delete_firewall),
    Case("foreign-check-named-ours", "foreign resource with our name", foreign_check_named_ours),
    Case("foreign-check-on-pool", "foreign check on a pool", foreign_check_on_pool),
]


def _edited_mark(fw: FaultWorld) -> str:
    """Our ownership mark kept, the rest of the description edited: still ours, corrected."""
    current = json.loads(fw.compute.http_health_checks(PROJECT)[NAME]["description"])
    return json.dumps({**current, "purpose": "edited by hand", "note": "ticket 123"})
