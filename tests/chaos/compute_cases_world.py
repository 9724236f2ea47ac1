"""Compute fault cases where the world moves under lbhc: inserts that landed though lbhc
never heard (alreadyExists), another owner's pool still using our check when lbhc deletes it
(resourceInUseByAnotherResource), lists failing while a removal is due, a foreign check
replaced when ours then fails, a pool deleted while lbhc attaches."""

from __future__ import annotations

import random

from lbhc.model.cloud import http_health_check_url
from lbhc.sandbox.compute_fake import JournalEntry
from tests.chaos.compute_cases import (
    ATTEMPTS,
    START,
    Arm,
    Case,
    Run,
    Scale,
    clean_changes,
    converge_first,
    desired_body,
    no_removal,
    now,
    removals,
)
from tests.chaos.compute_checks import (
    SLACK_SEC,
    URL,
    answers,
    assert_conflict_stable,
    wait_passes,
)
from tests.chaos.compute_world import (
    API,
    FOREIGN_CHECK,
    OTHER_CLUSTER,
    OTHER_REGION,
    FaultWorld,
)
from tests.controller.harness import FAST_RETRIES, NAME, PROJECT, REGION
from tests.waiting import wait_for

CHECK = f"/global/httpHealthChecks/{NAME}"
START_BACKOFF_MAX = float(FAST_RETRIES["gce_backoff_max_sec"])
FIREWALL = f"/global/firewalls/{NAME}"


