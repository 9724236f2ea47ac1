"""Benchmarks for the watch cache: its own numbers and the scale scenarios 4 and 5.
Run: `python -m tests.bench.cache_bench --json PATH` (or through run_all).

1. Initial list and decode of 5,000 Nodes, 10,000 Services, 5,000 kube-proxy Pods: decode
   alone from the raw list bytes, and end to end through KubeApi over HTTP from the kube fake.
2. (scenario 4) Memory: the cache holding those objects, side by side with the same objects
   decoded by the kubernetes client's models. Each side runs in a fresh interpreter and
   decodes the lists a page of 500 at a time, as a paged list does: heap held (tracemalloc,
   after the pages are freed), RSS held over the interpreter's baseline, and peak RSS.
3. (scenario 5) Node watch events, heartbeat-only and taint changes mixed: median and p99
   processing time per event (decode + cache), and how many reconciles they trigger.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lbhc.controller.reflector import Reflector
from lbhc.kube.cache import ClusterCache
from lbhc.kube.client import (
    KubeApi,
    KubeConfig,
    list_all,
    make_api_client,
)
from lbhc.kube.decode import NodeList, PodList, ServiceList
from lbhc.kube.resources import Resource
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.bench import objects
from tests.bench.machine import peak_rss_mb, rss_mb
from tests.bench.report import add_output_args, emit, target
from tests.bench.world import ROOT, child_env

PAGE = 500  # items per list page, as lbhc's reflectors and the kubernetes client ask
KINDS = (("Node", "V1NodeList"), ("Service", "V1ServiceList"), ("Pod", "V1PodList"))


def list_bytes(kind: str, items: list[dict[str, Any]]) -> bytes:
    body = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in items]
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": f"{kind}List",
            "metadata": {"resourceVersion": "1"},
            "items": body,
        }
    ).encode()


def bench_decode(nodes: list[Any], services: list[Any], pods: list[Any]) -> dict[str, Any]:
    """Seconds to decode whole lists: lbhc's projections vs the client's models."""
    raw = {
        "Node": list_bytes("Node", nodes),
        "Service": list_bytes("Service", services),
        "Pod": list_bytes("Pod", pods),
    }
    start = time.perf_counter()
    decoded = (
        NodeList.model_validate_json(raw["Node"]),
        ServiceList.model_validate_json(raw["Service"]),
        PodList.model_validate_json(raw["Pod"]),
    )
    decode_seconds = time.perf_counter() - start
    del decoded

    from kubernetes import client

    api = client.ApiClient()
    start = time.perf_counter()
    models = [api.deserialize(raw[k].decode(), t, "application/json") for k, t in KINDS]
    model_seconds = time.perf_counter() - start
    del models
    return {
        "objects": len(nodes) + len(services) + len(pods),
        "raw_mb": round(sum(len(b) for b in raw.values()) / 1e6, 1),
        "decode_seconds": round(decode_seconds, 2),
        "client_models_decode_seconds": round(model_seconds, 2),
    }


def write_pages(directory: Path, nodes: list[Any], services: list[Any], pods: list[Any]) -> None:
    for kind, items in (("Node", nodes), ("Service", services), ("Pod", pods)):
        for start in range(0, len(items), PAGE):
            page = list_bytes(kind, items[start : start + PAGE])
            (directory / f"{kind}-{start // PAGE:04d}.json").write_bytes(page)


def _decode_pages(
    side: str, directory: Path, after: Callable[[str], None] = lambda kind: None
) -> Any:
    """Every page decoded and kept as that side keeps it; each page's bytes freed at once.
    `after(kind)` runs once each kind is held."""
    if side == "cache":
        cache = ClusterCache("uid")
        for kind, resource, model in (
            ("Node", Resource.NODES, NodeList),
            ("Service", Resource.SERVICES, ServiceList),
            ("Pod", Resource.KUBE_PROXY_PODS, PodList),
        ):
            items: list[Any] = []
            for path in sorted(directory.glob(f"{kind}-*.json")):
                items.extend(model.model_validate_json(path.read_bytes()).items)
            cache.replace(resource, items)
            del items
            after(kind)
        return cache
    from kubernetes import client

    api = client.ApiClient()
    held: list[Any] = []
    for kind, model_name in KINDS:
        for path in sorted(directory.glob(f"{kind}-*.json")):
            held.extend(api.deserialize(path.read_text(), model_name, "application/json").items)
        after(kind)
    return held


def memory_child(side: str, directory: Path) -> dict[str, Any]:
    """In a fresh interpreter: RSS first (held and peak over the baseline), then the heap
    with tracemalloc (its bookkeeping would inflate RSS, so it comes second)."""
    if side == "models":
        from kubernetes import client

        client.ApiClient()  # import the models before the baseline
    gc.collect()
    baseline = rss_mb()
    held = _decode_pages(side, directory)
    gc.collect()
    rss_held, peak = rss_mb() - baseline, peak_rss_mb()
    size = sum(held.sizes().values()) if side == "cache" else len(held)
    del held
    gc.collect()
    marks: list[tuple[str, int]] = []

    def after(kind: str) -> None:
        gc.collect()
        marks.append((kind, tracemalloc.get_traced_memory()[0]))

    gc.collect()
    tracemalloc.start()
    again = _decode_pages(side, directory, after)
    gc.collect()
    heap = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del again
    by_kind, previous = {}, 0
    for kind, traced in marks:
        by_kind[kind] = round((traced - previous) / 1e6, 1)
        previous = traced
    return {
        "heap_mb": round(heap / 1e6, 1),
        "heap_mb_by_kind": by_kind,
        "rss_held_mb": round(rss_held, 1),
        "peak_rss_mb": peak,
        "baseline_rss_mb": baseline,
        "peak_over_baseline_mb": round(peak - baseline, 1),
        "objects_held": size,
    }


def bench_memory(nodes: list[Any], services: list[Any], pods: list[Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lbhc-cache-") as tmp:
        write_pages(Path(tmp), nodes, services, pods)
        sides = {}
        for side in ("cache", "models"):
            out = subprocess.run(
                [sys.executable, "-m", "tests.bench.cache_bench", "--memory-child", side, tmp],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
                env=child_env(),
            )
            sides[side] = json.loads(out.stdout.strip().splitlines()[-1])
    cache, models = sides["cache"], sides["models"]
    return {
        "cache": cache,
        "client_models": models,
        "cache_heap_mb": cache["heap_mb"],
        "client_models_heap_mb": models["heap_mb"],
        "heap_ratio": round(models["heap_mb"] / cache["heap_mb"], 1),
        "rss_held_ratio": round(models["rss_held_mb"] / max(cache["rss_held_mb"], 0.1), 1),
    }


def _serve_fake(nodes: int, services: int, conn: Any) -> None:
    """Child process: the kube fake holding the cluster, so its work (building pages) does
    not share the benchmark's GIL, as a real API server would not."""
    fake = KubeFake()
    for obj in [item for group in objects.cluster(nodes, services) for item in group]:
        fake.upsert(obj)
    with KubeFakeServer(fake) as server:
        conn.send(server.url)
        conn.recv()  # until the parent is done


