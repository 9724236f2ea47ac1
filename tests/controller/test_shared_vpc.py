"""Shared VPC: the network and its firewall rules live in a host project. lbhc writes its rule
there (network_project); when it may not (403), every Service waiting on it gets a
FirewallChangeNeeded Warning Event with the gcloud command a network admin runs, a metric
says so, nothing that would fail closed is attached, and the rest of the pass goes on."""

from __future__ import annotations

from lbhc.model.cloud import CloudSnapshot
from lbhc.model.plan import Action, Kind
from lbhc.planner.planner import plan
from tests.builders import cloud, cluster, config, pool_for, service
from tests.controller.harness import NAME, PROJECT, world
from tests.waiting import wait_for

HOST = "host-project"


def test_the_firewall_is_written_into_the_host_project() -> None:
    with world() as w:
        w.compute.add_network(HOST, "shared-vpc")
        pool = w.add_service("web")
        w.start(settings={"network_project": HOST, "network": "shared-vpc"})
        wait_for(lambda: w.attached(pool), what="attached")
        assert NAME in w.compute.firewalls(HOST) and NAME not in w.compute.firewalls(PROJECT)
        rule = w.compute.firewalls(HOST)[NAME]
        assert rule["network"].endswith(f"/projects/{HOST}/global/networks/shared-vpc")
        assert NAME in w.compute.http_health_checks(PROJECT)  # checks stay in the service one


def test_a_firewall_lbhc_may_not_write_is_said_on_each_waiting_service_and_nothing_attached() -> (
    None
):
    with world() as w:
        w.compute.add_network(HOST, "shared-vpc")
        pools = [w.add_service("web"), w.add_service("api", "shop")]
        w.compute.faults.fail_requests(
            times=1000,
            status=403,
            reason="forbidden",
            message="Required 'compute.firewalls.create' permission for 'projects/host-project'",
            path_contains=f"/projects/{HOST}/global/firewalls",
            method="POST",
        )
        app = w.start(settings={"network_project": HOST, "network": "shared-vpc"})
        wait_for(lambda: len(w.events("FirewallChangeNeeded")) >= 2, what="an Event per Service")
        notes = {e["regarding"]["name"]: e["note"] for e in w.events("FirewallChangeNeeded")}
        assert set(notes) == {"web", "api"}
        command = notes["web"].split("a network admin runs: ", 1)[1]
        assert command.startswith(f"gcloud compute firewall-rules create {NAME} --project={HOST}")
        assert "--network=shared-vpc" in command and "--rules=tcp:10256" in command
        assert '"managedBy":"lbhc"' in command  # made by hand, still recognised as lbhc's
        wait_for(
            lambda: app.metrics.registry.get_sample_value("lbhc_firewall_change_needed") == 1,
            what="the metric",
        )
        assert not any(w.attached(p) for p in pools)  # nothing that would fail closed
        assert NAME in w.compute.http_health_checks(PROJECT)  # the rest of the pass went on


def test_a_firewall_lbhc_may_not_read_attaches_nothing_and_names_the_command() -> None:
    web = service("web")
    unreadable = CloudSnapshot(
        target_pools=(pool_for(web),),
        firewall_unreadable="403 forbidden: Required 'compute.firewalls.get' permission",
    )
    cfg = config(network_project=HOST)
    result = plan(cluster(services=(web,)), unreadable, cfg)
    assert not any(c.action is Action.ATTACH for c in result.changes)
    assert not any(c.kind is Kind.FIREWALL for c in result.changes)
    assert any("could not be read" in w and "--project=host-project" in w for w in result.warnings)
    assert result.firewall_command.startswith("gcloud compute firewall-rules create")
    # Without the Shared VPC, the rule and the check go where they always did.
    same = plan(cluster(services=(web,)), cloud(pools=(pool_for(web),)), config())
    firewall = next(c for c in same.changes if c.kind.value == "Firewall")
    assert f"/projects/{PROJECT}/global/networks/default" in str(firewall.desired)
