"""Render a run_all results file as the Markdown tables docs/benchmarks.md shows.
Run: `python -m tests.bench.markdown bench-results.json` (prints to stdout)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tests.bench.report import collect_targets


def _get(data: Any, path: str) -> Any:
    for part in path.split("/"):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return lines


def render(results: dict[str, Any]) -> str:
    b = results.get("benches", {})
    out: list[str] = []
    scale = b.get("scale", {})
    if scale:
        first = next((v["cold_start"] for v in scale.values() if isinstance(v, dict)), {})
        out += [
            f"#### 1. Cold start ({first.get('nodes')} nodes, {first.get('services')} "
            f"LoadBalancer Services, {first.get('cluster_services')} of them Cluster)",
            "",
        ]
        rows = []
        for variant in ("full-pools", "default-pacing"):
            cold = _get(scale, f"{variant}/cold_start")
            if cold:
                calls = cold["gce_calls"]
                rows.append(
                    (
                        variant,
                        cold["pool_instances"],
                        cold["mutation_pacing_per_second"],
                        cold["caches_synced_seconds"],
                        cold.get("first_gce_read_seconds"),
                        cold["converged_seconds"],
                        calls.get("POST httpHealthChecks"),
                        calls.get("POST firewalls"),
                        calls.get("POST targetPools addHealthCheck"),
                        cold["gce_reads"],
                        cold["passes"],
                        cold["peak_rss_mb"],
                    )
                )
        out += table(
            (
                "variant",
                "instances/pool",
                "mutations/s",
                "caches synced s",
                "first GCE read done s",
                "converged s",
                "check inserts",
                "firewall inserts",
                "addHealthCheck",
                "reads",
                "passes",
                "peak RSS MB",
            ),
            rows,
        )
        out += ["", "#### 2. Steady state: one resync of the converged cluster", ""]
        rows = []
        for variant in ("full-pools",):
            steady = _get(scale, f"{variant}/steady_state")
            if steady:
                per = steady["per_service"]
                rows.append(
                    (
                        variant,
                        steady["reads"],
                        steady["reads_allowed"],
                        steady["writes"],
                        steady["cpu_seconds_median"],
                        steady["wall_seconds_median"],
                        per["reads"],
                        per["cpu_seconds"],
                        per["wall_seconds"],
                        steady["ratio_reads"],
                        steady["ratio_cpu"],
                        steady["ratio_wall"],
                    )
                )
        out += table(
            (
                "variant",
                "reads",
                "reads allowed",
                "writes",
                "CPU s (median)",
                "wall s",
                "per-Service reads",
                "per-Service CPU s",
                "per-Service wall s",
                "reads ratio",
                "CPU ratio",
                "wall ratio",
            ),
            rows,
        )
    burst = b.get("burst")
    if burst:
        out += [
            "",
            f"#### 3. Burst: {burst['new_services']} new Services, "
            f"{burst['operation_latency_seconds']:g} s operations, "
            f"{burst['mutation_quota_per_second']:g} mutations/s quota",
            "",
        ]
        rows = []
        for key, label in (("lbhc_default", "lbhc as shipped"), ("lbhc_tuned", "lbhc tuned")):
            run = burst.get(key)
            if run:
                rows.append(
                    (
                        f"{label} ({run['max_concurrent_pool_calls']} concurrent)",
                        run["seconds"],
                        run["passes"],
                        run["writes_rejected_by_quota"],
                        burst.get("ratio_default" if key == "lbhc_default" else "ratio_tuned"),
                    )
                )
        one = burst["one_at_a_time"]
        how = (
            f"extrapolated from {one['services_measured']}"
            if one["extrapolated"]
            else f"measured, all {one['services_measured']}"
        )
        rows.append(
            (f"one at a time ({how})", one["seconds"], "-", one["writes_rejected_by_quota"], 1)
        )
        out += table(("strategy", "seconds", "passes", "403s", "x faster than one at a time"), rows)
        out += ["", f"Bound set by the quota: {burst['rate_limit_bound_seconds']:g} s."]
    cache = b.get("cache")
    if cache:
        held = _get(cache, "cache/objects_held")
        out += ["", f"#### 4. Memory: {held} objects (Nodes, Services, kube-proxy Pods)", ""]
        rows = []
        for key, label in (("cache", "lbhc cache"), ("client_models", "kubernetes client models")):
            side = cache.get(key, {})
            rows.append(
                (
                    label,
                    side.get("heap_mb"),
                    side.get("rss_held_mb"),
                    side.get("peak_rss_mb"),
                    side.get("baseline_rss_mb"),
                )
            )
        out += table(("held by", "heap MB", "RSS held MB", "peak RSS MB", "baseline RSS MB"), rows)
        out += [
            "",
            f"Models / cache: heap x{cache.get('heap_ratio')}, RSS held x"
            f"{cache.get('rss_held_ratio')}. Decode of the whole lists: projections "
            f"{cache.get('decode_seconds')} s, models {cache.get('client_models_decode_seconds')} "
            f"s ({cache.get('raw_mb')} MB of JSON); list over HTTP from the fake "
            f"{cache.get('list_over_http_seconds')} s.",
            "",
            f"#### 5. Watch throughput: {cache.get('node_events')} Node updates "
            "(1 in 10 a taint change)",
            "",
        ]
        rows = [
            (
                kind,
                cache.get(f"{kind}_events"),
                cache.get(f"{kind}_median_ms"),
                cache.get(f"{kind}_p99_ms"),
                cache.get(f"{kind}_reconciles"),
            )
            for kind in ("heartbeat", "taint")
        ]
        rows.append(("all", cache.get("node_events"), cache.get("all_median_ms"),
                     cache.get("all_p99_ms"), "-"))  # fmt: skip
        out += table(("events", "count", "median ms", "p99 ms", "reconciles"), rows)
        out += ["", f"Throughput: {cache.get('events_per_second')} events/s on one thread."]
    drain = b.get("drain")
    if drain:
        out += ["", "#### 6. Drain: taint -> UNHEALTHY in getHealth, real-world seconds", ""]
        rows = []
        for name in ("default", "fast"):
            d = drain.get(name)
            if d:
                t = d["timings"]
                seen = d["drain_seconds_getHealth"]
                rows.append(
                    (
                        name,
                        f"{t['check_interval_sec']} s / {t['timeout_sec']} s / "
                        f"{t['healthy_threshold']} / {t['unhealthy_threshold']}",
                        d["trials"],
                        f"{d['expected_window_seconds'][0]}-{d['expected_window_seconds'][1]}",
                        seen["min"],
                        seen["median"],
                        seen["p90"],
                        seen["max"],
                        d["back_healthy_seconds"]["median"],
                        d["probes_per_second_per_node"],
                    )
                )
        out += table(
            (
                "profile",
                "interval / timeout / healthy / unhealthy",
                "trials",
                "expected s",
                "min s",
                "median s",
                "p90 s",
                "max s",
                "back HEALTHY s (median)",
                "probes/s per node, 1,000 Services",
            ),
            rows,
        )
        scale_used = _get(drain, "default/time_scale")
        out += ["", f"Health checking ran at time scale {scale_used} (real HTTP probes)."]
    startup = b.get("startup")
    if startup:
        out += ["", "#### 7. Start-up (restart on the converged cluster of scenario 1)", ""]
        variants = [v for v in ("full-pools",) if v in startup]
        steps = list(_get(startup, f"{variants[0]}/steps_median") or {}) if variants else []
        rows = []
        for step in steps:
            row: list[Any] = [step]
            for v in variants:
                s = _get(startup, f"{v}/steps_median/{step}") or {}
                row += [s.get("seconds"), s.get("rss_mb")]
            rows.append(tuple(row))
        header: tuple[str, ...] = ("step",)
        for v in variants:
            header += (f"{v} s", f"{v} RSS MB")
        out += table(header, rows)
        rows = []
        for v in variants:
            run = _get(startup, f"{v}/lbhc_run") or {}
            rows.append(
                (
                    v,
                    run.get("ready_seconds"),
                    run.get("rss_mb_at_ready"),
                    run.get("first_plan_seconds"),
                    run.get("peak_rss_mb"),
                )
            )
        out += ["", "`lbhc run` as a process, observed from outside:", ""]
        out += table(("variant", "/readyz 200 s", "RSS MB", "/plan s", "peak RSS MB"), rows)
        imports = startup.get("import_alone")
        if imports:
            out += ["", "Imports alone, each in a fresh interpreter:", ""]
            out += table(
                ("import", "seconds", "RSS MB"),
                [(k, v["seconds"], v["rss_mb"]) for k, v in imports.items()],
            )
            by_package = startup.get("import_self_seconds_by_package", {})
            out += [
                "",
                "Self import time of the whole start-up by package (`-X importtime`, s): "
                + ", ".join(f"{k} {v}" for k, v in by_package.items())
                + ".",
            ]
    plan = b.get("plan")
    if plan:
        p = plan.get("planning", {})
        out += [
            "",
            f"Planner alone ({p.get('plan_services')} Services, {p.get('plan_nodes')} nodes): "
            f"{p.get('plan_ms_converged_median')} ms converged, "
            f"{p.get('plan_ms_from_nothing_median')} ms from nothing (median).",
        ]
    controller = b.get("controller")
    if controller:
        out += [
            f"New Service -> attached, zero-latency fake: median "
            f"{controller.get('attached_median_ms')} ms, p99 {controller.get('attached_p99_ms')} "
            f"ms over {controller.get('new_services')} Services.",
        ]
    targets = collect_targets(results)
    out += ["", "#### Targets", ""]
    out += table(
        ("target", "measured", "goal", "status"),
        [(t["target"], t["measured"], t["goal"], t["status"].upper()) for t in targets],
    )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    print(render(json.loads(args.results.read_text())), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
