"""The controller's active probe of kube-proxy's health port, against emulated kube-proxies
of each era over real sockets: what the answers prove, the background prober, and the
controller treating a node whose probe is pending as an incomplete view."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from lbhc.model.cluster import HealthProbe, ProbeTarget
from lbhc.planner.capabilities import Capabilities, capabilities_from_probe
from lbhc.probe.health_port import probe_health_port
from lbhc.probe.prober import NodeProber
from lbhc.sandbox.kube_proxy import KubeProxyServer, NodeState
from tests.builders import kube as kube_builders
from tests.controller.harness import URL, world
from tests.waiting import wait_for


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
    """Three attempts a round: refused every time counts toward "no health server"; one
    timeout among them does not (the node may just be slow or shutting down)."""
    answers = {
        "refusing": [HealthProbe("a", None, None, refused=True)] * 3,
        "flaky": [
            HealthProbe("b", None, None, refused=True),
            HealthProbe("b", None, None),
            HealthProbe("b", None, None, refused=True),
        ],
    }
    calls: list[str] = []
    seen: list[str] = []

    def scripted(address: str, port: int, timeout: float) -> HealthProbe:
        calls.append(address)
        return answers[address][calls.count(address) - 1]

    prober = NodeProber(
        10256, 3600, 1, lambda _: None, retry_delay=0, probe=scripted, refusal_rounds=1,
        refusal_window=0, observe=seen.append,
    )  # fmt: skip
    targets = {"n1": ProbeTarget("refusing", False), "n2": ProbeTarget("flaky", True)}
    prober.set_targets(targets)
    prober.probe_now(targets)
    results = prober.results()
    assert results["n1"].refused is True and results["n2"].refused is False
    assert results["n2"].node_marked is True  # recorded with the probe, for drain judgements
    assert sorted(calls) == ["flaky"] * 3 + ["refusing"] * 3
    assert sorted(seen) == ["refused"] * 5 + ["timeout"]  # counted for the metric


@pytest.mark.parametrize(
    ("rounds", "settled", "verdict"),
    [
        ([0.0], True, None),  # one refused round: a restart, most likely: no answer yet
        ([0.0, 30.0], True, None),
        ([0.0, 30.0, 45.0], True, None),  # three rounds, but within 45 s: not yet
        ([0.0, 30.0, 61.0], True, True),  # three rounds over a minute: no health server
        ([0.0, 30.0, 61.0, 90.0], False, None),  # never on a node not Ready
    ],
    ids=["one-round", "two-rounds", "three-rounds-too-quick", "persistent", "not-settled"],
)
def test_no_health_server_only_after_refusals_persist(
    rounds: list[float], settled: bool, verdict: bool | None
) -> None:
    now = [0.0]
    refused = HealthProbe("10.0.0.9:10256", None, None, refused=True)
    prober = NodeProber(
        10256, 3600, 1, lambda _: None, retry_delay=0, probe=lambda *_: refused,
        clock=lambda: now[0],
    )  # fmt: skip
    target = {"n1": ProbeTarget("10.0.0.9", False, settled)}
    prober.set_targets(target)
    for at in rounds:
        now[0] = at
        prober.probe_now(target)
    result = prober.results().get("n1")
    assert (result.refused if result else None) is verdict


def test_a_restarting_kube_proxy_keeps_its_last_answer() -> None:
    """It answered, then refuses for a round (restarting), then answers again: the refusal
    never replaces the answer, so fallback never flips on it."""
    answers = iter(
        [HealthProbe("a", 200, 200)]
        + [HealthProbe("a", None, None, refused=True)] * 3
        + [HealthProbe("a", 200, 200)]
    )
    changes: list[str] = []
    prober = NodeProber(
        10256, 3600, 1, changes.append, retry_delay=0, probe=lambda *_: next(answers)
    )
    target = {"n1": ProbeTarget("a", False)}
    prober.set_targets(target)
    for _ in range(3):
        prober.probe_now(target)
        assert prober.results()["n1"].healthz == 200
    assert len(changes) == 1  # the first answer; the refusal and the recovery change nothing


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
                settings={
                    "probe_kube_proxy": True,
                    "probe_interval_sec": 1,
                    "probe_refusal_window_sec": 1,  # a minute by default: refusals persist
                    "port": port,
                }
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


def probes(app: Any, result: str) -> float:
    counted = app.metrics.registry.get_sample_value(
        "lbhc_kube_proxy_probes_total", {"result": result}
    )
    return float(counted or 0)


def test_a_kube_proxy_restarting_while_probed_causes_no_fallback_and_no_detach() -> None:
    """Every node's kube-proxy is unseen (no Pod, no node field): the probe decides. node-1's
    restarts: its port refuses for a few probe rounds, then answers again. That is not "no
    health server": the check stays attached everywhere and nothing is detached."""
    port = free_port()
    with world() as w, kube_proxy((1, 33, 1), host="127.0.0.2", port=port):
        for i in range(2):
            node = kube_builders.node(f"node-{i}", kubelet="v1.33.1")
            node["status"]["addresses"] = [{"type": "InternalIP", "address": f"127.0.0.{i + 2}"}]
            w.kube.upsert(node)
        pool = w.add_service("web")
        settings = {"probe_kube_proxy": True, "probe_interval_sec": 1, "port": port}
        with ExitStack() as node_1:
            node_1.enter_context(kube_proxy((1, 33, 1), host="127.0.0.3", port=port))
            app = w.start(settings=settings)
            wait_for(lambda: w.attached(pool), timeout=15, what="attached once both answer")
        # node-1's kube-proxy is down: refused, round after round
        wait_for(lambda: probes(app, "refused") >= 6, timeout=15, what="two refused rounds")
        with kube_proxy((1, 33, 1), host="127.0.0.3", port=port):  # back up
            before = probes(app, "answered")
            wait_for(lambda: probes(app, "answered") > before + 2, timeout=15, what="answers")
        assert app.controller is not None and app.controller.last_plan is not None
        assert app.controller.last_plan.fallback is None
        assert w.attached(pool)
        assert not [m for m in w.mutations() if m.path.endswith("/removeHealthCheck")]
