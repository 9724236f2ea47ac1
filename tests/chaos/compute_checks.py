"""What every Compute fault case must show: converged to the planner's desired state (or a
stable conflict), inside a bound derived from the settings, within the retry budget, with no
duplicate shared resource and no foreign resource touched."""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from google.cloud import compute_v1

from lbhc.gce import convert
from lbhc.kube.snapshot_file import parse_cluster_snapshot
from lbhc.model.cloud import CloudSnapshot, http_health_check_url
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Plan
from lbhc.planner.planner import plan, resolve_cluster_id
from lbhc.planner.shared import is_owned
from lbhc.sandbox.compute_fake import JournalEntry
from lbhc.settings import Settings
from tests.chaos.compute_world import API, FaultWorld
from tests.controller.harness import NAME, PROJECT, REGION
from tests.waiting import wait_for

URL = http_health_check_url(PROJECT, NAME)

# lbhc/controller/controller.py: a failed pass is retried after Backoff(initial=1, max=60),
# full jitter over a ceiling that doubles. Not a setting, so mirrored here.
PASS_BACKOFF_INITIAL_SEC, PASS_BACKOFF_MAX_SEC = 1.0, 60.0
# The machine is a shared 2-core VM that other suites load: every bound gets this on top.
SLACK_SEC = 20.0


# ---- the planner's desired state, from the fakes' own state (no request, no fault) ------
def cluster_snapshot(fw: FaultWorld) -> ClusterSnapshot:
    kube = fw.w.kube
    items = [*kube.objects("Node"), *kube.objects("Service"), *kube.objects("Namespace")]
    document = {"apiVersion": "v1", "kind": "List", "items": items}
    snapshot = parse_cluster_snapshot(json.dumps(document), "the kube fake")
    return dataclasses.replace(snapshot, gaps=())  # the fake's content is complete by design


def cloud_snapshot(fw: FaultWorld) -> CloudSnapshot:
    fake = fw.compute
    check = fake.http_health_checks(PROJECT).get(NAME)
    firewall = fake.firewalls(PROJECT).get(NAME)

    def proto(kind: Any, body: dict[str, object]) -> Any:
        return kind.from_json(json.dumps(body), ignore_unknown_fields=True)

    return CloudSnapshot(
        convert.health_check_from_json(check) if check else None,
        convert.firewall_from_proto(proto(compute_v1.Firewall, firewall)) if firewall else None,
        tuple(
            convert.target_pool_from_proto(proto(compute_v1.TargetPool, p))
            for p in fake.target_pools(PROJECT, REGION).values()
        ),
        tuple(
            convert.forwarding_rule_from_proto(proto(compute_v1.ForwardingRule, r))
            for r in fake.forwarding_rules(PROJECT, REGION).values()
        ),
        (),
    )


def desired_plan(fw: FaultWorld) -> Plan:
    """What the planner would still change in the cloud as it is now: nothing when converged."""
    return plan(cluster_snapshot(fw), cloud_snapshot(fw), fw.settings.planner_config())


def problems(fw: FaultWorld, conflict_pools: Iterable[str] = ()) -> list[str]:
    """Why the cloud is not converged (empty when it is): every Cluster pool carries exactly
    our check, Local pools none, exactly one check and one firewall of ours while any
    Cluster pool exists, and the planner has nothing left to do."""
    found: list[str] = []
    pools = fw.compute.target_pools(PROJECT, REGION)
    skip = set(conflict_pools)
    for name in fw.cluster_pools:
        if name in pools and name not in skip and pools[name].get("healthChecks") != [URL]:
            found.append(f"Cluster pool {name} carries {pools[name].get('healthChecks')}")
    for name in fw.local_pools:
        if name in pools and URL in pools[name].get("healthChecks", []):
            found.append(f"Local pool {name} carries our check")
    cluster_id = resolve_cluster_id(cluster_snapshot(fw), fw.settings.planner_config())
    wanted = 1 if any(p in pools for p in fw.cluster_pools) else 0
    for kind, items in (
        ("check", fw.compute.http_health_checks(PROJECT)),
        ("firewall", fw.compute.firewalls(PROJECT)),
    ):
        ours = [n for n, r in items.items() if is_owned(r.get("description", ""), cluster_id)]
        if len(ours) != wanted or (wanted and ours != [NAME]):
            found.append(f"{kind}s of ours: {ours}, want {wanted}")
    left = desired_plan(fw)
    if left.changes or left.withheld:
        found.append(f"planner still wants: {[(c.action.value, c.name) for c in left.changes]}")
    return found


def wait_converged(
    fw: FaultWorld, bound: float, what: str, conflict_pools: Iterable[str] = ()
) -> float:
    """Poll until converged; the monotonic time it was first seen so (same clock as the
    fake's journal). Fails with what is still wrong after `bound` seconds."""
    last: list[str] = []

    def converged() -> float | None:
        last[:] = problems(fw, conflict_pools)
        return None if last else time.monotonic()

    return wait_for(converged, bound, lambda: f"convergence ({what}); still wrong: {last}")


def wait_passes(fw: FaultWorld, count: int, bound: float) -> None:
    start = fw.passes
    wait_for(lambda: fw.passes >= start + count, bound, f"{count} more passes")


def assert_stable(fw: FaultWorld, passes: int = 3, conflict_pools: Iterable[str] = ()) -> None:
    """Several more passes (resyncs re-read GCE) change nothing: no loop, no flapping."""
    before = len(fw.lbhc_mutations())
    wait_passes(fw, passes, bound=passes * 2 + SLACK_SEC)
    extra = fw.lbhc_mutations()[before:]
    assert not extra, f"mutations after convergence: {[(m.method, m.path) for m in extra]}"
    assert not problems(fw, conflict_pools)


