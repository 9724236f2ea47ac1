"""The real controller against both fakes over HTTP: convergence, reaction to watch events,
recovery from dropped watches and 410s, static stability, restarts, leader election."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

from lbhc.controller.app import ControllerApp
from lbhc.sandbox.cloud_provider import publish_ingress_ip
from tests.chaos.lease_windows import assert_writes_inside_lease_windows
from tests.controller.harness import NAME, PROJECT, World, world
from tests.waiting import wait_for


def two_converged_replicas(
    w: World,
) -> tuple[ControllerApp, ControllerApp, ControllerApp, ControllerApp]:
    """(a, b, leader, follower) once two electing replicas have converged two Services."""
    pools = [w.add_service(f"svc-{i}") for i in range(2)]
    a = w.start(identity="replica-a", leader_elect=True)
    b = w.start(identity="replica-b", leader_elect=True)
    wait_for(lambda: all(w.attached(p) for p in pools), what="convergence")
    leader = next(app for app in (a, b) if app.elector and app.elector.may_write())
    return a, b, leader, (b if leader is a else a)


def removals(mutations: list[object]) -> list[object]:
    return [m for m in mutations if m.method == "DELETE" or m.path.endswith("removeHealthCheck")]  # type: ignore[attr-defined]


def test_converges_from_empty_and_reacts_to_a_new_service() -> None:
    with world() as w:
        pools = [w.add_service(f"svc-{i}") for i in range(3)]
        local = w.add_service("local", policy="Local")
        app = w.start()
        wait_for(lambda: all(w.attached(p) for p in pools), what="initial convergence")
        assert w.pool_checks(local) == []
        assert list(w.compute.http_health_checks(PROJECT)) == [NAME]
        assert list(w.compute.firewalls(PROJECT)) == [NAME]

        new = w.add_service("late")
        wait_for(lambda: w.attached(new), timeout=5, what="a new Service attached within seconds")

        w.kube.patch("Service", "default", "svc-0", {"spec": {"externalTrafficPolicy": "Local"}})
        wait_for(lambda: w.pool_checks(pools[0]) == [], timeout=5, what="flipped ETP detached")
        assert app.controller is not None and app.controller.passes >= 2


def test_dry_run_makes_no_mutation_and_exports_its_plan() -> None:
    with world() as w:
        w.add_service("web")
        app = w.start(dry_run=True)

        def planned() -> set[str]:
            # Passes on a cache still syncing plan less; the loop re-plans as lists land.
            plan = app.controller.last_plan if app.controller else None
            return {c.action.value for c in plan.changes} if plan else set()

        wait_for(lambda: planned() == {"create", "attach"}, what="a dry-run plan of the cluster")
        assert app.http is not None
        exported = json.loads(urllib.request.urlopen(f"{app.http.url}/plan").read())
        assert exported["summary"]["attach"] == 1 and exported["summary"]["create"] == 2
        assert exported["state"] == "dry-run: planned, not carried out"
        assert "results" not in exported
        assert w.mutations() == []


def test_plan_on_the_acting_replica_says_which_changes_it_carried_out() -> None:
    """Until the next pass, /plan must not read as work still to do: each change of the
    newest pass comes with its outcome, as in `lbhc apply --output json`."""
    with world() as w:
        pool = w.add_service("web")
        app = w.start(resync_period=3600)
        wait_for(lambda: w.attached(pool), what="convergence")
        assert app.http is not None
        url = f"{app.http.url}/plan"

        def carried_out() -> dict[str, Any] | None:
            body: dict[str, Any] = json.loads(urllib.request.urlopen(url).read())
            return body if "results" in body else None

        exported = wait_for(carried_out, what="/plan of a pass carried out")
        assert exported["state"] == "carried out: see results" and exported["ok"] is True
        outcomes = {(r["action"], r["name"]): r["status"] for r in exported["results"]}
        assert {(c["action"], c["name"]) for c in exported["changes"]} == set(outcomes)
        assert set(outcomes.values()) <= {"done"}


@pytest.mark.parametrize(
    ("result", "dry_run", "state", "statuses"),
    [
        (None, True, "dry-run: planned, not carried out", None),
        (None, False, "carrying out", None),
        ("done", False, "carried out: see results", ["done"]),
        ("failed", False, "carried out: see results", ["failed"]),
    ],
)
def test_last_pass_marks_each_change_with_its_outcome(
    result: str | None, dry_run: bool, state: str, statuses: list[str] | None
) -> None:
    from lbhc.controller.controller import LastPass
    from lbhc.executor import ApplyResult, Outcome, Status
    from lbhc.model.plan import Attach, Plan

    attach = Attach("pool-1", "https://example/check", "no check yet")
    the_plan = Plan("k8s-l4-healthcheck-x", (attach,), None, ())
    applied = ApplyResult((Outcome(attach, Status(result)),)) if result else None
    body = LastPass(the_plan, applied, dry_run=dry_run).to_json()
    assert body["state"] == state
    assert ([r["status"] for r in body.get("results", [])] or None) == statuses
    assert body.get("ok", None) == (None if result is None else result == "done")


def test_watch_dropped_and_410_recover_without_missing_a_change() -> None:
    with world() as w:
        first = w.add_service("first")
        w.start()
        wait_for(lambda: w.attached(first), what="convergence")

        w.kube.faults.drop_watches()
        second = w.add_service("second")
        wait_for(lambda: w.attached(second), timeout=5, what="change after a dropped watch")

        w.kube.compact()  # history gone: resuming from the last version gets 410
        w.kube.faults.drop_watches()
        third = w.add_service("third")
        wait_for(lambda: w.attached(third), timeout=5, what="change after a 410 relist")


def test_api_server_gone_mid_run_causes_no_removal() -> None:
    with world() as w:
        pools = [w.add_service(f"svc-{i}") for i in range(2)]
        app = w.start(resync_period=0.3)
        wait_for(lambda: all(w.attached(p) for p in pools), what="convergence")
        port = int(w.kube_server.url.rsplit(":", 1)[1])
        w.kube_server.stop()
        # While the API is unreachable the cluster changes: the Service no longer wants it.
        w.kube.patch("Service", "default", "svc-0", {"spec": {"externalTrafficPolicy": "Local"}})
        w.compute.clear_journal()
        assert app.controller is not None
        passes = app.controller.passes
        wait_for(
            lambda: app.controller is not None and app.controller.passes >= passes + 3,
            what="resync passes while the API server is down",
        )
        assert removals(w.mutations()) == []
        assert all(w.attached(p) for p in pools)

        from lbhc.sandbox.kube_fake import KubeFakeServer

        w.kube_server = KubeFakeServer(w.kube, port=port).start()
        wait_for(
            lambda: w.pool_checks(pools[0]) == [],
            timeout=15,
            what="the deletion acted on once the API is back",
        )


def test_health_metrics_and_events_endpoints() -> None:
    with world() as w:
        pool = w.add_service("web")
        app = w.start()
        wait_for(lambda: w.attached(pool), what="convergence")
        assert app.http is not None
        base = app.http.url
        assert urllib.request.urlopen(f"{base}/healthz").status == 200
        wait_for(lambda: urllib.request.urlopen(f"{base}/readyz").status == 200, what="ready")
        # The attach is visible in GCE before the pass that made it has finished counting.
        metrics = wait_for(
            lambda: (
                text
                if 'lbhc_reconciles_total{result="ok"}'
                in (text := urllib.request.urlopen(f"{base}/metrics").read().decode())
                else None
            ),
            what="a pass counted ok",
        )
        assert "lbhc_gce_calls_total" in metrics and 'call="add_health_check"' in metrics
        events = wait_for(
            lambda: w.events("HealthCheckAttached"),
            what="an attach Event",
        )
        event = events[0]
        assert event["regarding"]["kind"] == "Service" and event["regarding"]["name"] == "web"
        assert event["reportingController"] == "lbhc.dev/controller"
        # MicroTime as the API demands it: exactly six fractional digits and a zone.
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["eventTime"])


def test_restart_mid_apply_converges_with_nothing_leaked() -> None:
    with world(operation_latency=0.3) as w:
        pools = [w.add_service(f"svc-{i}") for i in range(6)]
        first = w.start(identity="first")
        wait_for(
            lambda: any(m.path.endswith("addHealthCheck") for m in w.mutations()),
            what="the first apply under way",
        )
        w.stop(first)
        w.start(identity="second")
        wait_for(lambda: all(w.attached(p) for p in pools), timeout=20, what="convergence")
        assert list(w.compute.http_health_checks(PROJECT)) == [NAME]
        assert list(w.compute.firewalls(PROJECT)) == [NAME]
        inserts = [
            m
            for m in w.mutations()
            if m.method == "POST" and m.path.endswith(("/httpHealthChecks", "/firewalls"))
        ]
        assert len([m for m in inserts if m.status == 200]) == 2


def test_two_replicas_only_the_leader_writes_across_a_leader_change() -> None:
    with world() as w:
        a, b, leader, follower = two_converged_replicas(w)
        w.stop(leader)  # releases the lease on a clean shutdown
        late = w.add_service("after-failover")
        wait_for(lambda: w.attached(late), timeout=15, what="the new leader attaching")

        assert_writes_inside_lease_windows(w, (a, b))
        assert {m.client_id for m in w.mutations()} <= {a.identity, b.identity}
        assert any(m.client_id == follower.identity for m in w.mutations())


def test_a_leader_that_cannot_renew_stops_writing_before_the_other_takes_over() -> None:
    with world() as w:
        a, b, leader, other = two_converged_replicas(w)
        assert leader.elector is not None and other.elector is not None
        leader.elector._stop.set()  # hung: keeps running, never renews, never releases
        # Keep the hung leader wanting to write while its lease runs out.
        more = [w.add_service(f"during-{i}") for i in range(3)]
        wait_for(other.elector.may_write, timeout=20, what="the other replica taking over")
        after = [w.add_service(f"after-{i}") for i in range(2)]
        wait_for(
            lambda: all(w.attached(p) for p in more + after),
            timeout=20,
            what="the new leader converging",
        )
        assert any(m.client_id == other.identity for m in w.mutations())

        renewals = assert_writes_inside_lease_windows(w, (a, b))
        lease_duration = 3.0
        last_renew = renewals[leader.identity][-1]
        takeover = min(r for r in renewals[other.identity] if r > last_renew)
        # The other replica waited out the whole lease on its own clock before acquiring.
        assert takeover >= last_renew + lease_duration - 0.5


def test_drift_repair_and_fallback_are_reported_as_events() -> None:
    with world() as w:
        pool = w.add_service("web")
        app = w.start(resync_period=0.5)
        wait_for(lambda: w.attached(pool), what="convergence")
        # Someone lowers the check's interval by hand: the next resync restores it.
        status, _, body = w.compute.handle(
            "PATCH",
            f"/compute/v1/projects/{PROJECT}/global/httpHealthChecks/{NAME}",
            None,
            {"Content-Type": "application/json"},
            json.dumps({"checkIntervalSec": 2}).encode(),
        )
        assert status == 200, body
        wait_for(
            lambda: w.compute.http_health_checks(PROJECT)[NAME]["checkIntervalSec"] == 8,
            what="drift repaired",
        )
        repaired = wait_for(
            lambda: w.events("Repaired"),
            what="a Repaired Event",
        )
        assert repaired[0]["regarding"]["kind"] == "Lease"
        assert "checkIntervalSec" in repaired[0]["note"]

        # A node with a kube-proxy too old for /healthz joins: fallback detaches everywhere.
        from tests.controller.harness import node_obj

        w.kube.upsert(node_obj("ancient", kubelet="v1.6.13"))
        wait_for(lambda: w.pool_checks(pool) == [], what="fallback detaching")
        too_old = wait_for(
            lambda: w.events("KubeProxyTooOld"),
            what="node Event",
        )
        assert too_old[0]["regarding"] == {"apiVersion": "v1", "kind": "Node", "name": "ancient"}
        assert too_old[0]["type"] == "Warning"
        metrics = urllib.request.urlopen(f"{app.http.url}/metrics").read().decode()  # type: ignore[union-attr]
        assert "lbhc_fallback_active 1.0" in metrics

        w.kube.delete("Node", None, "ancient")
        wait_for(lambda: w.attached(pool), what="check attached again after fallback")
        wait_for(
            lambda: w.events("FallbackLeft"),
            what="a FallbackLeft Event",
        )


def test_a_wrong_region_is_said_and_removes_nothing() -> None:
    """Services with load balancers (ingress IPs), none of them in the configured region: a
    view that would otherwise garbage-collect lbhc's check and firewall."""
    with world() as w:
        pool = w.add_service("web")
        app = w.start()
        wait_for(lambda: w.attached(pool), what="converged in the right region")
        w.stop(app)
        publish_ingress_ip(w.kube, "default", "web", "198.51.100.7")  # the status subresource
        wrong = w.start(identity="replica-b", settings={"region": "europe-west1"})
        # The gauge is set once a pass has applied its plan, so any delete it planned is done.
        wait_for(
            lambda: wrong.metrics.registry.get_sample_value("lbhc_out_of_scope_services") == 1,
            what="the out-of-scope gauge",
        )
        wait_for(
            lambda: w.events("OutOfScope"),
            what="an OutOfScope Event",
        )
        event = w.events("OutOfScope")[0]
        assert "europe-west1" in event["note"] and PROJECT in event["note"]
        assert w.attached(pool) and NAME in w.compute.http_health_checks(PROJECT)
        assert not [m for m in w.mutations() if m.method == "DELETE"]