# ---- inserts that landed though lbhc never heard ---------------------------------------
def lost_insert_responses(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """Both inserts land, both answers are lost (503 after the mutation): the retry carries
    the same requestId and gets the original operation, not alreadyExists, not a twin."""
    for path in ("/global/firewalls", "/global/httpHealthChecks"):
        fw.compute.faults.fail_requests(
            times=1, status=503, method="POST", path_contains=path, after_apply=True
        )
    fw.start(START)

    def deduped(fw: FaultWorld) -> None:
        for path in ("/global/firewalls", "/global/httpHealthChecks"):
            sent = [m for m in fw.lbhc_mutations() if m.path == API + path]
            assert len(sent) == 2 and len({m.query["requestId"] for m in sent}) == 1
            assert answers(fw, 409, path) == 0
        no_removal(fw)

    return Run(changes=clean_changes(fw) + 2, check=deduped)


def lost_on_every_attempt(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """The firewall insert lands but stays RUNNING, and every attempt's answer is lost: the
    pass fails; the next reads no firewall (its insert not DONE), inserts again under a new
    requestId and meets alreadyExists. lbhc must neither take that for success before it
    can read the firewall, nor report it as someone else's, nor make a second; once the
    stuck insert finishes, the next pass converges."""
    fw.compute.faults.stall_operations(times=1, operation_type="insert")
    fw.compute.faults.fail_requests(
        times=ATTEMPTS,
        status=503,
        method="POST",
        path_contains="/global/firewalls",
        after_apply=True,
    )
    fw.start(START)
    wait_for(
        lambda: answers(fw, 409, "/global/firewalls"),
        timeout=SLACK_SEC + 2 * ATTEMPTS * START_BACKOFF_MAX,
        what="alreadyExists on the second insert",
    )
    fw.compute.end_stalls()

    def figures(fw: FaultWorld) -> None:
        run.figures["already_exists_answers"] = answers(fw, 409, "/global/firewalls")
        assert not fw.events("Conflict"), "our own pending insert reported as a conflict"
        no_removal(fw)

    # Pass 1 (answers lost), then passes meeting 409 until the release: two before the
    # wait above returns, one more may be under way.
    run = Run(
        changes=clean_changes(fw) + 3,
        failed_passes=3,
        fault_end=now(),
        world_faults=1,
        check=figures,
    )
    return run


def landed_between_read_and_insert(owned: bool) -> Arm:
    """Just before lbhc's firewall insert is served, a firewall of our name appears: ours (an
    earlier attempt under another requestId landing late) is adopted as done; someone
    else's is a reported conflict, never modified, until its owner removes it."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        def land() -> None:
            body = desired_body(fw, "firewalls")
            if not owned:
                body["description"] = "made by another tool"
            fw.call("POST", "/global/firewalls", body)

        fw.compute.faults.on_request(land, method="POST", path_contains="/global/firewalls")
        fw.start(START)
        if owned:
            return Run(
                changes=clean_changes(fw),
                world_faults=1,
                check=lambda fw: _adopted(fw),
            )
        foreign = wait_for(
            lambda: fw.compute.firewalls(PROJECT).get(NAME), what="the foreign firewall"
        )
        wait_for(lambda: fw.events("Conflict"), timeout=SLACK_SEC, what="a Conflict Event")
        assert_conflict_stable(fw, scale.stable_passes, FIREWALL)
        assert fw.compute.firewalls(PROJECT)[NAME] == foreign
        assert fw.metric("lbhc_target_pools", state="conflicting") >= 1
        fw.call("DELETE", FIREWALL)  # its owner resolves the conflict
        return Run(
            changes=clean_changes(fw) + 1,
            failed_passes=1,
            resync=True,
            creations={"firewalls": 2, "httpHealthChecks": 1},
            fault_end=now(),
            world_faults=1,
        )

    return arm


def _adopted(fw: FaultWorld) -> None:
    assert answers(fw, 409, "/global/firewalls") == 1
    assert fw.failed_passes() == 0
    no_removal(fw)


# ---- our check in use by another owner's pool ------------------------------------------
def in_use_elsewhere(mode: str) -> Arm:
    """Another owner's pool in another region (outside lbhc's view) uses our check when
    every Service leaves: lbhc detaches its own pools, its delete is refused
    (resourceInUseByAnotherResource, as an HTTP error or an operation error), and it keeps
    both check and firewall, trying once per pass, touching nothing of the other owner's,
    until that owner lets go; then it finishes the clean-up."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        fw.compute.in_use_delete_mode = mode
        converge_first(fw)
        other = "a0therregi0np001"
        fw.compute.add_target_pool(
            PROJECT, OTHER_REGION, other, description=OTHER_CLUSTER, health_checks=[NAME]
        )
        attached = len(fw.cluster_pools)
        for pool in list(fw.cluster_pools):
            fw.flip(pool, "Local")

        def deletes() -> list[object]:
            return [m for m in fw.lbhc_mutations() if m.method == "DELETE"]

        wait_for(lambda: len(deletes()) >= 2, timeout=SLACK_SEC, what="the refused delete")
        before, passes = len(fw.lbhc_mutations()), fw.passes
        wait_passes(fw, scale.stable_passes, bound=SLACK_SEC)
        during = fw.lbhc_mutations()[before:]
        assert all(m.method == "DELETE" and m.path == API + CHECK for m in during), during
        assert len(during) <= fw.passes - passes + 1, "retried faster than once per pass"
        assert NAME in fw.compute.http_health_checks(PROJECT)
        assert NAME in fw.compute.firewalls(PROJECT), "the firewall must outlive the check"
        assert fw.compute.target_pools(PROJECT, OTHER_REGION)[other]["healthChecks"] == [URL]
        assert fw.failed_passes() == 0, "a refused delete is a wait, not a failure"
        refused = len(deletes())
        fw.pool_op(other, "removeHealthCheck", URL, region=OTHER_REGION)  # the owner lets go
        return Run(
            changes=2 + attached + attached + refused + scale.stable_passes + 4,
            resync=True,
            fault_end=now(),
            world_faults=1,
            figures={"in_use_refusals": refused},
        )

    return arm


def in_use_in_view(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """The same, but the other owner's pool is in lbhc's region: the planner sees it, so
    garbage collection waits with a warning and no delete is even tried."""
    converge_first(fw)
    other = "a0therc1usterp002"
    fw.compute.add_target_pool(
        PROJECT, REGION, other, description=OTHER_CLUSTER, health_checks=[NAME]
    )
    attached = len(fw.cluster_pools)
    for pool in list(fw.cluster_pools):
        fw.flip(pool, "Local")
    wait_for(
        lambda: any("garbage collection waits" in w for w in fw.warnings()),
        timeout=SLACK_SEC,
        what="the GC warning",
    )
    wait_passes(fw, scale.stable_passes, bound=SLACK_SEC)
    assert not [m for m in fw.lbhc_mutations() if m.method == "DELETE"]
    assert fw.compute.target_pools(PROJECT, REGION)[other]["healthChecks"] == [URL]
    fw.pool_op(other, "removeHealthCheck", URL)
    return Run(changes=2 + attached + attached + 2, resync=True, fault_end=now(), world_faults=1)


# ---- a partial view while a removal is due ---------------------------------------------
def lists_fail_while_detach_due(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """A Service switches to Local while listing forwarding rules keeps failing (two
    passes' worth of attempts): the view is partial, so the detach is withheld, never
    guessed, and happens only after a list succeeds."""
    converge_first(fw)
    fw.compute.faults.fail_requests(
        times=2 * ATTEMPTS, status=503, method="GET", path_contains="/forwardingRules"
    )
    flipped_at = now()
    fw.flip(fw.cluster_pools[0], "Local")

    def withheld(fw: FaultWorld) -> None:
        lists_failed_until = fw.compute.faults.last_ended()
        assert lists_failed_until > flipped_at, "the lists recovered before the flip"
        assert min(m.time for m in removals(fw)) > lists_failed_until, "detached on a gap"

    return Run(changes=clean_changes(fw) + 1, check=withheld)


# ---- replacing a foreign check, when ours then fails to attach -------------------------
def takeover_attach_fails(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
    """In takeover mode, the foreign check comes off for ours to go on.
    When ours fails (every attempt answered 503), the foreign one is put back at once,
    so the pool is not left unchecked by the failure; the next pass replaces it again."""
    pool = rng.choice(fw.cluster_pools)
    foreign = http_health_check_url(PROJECT, FOREIGN_CHECK)
    fw.pool_op(pool, "addHealthCheck", foreign)
    fw.compute.faults.fail_requests(
        times=ATTEMPTS, status=503, method="POST", path_contains=f"/{pool}/addHealthCheck"
    )
    fw.start({**START, "health_check_mode": "takeover"})

    def restored_then_replaced(fw: FaultWorld) -> None:
        path = f"{API}/regions/{REGION}/targetPools/{pool}/"
        steps = [
            (m.path.rsplit("/", 1)[-1], _canonical_ref(m), m.status)
            for m in fw.lbhc_mutations()
            if m.path.startswith(path)
        ]
        failed = [("addHealthCheck", URL, 503)] * ATTEMPTS
        assert steps == [
            ("removeHealthCheck", foreign, 200),
            *failed,
            ("addHealthCheck", foreign, 200),
            ("removeHealthCheck", foreign, 200),
            ("addHealthCheck", URL, 200),
        ], steps

    return Run(
        changes=clean_changes(fw) + 4,
        failed_passes=1,
        world_faults=1,
        replaces=foreign,
        check=restored_then_replaced,
    )


def _canonical_ref(m: JournalEntry) -> str:
    ref = str((m.body or {}).get("healthChecks", [{}])[0].get("healthCheck", ""))
    return http_health_check_url(PROJECT, ref.rsplit("/", 1)[-1])


# ---- a pool deleted while lbhc attaches ------------------------------------------------
def pool_deleted_on(trigger: str) -> Arm:
    """A new Service's pool is deleted (the cloud provider recreating the load balancer)
    just as lbhc attaches: before the attach is served (404), or while its operation runs
    (the operation ends in a 404). Either way the attach is skipped, not failed, nothing is
    detached, and when the pool comes back the next resync attaches it."""

    def arm(fw: FaultWorld, rng: random.Random, scale: Scale) -> Run:
        converge_first(fw)
        gone: list[str] = []

        def delete_new_pool() -> None:
            pools = fw.compute.target_pools(PROJECT, REGION)
            bare = [p for p in fw.our_pools() - set(fw.local_pools) if p in pools]
            for pool in [p for p in bare if not pools[p].get("healthChecks")]:
                fw.delete_load_balancer(pool)
                gone.append(pool)

        if trigger == "request":
            path = "/addHealthCheck"
        else:  # lbhc waits on the attach, which stays RUNNING a while
            fw.compute.faults.stall_operations(
                times=1, seconds=scale.stall, operation_type="addHealthCheck"
            )
            path = f"/regions/{REGION}/operations/"
        fw.compute.faults.on_request(delete_new_pool, method="POST", path_contains=path)
        fw.add_services(1, prefix="late")
        wait_for(lambda: gone, timeout=SLACK_SEC, what="the pool deleted mid-attach")
        wait_for(
            lambda: any(m.path.endswith(f"{gone[0]}/addHealthCheck") for m in fw.lbhc_mutations()),
            timeout=SLACK_SEC,
            what="lbhc's attach",
        )
        wait_passes(fw, 2, bound=SLACK_SEC + scale.stall)
        assert fw.failed_passes() == 0, "a vanished pool is skipped, not a failure"
        attach = f"/regions/{REGION}/targetPools/{gone[0]}/addHealthCheck"
        if trigger == "request":
            assert answers(fw, 404, attach) >= 1, "lbhc's attach met the deleted pool"
        else:
            ops = [
                o for o in fw.compute.operations(PROJECT) if o["operationType"] == "addHealthCheck"
            ]
            assert ops[-1].get("httpErrorStatusCode") == 404, ops[-1]
        fw.reprovision(gone[0])
        return Run(
            changes=clean_changes(fw) + 1,
            resync=True,
            waits=scale.stall,
            fault_end=now(),
            world_faults=1,
            check=no_removal,
        )

    return arm


CASES = [
    Case("insert-response-lost", "alreadyExists after a timed-out insert", lost_insert_responses),
    Case(
        "insert-response-lost-every-attempt",
        "alreadyExists after a timed-out insert",
        lost_on_every_attempt,
        short=False,
    ),
    Case(
        "insert-landed-late-ours",
        "alreadyExists after a timed-out insert",
        landed_between_read_and_insert(owned=True),
    ),
    Case(
        "insert-landed-late-foreign",
        "foreign resource with our name",
        landed_between_read_and_insert(owned=False),
        short=False,
    ),
    Case("check-in-use-http", "resourceInUseByAnotherResource", in_use_elsewhere("http")),
    Case(
        "check-in-use-operation",
        "resourceInUseByAnotherResource",
        in_use_elsewhere("operation"),
    ),
    Case("check-in-use-in-view", "resourceInUseByAnotherResource", in_use_in_view, short=False),
    Case(
        "lists-fail-while-detach-due",
        "partial view while a removal is due",
        lists_fail_while_detach_due,
        short=False,
    ),
    Case("pool-deleted-before-attach", "pool deleted while attaching", pool_deleted_on("request")),
    Case(
        "pool-deleted-during-attach",
        "pool deleted while attaching",
        pool_deleted_on("operation"),
        short=False,
    ),
    Case(
        "takeover-attach-fails",
        "foreign check on a pool",
        takeover_attach_fails,
        short=False,
    ),
]