def answers(fw: FaultWorld, status: int, path: str) -> int:
    """How many of lbhc's requests to `path` (under the project) were answered `status`."""
    return sum(1 for e in fw.lbhc_requests() if e.status == status and e.path == API + path)


def assert_conflict_stable(fw: FaultWorld, passes: int, path: str) -> None:
    """Once settled, `passes` more passes make no mutation at all, and none ever modified
    the resource at `path` (a foreign one bearing our name)."""
    wait_passes(fw, 2, bound=SLACK_SEC)
    before = len(fw.lbhc_mutations())
    wait_passes(fw, passes, bound=SLACK_SEC)
    assert fw.lbhc_mutations()[before:] == [], "a stable conflict must not keep mutating"
    touched = [m for m in fw.lbhc_mutations() if m.path == API + path and m.method != "POST"]
    assert touched == [], "the foreign resource was modified"


# ---- the bound -------------------------------------------------------------------------
def pass_backoff_sec(failed_passes: int) -> float:
    """Longest total wait lbhc's pass backoff can add over `failed_passes` failures."""
    return sum(
        min(PASS_BACKOFF_MAX_SEC, PASS_BACKOFF_INITIAL_SEC * 2.0**i) for i in range(failed_passes)
    )


def bound_sec(
    settings: Settings,
    *,
    failed_passes: int,
    calls: int,
    waits: float = 0.0,
    resync: float = 0.0,
) -> float:
    """How long convergence may take: the pass backoff of up to `failed_passes` failures, and
    for every pass (failed ones and the last) each of `calls` GCE calls paced and retried to
    the budget, plus `waits` (operation timeouts, stalls, slow requests) and a resync."""
    per_call = 1 / settings.gce.mutations_per_second + (settings.gce.max_attempts - 1) * (
        settings.gce.backoff_max_sec
    )
    per_pass = 1.0 + calls * per_call
    passes = failed_passes + 1
    return pass_backoff_sec(failed_passes) + passes * per_pass + waits + resync + SLACK_SEC


# ---- the journal -----------------------------------------------------------------------
def attempts_per_request(fw: FaultWorld) -> Counter[str]:
    """lbhc's attempts per mutation: every retry carries the mutation's one requestId."""
    ids: Counter[str] = Counter()
    for m in fw.lbhc_mutations():
        request_id = m.query.get("requestId", "")
        assert request_id, f"a mutation without a requestId: {m.method} {m.path}"
        ids[request_id] += 1
    return ids


def assert_budget(fw: FaultWorld, changes: int, failed_passes: int) -> int:
    """No mutation tried beyond gce_max_attempts; no tight loop: at most `changes` mutations
    per pass that could have run them, each to the budget. Returns the worst attempt count."""
    limit = fw.settings.gce.max_attempts
    attempts = attempts_per_request(fw)
    worst = max(attempts.values(), default=0)
    assert worst <= limit, f"a mutation tried {worst} times (budget {limit})"
    total = len(fw.lbhc_mutations())
    ceiling = limit * changes * (failed_passes + 1)
    assert total <= ceiling, f"{total} mutations for {changes} changes (ceiling {ceiling})"
    return worst


def applied_creations(fw: FaultWorld) -> Counter[str]:
    """Inserts of our shared names that really happened (operations DONE without error),
    whoever sent them: a duplicate insert would show here."""
    created: Counter[str] = Counter()
    for op in fw.compute.operations(PROJECT):
        target = str(op.get("targetLink", ""))
        if op["operationType"] == "insert" and op["status"] == "DONE" and "error" not in op:
            for kind in ("httpHealthChecks", "firewalls"):
                if target.endswith(f"/global/{kind}/{NAME}"):
                    created[kind] += 1
    return created


def duplicates(fw: FaultWorld, expected: dict[str, int] | None = None) -> int:
    """Creations beyond what the case made necessary (one of each unless told)."""
    want = expected or {"httpHealthChecks": 1, "firewalls": 1}
    created = applied_creations(fw)
    return sum(max(0, created[kind] - want.get(kind, 1)) for kind in created)


def foreign_touches(fw: FaultWorld, replaces: str | None = None) -> list[JournalEntry]:
    """lbhc mutations of anything but our check, our firewall and pools this cluster's
    Services claim; and pool changes naming any check but ours (or `replaces`)."""
    ours = {f"{API}/global/httpHealthChecks/{NAME}", f"{API}/global/firewalls/{NAME}"}
    inserts = {f"{API}/global/httpHealthChecks", f"{API}/global/firewalls"}
    pools = {f"{API}/regions/{REGION}/targetPools/{p}" for p in fw.our_pools()}
    allowed_checks = {URL, *([replaces] if replaces else [])}
    touched: list[JournalEntry] = []
    for m in fw.lbhc_mutations():
        body = m.body or {}
        if m.path in ours or (m.path in inserts and body.get("name") == NAME):
            continue
        base, _, verb = m.path.rpartition("/")
        refs = {str(r.get("healthCheck", "")) for r in body.get("healthChecks", [])}
        if (
            base in pools
            and verb in ("addHealthCheck", "removeHealthCheck")
            and {_canonical(r) for r in refs} <= allowed_checks
        ):
            continue
        touched.append(m)
    return touched


def _canonical(ref: str) -> str:
    return (
        http_health_check_url(PROJECT, ref.rsplit("/", 1)[-1])
        if "httpHealthChecks/" in ref
        else ref
    )
