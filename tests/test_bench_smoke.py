"""The benchmark runs (tiny sizes) so `make bench` cannot rot; its figures are not asserted
as timings, only as counts that must hold at any size and as well-formed output (every
figure present, every target judged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bench.plan_bench import main


def well_formed_targets(figures: dict[str, Any], expected: int) -> None:
    from tests.bench.report import collect_targets

    targets = collect_targets(figures)
    assert len(targets) == expected
    for t in targets:
        assert set(t) == {"key", "target", "measured", "goal", "status", "why"}
        assert t["status"] in ("met", "missed")
    assert len({t["key"] for t in targets}) == expected  # comparisons match on the key


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
    for side in ("cache", "client_models"):
        memory = figures[side]
        assert memory["peak_rss_mb"] >= memory["baseline_rss_mb"] > 0
        assert memory["heap_mb"] > 0
    assert figures["client_models"]["objects_held"] == 80
    assert figures["cache"]["objects_held"] == 80
    assert figures["heartbeat_events"] + figures["taint_events"] == 50
    well_formed_targets(figures, 3)


def test_controller_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.controller_bench import main as controller_main

    out = tmp_path / "controller.json"
    assert controller_main(["--services", "3", "--warm", "2", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["new_services"] == 3
    assert 0 < figures["attached_median_ms"] <= figures["attached_max_ms"]


def test_scale_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.scale_bench import main as scale_main

    out = tmp_path / "scale.json"
    args = [
        "--nodes",
        "20",
        "--services",
        "10",
        "--resyncs",
        "1",
        "--in-process",
        "--timeout",
        "120",
    ]
    assert scale_main([*args, "--variants", "full-pools", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    cold = figures["full-pools"]["cold_start"]
    assert cold["cluster_services"] == cold["attached"] == 8
    assert cold["gce_calls"]["POST targetPools addHealthCheck"] == 8
    assert cold["gce_calls"]["POST httpHealthChecks"] == cold["gce_calls"]["POST firewalls"] == 1
    steady = figures["full-pools"]["steady_state"]
    assert steady["writes"] == 0 and steady["changes"] == 0
    # 2 gets, the network and its effective firewall, then 1 page each of legacy checks,
    # pools and rules, and of backend services, global and regional checks
    assert steady["reads"] == steady["reads_allowed"] == 10
    assert steady["per_service"]["reads"] == 20  # a pool and a check per LoadBalancer Service
    assert steady["ratio_reads"] == 2.0  # 20 reads against 10
    well_formed_targets(figures, 6)

    from tests.bench.markdown import render

    text = render({"benches": {"scale": figures}})
    assert "| full-pools | 20 | 1000 |" in text and "#### Targets" in text


def test_scale_bench_mixed_smoke(tmp_path: Path) -> None:
    """A third of the Services on backend services: lbhc writes nothing there, and a resync
    reads a page of each kind, not one per Service."""
    from tests.bench.scale_bench import main as scale_main

    out = tmp_path / "mixed.json"
    args = ["--nodes", "20", "--services", "12", "--resyncs", "1", "--in-process"]
    args += ["--timeout", "120", "--variants", "backend-third", "--json", str(out)]
    assert scale_main(args) == 0
    figures = json.loads(out.read_text())["backend-third"]
    cold, steady = figures["cold_start"], figures["steady_state"]
    assert cold["backend_services"] == 4  # every third of 12
    assert cold["attached"] == cold["cluster_services"]  # only target pools get lbhc's check
    assert steady["writes"] == 0 and steady["changes"] == 0
    # 10 as above: one page of each kind; the shared group's members are read only while a
    # node is leaving
    assert steady["reads"] == steady["reads_allowed"] == 10
    assert "POST instanceGroups" not in steady["gce_calls"]  # listInstances


def test_burst_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.burst_bench import main as burst_main

    out = tmp_path / "burst.json"
    args = ["--services", "4", "--warm", "2", "--latency", "0.05", "--quota", "50"]
    args += ["--tuned-concurrency", "0", "--baseline-services", "2", "--timeout", "120"]
    args += ["--json", str(out)]
    assert burst_main(args) == 0
    figures = json.loads(out.read_text())
    assert figures["lbhc_default"]["attaches"] == 4
    assert figures["lbhc_default"]["seconds"] > 0
    baseline = figures["one_at_a_time"]
    assert baseline["extrapolated"] is True and baseline["services_measured"] == 2
    assert baseline["seconds"] >= baseline["seconds_measured"] > 0
    well_formed_targets(figures, 2)


def test_drain_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.drain_bench import main as drain_main

    out = tmp_path / "drain.json"
    assert drain_main(["--trials", "1", "--time-scale", "0.05", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    # computed from the checks' timings: 1,000 pools / interval
    assert figures["default"]["probes_per_second_per_node"] == 125.0
    assert figures["fast"]["probes_per_second_per_node"] == 250.0
    for profile in ("default", "fast"):
        result = figures[profile]
        assert result["trials"] == len(result["trials_seconds_real_world"]) == 1
        assert result["drain_seconds_getHealth"]["median"] > 0
    assert figures["fast_vs_default"]["probe_load_ratio"] == 2.0
    well_formed_targets(figures, 2)


def test_startup_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.startup_bench import import_cost, import_profile
    from tests.bench.startup_bench import main as startup_main

    out = tmp_path / "startup.json"
    args = ["--nodes", "10", "--services", "4", "--repeats", "1", "--variants", "full-pools"]
    args += ["--no-import-probes", "--skip-cli", "--timeout", "120", "--json", str(out)]
    assert startup_main(args) == 0
    figures = json.loads(out.read_text())
    full = figures["full-pools"]
    assert list(full["steps_median"]) == [
        "interpreter",
        "import_lbhc",
        "import_kubernetes_apis",
        "import_google_cloud_compute",
        "build_app",
        "caches_synced",
        "first_gce_read",
        "first_plan",
    ]
    assert full["ready_since_spawn_median"] > 0 and full["peak_rss_mb_median"] > 0
    assert set(import_cost("import json")) == {"seconds", "rss_mb"}
    assert import_profile("import json")  # some package took some time


def test_compare_reports_changes_and_regressions() -> None:
    from tests.bench.report import compare, target

    old = {"a": {"seconds": 10.0, "count": 3}, "targets": [target("k", "t", 10.0, "< 15", True)]}
    new = {"a": {"seconds": 20.0, "count": 3}, "targets": [target("k", "t", 20.0, "< 15", False)]}
    lines = compare(old, new)
    assert any(line.startswith("!") and "a.seconds" in line and "+100%" in line for line in lines)
    assert not any("a.count" in line for line in lines)  # unchanged figures are not listed
    assert any(line.startswith("REGRESSED: t") for line in lines)


def test_verify_bench_smoke(tmp_path: Path) -> None:
    from tests.bench.verify_bench import main as verify_main

    out = tmp_path / "verify.json"
    args = ["--services", "40", "--nodes", "60", "--marked", "4", "--minutes", "3"]
    assert verify_main([*args, "--budget", "12", "--http-calls", "5", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    budget = figures["budget"]
    assert budget["reads_per_minute_max"] <= 12  # no minute past the budget
    assert budget["marked_all_read_after_s"] is not None  # every marked node was read
    well_formed_targets(figures, 1)
