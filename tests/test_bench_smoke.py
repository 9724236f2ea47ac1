"""The benchmark runs (tiny sizes) so `make bench` cannot rot; its figures are not asserted
as timings, only as counts that must hold at any size."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.plan_bench import main


def test_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    assert (
        main(
            [
                "--services",
                "50",
                "--nodes",
                "20",
                "--gce-services",
                "20",
                "--repeats",
                "1",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    figures = json.loads(out.read_text())
    gce = figures["gce"]
    assert gce["attached_pools"] == gce["eligible_pools"] == 16
    assert gce["changes_after_converge"] == 0
    assert gce["calls_from_nothing"]["POST targetPools addHealthCheck"] == 16
    assert gce["calls_from_nothing"]["POST httpHealthChecks"] == 1
    assert gce["calls_from_nothing"]["POST firewalls"] == 1
    assert all(call.startswith("GET") for call in gce["calls_converged"])
    assert figures["planning"]["changes_converged"] == 0


def test_cache_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.cache_bench import main as cache_main

    out = tmp_path / "cache.json"
    assert (
        cache_main(["--nodes", "20", "--services", "40", "--events", "50", "--json", str(out)]) == 0
    )
    figures = json.loads(out.read_text())
    assert figures["listed"] == {"nodes": 20, "services": 40, "kube-proxy pods": 20}
    assert figures["heartbeat_reconciles"] == 0  # heartbeats never trigger a pass
    assert figures["taint_reconciles"] == 5
    assert figures["heap_ratio"] > 1


def test_controller_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.controller_bench import main as controller_main

    out = tmp_path / "controller.json"
    assert controller_main(["--services", "3", "--warm", "2", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["new_services"] == 3
    assert 0 < figures["attached_median_ms"] <= figures["attached_max_ms"]
