"""kill -9 in the middle of a takeover (health_check_mode: takeover): the executor records
the foreign check in lbhc's check, removes it from the pool, then adds ours; a pool holds one
check, so a kill between the two calls leaves the pool with none. What the successor does
with that pool matters (an unchecked pool sends new connections to every node, draining ones
included), and so does what `lbhc teardown` gives back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lbhc.cli import main
from lbhc.model.cloud import http_health_check_url
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.builders import kube as kube_builders
from tests.chaos.kill9_scenario import Scenario
from tests.chaos.kill9_spec import FAST_LATENCY, START_ALLOWANCE, TrialSpec, flags
from tests.chaos.kill9_switch import HookedComputeServer, KillPoint, KillSwitch
from tests.chaos.kill9_world import CLUSTER_ID, UPSTREAM_CHECK, Seeded, our_check_url, seed_world
from tests.chaos.process import LbhcProcess, ProcessGroup
from tests.controller.harness import NAME, PROJECT, REGION, URL, node_obj
from tests.waiting import wait_for

# One Cluster Service whose pool carries upstream's check, one already carrying ours.
SCENARIO = Scenario(
    check="ok",
    firewall="ok",
    attach=0,
    attached=1,
    foreign_checked=1,
    takeover=True,
    to_local=0,
    local_own=0,
    orphan=False,
)
SPEC = TrialSpec(7, "replace", "landed", "same-identity")
FOREIGN = http_health_check_url(PROJECT, UPSTREAM_CHECK)


@dataclass
class Cut:
    """The world right after the victim died between removing the foreign check and adding
    ours; `restart()` starts its successor."""

    kube: KubeFake
    compute: ComputeFake
    pool: str
    group: ProcessGroup

    def restart(self) -> LbhcProcess:
        return self.group.start("lbhc-7-a", flags(SCENARIO, SPEC))

    def checks(self) -> list[str]:
        return list(self.compute.target_pools(PROJECT, REGION)[self.pool].get("healthChecks", []))


@contextmanager
def cut_replacement(tmp_path: Path) -> Iterator[Cut]:
    kube, compute = KubeFake(), ComputeFake()
    seeded: Seeded = seed_world(SCENARIO, kube, compute, SPEC.seed)
    compute.operation_latency = FAST_LATENCY
    switch = KillSwitch(our_check_url(), compute)
    with (
        HookedComputeServer(compute, switch) as compute_server,
        KubeFakeServer(kube) as kube_server,
    ):
        kubeconfig = kube_server.write_kubeconfig(tmp_path / "kubeconfig")
        with ProcessGroup(tmp_path, kubeconfig, compute_server.url) as group:
            victim = group.start("lbhc-7-a", flags(SCENARIO, SPEC))
            # The foreign check's removal: right after the ledger's update (the ensure step).
            removal = SCENARIO.mutations_in("replace")[0]
            assert removal == 2
            switch.arm(victim, KillPoint(removal, "landed"))
            wait_for(lambda: switch.fired.is_set(), timeout=START_ALLOWANCE, what="the kill")
            assert switch.kill is not None and switch.kill.phase == "replace"
            cut = Cut(kube, compute, seeded.role("foreign_checked")[0], group)
            wait_for(lambda: cut.checks() == [], what="the removal to land")
            try:
                yield cut
            finally:
                switch.close()


def _settled(process: LbhcProcess) -> dict[str, object] | None:
    plan = process.last_plan()
    return plan if plan is not None and not plan["changes"] and not plan["withheld"] else None


def test_a_restart_finishes_the_replacement(tmp_path: Path) -> None:
    with cut_replacement(tmp_path) as cut:
        successor = cut.restart()
        wait_for(lambda: cut.checks() == [URL], timeout=60, what="ours on the pool")
        wait_for(lambda: _settled(successor), timeout=60, what="nothing more to do")
        # The foreign check itself is untouched: only its use on this pool was replaced.
        assert UPSTREAM_CHECK in cut.compute.http_health_checks(PROJECT)


def test_a_restart_that_may_not_attach_puts_the_foreign_check_back(tmp_path: Path) -> None:
    with cut_replacement(tmp_path) as cut:
        # Before the successor starts, a node joins whose kube-proxy cannot serve /healthz:
        # lbhc falls back and attaches nothing (as upstream would drop its check).
        cut.kube.upsert(node_obj("node-old"))
        cut.kube.upsert(kube_builders.kube_proxy_pod("node-old", version="v1.6.13"))
        successor = cut.restart()
        plan = wait_for(lambda: _settled(successor), timeout=60, what="a settled plan")
        assert plan["fallback"] is not None
        # An uninterrupted lbhc in fallback gives a taken-over pool its check back, so that
        # is the state to return to: the ledger in lbhc's check says which one it was.
        wait_for(lambda: cut.checks() == [FOREIGN], timeout=60, what="the foreign check back")


def test_teardown_after_the_cut_gives_the_foreign_check_back(tmp_path: Path) -> None:
    """No successor at all: the operator uninstalls. Teardown needs GCE alone."""
    with cut_replacement(tmp_path) as cut:
        url = cut.group.compute_url
        code = main(
            [
                *("teardown", "--project", PROJECT, "--region", REGION),
                *("--cluster-id", CLUSTER_ID, "--gce-endpoint", url),
            ]
        )
        assert code == 0
        assert cut.checks() == [FOREIGN]
        assert NAME not in cut.compute.http_health_checks(PROJECT)
        assert UPSTREAM_CHECK in cut.compute.http_health_checks(PROJECT)