def bench_list_over_http(nodes: int, services: int) -> dict[str, Any]:
    import multiprocessing

    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(
        target=_serve_fake, args=(nodes, services, child), daemon=True
    )
    process.start()
    try:
        url = parent.recv()
        config = KubeConfig(host=url, read_timeout_sec=120)
        api = KubeApi(make_api_client(config), config)
        start = time.perf_counter()
        sizes = {
            r.value: len(list_all(api, r, m).items)
            for r, m in (
                (Resource.NODES, NodeList),
                (Resource.SERVICES, ServiceList),
                (Resource.KUBE_PROXY_PODS, PodList),
            )
        }
        seconds = time.perf_counter() - start
    finally:
        parent.send("done")
        process.join(timeout=30)
    return {"list_over_http_seconds": round(seconds, 2), "listed": sizes}


def bench_node_events(nodes: list[Any], count: int) -> dict[str, Any]:
    """Heartbeat-only changes (resourceVersion and conditions move) and taint changes (one in
    ten), through the reflector's event handling into the cache. A node keeps the taints it
    was given: a later heartbeat of it carries them, as the API would send it."""
    cache = ClusterCache("uid")
    cache.replace(Resource.NODES, NodeList.model_validate_json(list_bytes("Node", nodes)).items)
    fired: list[str] = []
    reflector = Reflector(None, Resource.NODES, cache, fired.append)  # type: ignore[arg-type]
    timings: dict[str, list[float]] = {"heartbeat": [], "taint": []}
    reconciles = {"heartbeat": 0, "taint": 0}
    taints: dict[int, list[dict[str, str]]] = {}
    lines: list[tuple[str, bytes]] = []
    for i in range(count):
        index = i % len(nodes)
        obj = json.loads(json.dumps(nodes[index]))
        obj["metadata"]["resourceVersion"] = str(10**6 + i)
        kind = "taint" if i % 10 == 0 else "heartbeat"
        obj["status"]["conditions"][3]["lastHeartbeatTime"] = f"2026-11-22T03:{i % 60:02d}:00Z"
        if kind == "taint":
            taints[index] = [
                {"key": "ToBeDeletedByClusterAutoscaler", "value": str(i), "effect": "NoSchedule"}
            ]
        if index in taints:
            obj["spec"]["taints"] = taints[index]
        lines.append((kind, json.dumps({"type": "MODIFIED", "object": obj}).encode()))
    started = time.perf_counter()
    for kind, line in lines:
        before = len(fired)
        start = time.perf_counter()
        reflector._handle(line)
        timings[kind].append(time.perf_counter() - start)
        reconciles[kind] += len(fired) - before
    elapsed = time.perf_counter() - started
    result: dict[str, Any] = {"node_events": count, "events_per_second": round(count / elapsed)}
    every = sorted(timings["heartbeat"] + timings["taint"])
    result["all_median_ms"] = round(statistics.median(every) * 1000, 3)
    result["all_p99_ms"] = round(_p99(every) * 1000, 3)
    for kind, values in timings.items():
        ordered = sorted(values)
        result[f"{kind}_events"] = len(ordered)
        result[f"{kind}_median_ms"] = round(statistics.median(ordered) * 1000, 3)
        result[f"{kind}_p99_ms"] = round(_p99(ordered) * 1000, 3)
        result[f"{kind}_reconciles"] = reconciles[kind]
    return result


