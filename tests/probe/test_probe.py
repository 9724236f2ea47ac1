"""The controller's active probe of kube-proxy's health port, against emulated kube-proxies
of each era over real sockets: what the answers prove, the background prober, and the
controller treating a node whose probe is pending as an incomplete view."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from lbhc.model.cluster import HealthProbe, ProbeTarget
from lbhc.planner.capabilities import Capabilities, capabilities_from_probe
from lbhc.probe.health_port import probe_health_port
from lbhc.probe.prober import NodeProber
from lbhc.sandbox.kube_proxy import KubeProxyServer, NodeState
from tests.controller.harness import URL, wait_for, world
from tests.kube import conftest as kube_builders


@contextmanager
def kube_proxy(
    version: tuple[int, int, int], *, eligible: bool = True, host: str = "127.0.0.1", port: int = 0
) -> Iterator[KubeProxyServer]:
    with KubeProxyServer(version, lambda: NodeState(eligible=eligible), host=host, port=port) as s:
        yield s


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("version", "eligible", "expected"),
    [
        ((1, 7, 2), True, Capabilities(True, False, False)),
        ((1, 27, 9), False, Capabilities(True, False, False)),  # never drains, no /livez
        ((1, 29, 3), False, Capabilities(True, True, False)),  # gate off: still serving
        ((1, 31, 4), True, Capabilities(True, True, None)),  # drain unseen while serving
        ((1, 31, 4), False, Capabilities(True, True, True)),  # seen draining
        ((1, 33, 0), False, Capabilities(True, True, True)),
    ],
)
def test_probe_of_each_kube_proxy_era(
    version: tuple[int, int, int], eligible: bool, expected: Capabilities
) -> None:
    with kube_proxy(version, eligible=eligible) as server:
        seen = probe_health_port(server.host, server.port, timeout=2)
    seen = dataclasses.replace(seen, node_marked=not eligible)  # what NodeProber records
    assert capabilities_from_probe(seen, being_deleted=not eligible) == expected


def test_nothing_listening_means_no_health_server() -> None:
    seen = probe_health_port("127.0.0.1", free_port(), timeout=2)
    assert (seen.healthz, seen.livez, seen.refused) == (None, None, True)
    assert capabilities_from_probe(seen, being_deleted=False) == Capabilities(False, False, False)


def test_a_timeout_proves_nothing() -> None:
    """A server that accepts but never answers (a black hole, an overloaded node)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        seen = probe_health_port("127.0.0.1", silent.getsockname()[1], timeout=0.2)
    assert (seen.healthz, seen.refused) == (None, False)
    assert capabilities_from_probe(seen, being_deleted=False) == Capabilities(None, None, None)


def test_prober_confirms_a_refusal_and_a_timeout_is_not_one() -> None:
    """Three attempts: refused every time is "no health server"; one timeout among them is
    not (the node may just be slow or shutting down)."""
    answers = {
        "refusing": [HealthProbe("a", None, None, refused=True)] * 3,
        "flaky": [
            HealthProbe("b", None, None, refused=True),
            HealthProbe("b", None, None),
            HealthProbe("b", None, None, refused=True),
        ],
    }
    calls: list[str] = []

    def scripted(address: str, port: int, timeout: float) -> HealthProbe:
        calls.append(address)
        return answers[address][calls.count(address) - 1]

    prober = NodeProber(10256, 3600, 1, lambda _: None, retry_delay=0, probe=scripted)
    targets = {"n1": ProbeTarget("refusing", False), "n2": ProbeTarget("flaky", True)}
    prober.set_targets(targets)
    prober.probe_now(targets)
    results = prober.results()
    assert results["n1"].refused is True and results["n2"].refused is False
    assert results["n2"].node_marked is True  # recorded with the probe, for drain judgements
    assert sorted(calls) == ["flaky"] * 3 + ["refusing"] * 3


def test_prober_reports_new_targets_and_changed_answers() -> None:
    changes: list[str] = []
    state = {"eligible": True}
    with KubeProxyServer((1, 31, 4), lambda: NodeState(eligible=state["eligible"])) as server:
        prober = NodeProber(server.port, interval=3600, timeout=2, on_change=changes.append)
        prober.start()
        try:
            target = {"node-1": ProbeTarget(server.host, False)}
            prober.set_targets(target)
            first = wait_for(lambda: prober.results().get("node-1"), what="a first answer")
            assert (first.healthz, first.livez) == (200, 200)
            assert len(changes) == 1

            state["eligible"] = False
            prober.probe_now(target)  # what the next interval does
            assert prober.results()["node-1"].healthz == 503
            assert len(changes) == 2

            prober.set_targets({})
            assert prober.results() == {}
        finally:
            prober.stop()


def test_controller_falls_back_on_a_probed_node_without_health_server_and_recovers() -> None:
    """Nodes whose kube-proxy is unseen (no Pod, no node field): the probe decides. node-2
    answers nothing at first (kube-proxy not serving the port), so the check is withdrawn
    with a reason naming the probe; once it answers, the check comes back."""
    port = free_port()
    with world() as w:
        for i in range(3):
            node = kube_builders.node(f"node-{i}", kubelet="v1.33.1")
            node["status"]["addresses"] = [{"type": "InternalIP", "address": f"127.0.0.{i + 2}"}]
            w.kube.upsert(node)
        pool = w.add_service("web")
        servers = [kube_proxy((1, 33, 1), host=f"127.0.0.{i + 2}", port=port) for i in range(2)]
        with servers[0], servers[1]:
            app = w.start(
                settings={"probe_kube_proxy": True, "probe_interval_sec": 1, "port": port}
            )
            wait_for(lambda: app.controller and app.controller.last_plan, what="a first pass")
            plan = wait_for(
                lambda: app.controller.last_plan.fallback and app.controller.last_plan,  # type: ignore[union-attr]
                what="fallback from the probe",
            )
            assert [n.node for n in plan.fallback.nodes] == ["node-2"]
            assert "from probe" in plan.fallback.reason
            assert not w.attached(pool)

            with kube_proxy((1, 33, 1), host="127.0.0.4", port=port):
                wait_for(lambda: w.attached(pool), timeout=15, what="attached once node-2 answers")
                assert w.pool_checks(pool) == [URL]