def _p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * 0.99) - 1))]


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    if "cache_heap_mb" in figures:
        by_kind = ", ".join(f"{k}s {v} MB" for k, v in figures["cache"]["heap_mb_by_kind"].items())
        found += [
            target(
                "4.cache_mb",
                "4 memory: cache heap held (MB)",
                figures["cache_heap_mb"],
                "< 60",
                figures["cache_heap_mb"] < 60,
                f"{by_kind}: mostly pydantic model instances (~0.5 KB each, several nested "
                "per object), not the strings they hold",
            ),
            target(
                "4.ratio",
                "4 memory: client models / cache (heap)",
                figures["heap_ratio"],
                ">= 5",
                figures["heap_ratio"] >= 5,
            ),
        ]
    found.append(
        target(
            "5.heartbeats",
            "5 watch: reconciles caused by heartbeat-only changes",
            figures["heartbeat_reconciles"],
            "== 0",
            figures["heartbeat_reconciles"] == 0,
        )
    )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="watch cache benchmarks")
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-child", nargs=2, metavar=("SIDE", "DIR"), help=argparse.SUPPRESS)
    add_output_args(parser)
    args = parser.parse_args(argv)
    if args.memory_child:
        side, directory = args.memory_child
        print(json.dumps(memory_child(side, Path(directory))))
        return 0
    nodes, services, pods = objects.cluster(args.nodes, args.services)
    figures: dict[str, Any] = {"scenario": "4 memory, 5 watch throughput (and the cache's own)"}
    figures.update(bench_decode(nodes, services, pods))
    if not args.skip_memory:
        figures.update(bench_memory(nodes, services, pods))
    if not args.skip_http:
        figures.update(bench_list_over_http(args.nodes, args.services))
    figures.update(bench_node_events(nodes, args.events))
    figures["targets"] = targets(figures)
    return emit(figures, args.json, args.compare)


if __name__ == "__main__":
    raise SystemExit(main())
