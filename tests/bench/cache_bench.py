"""Benchmarks for the watch cache (issue 3's numbers). Run: `make bench`.

1. Initial list and decode of 5,000 Nodes, 10,000 Services, 5,000 kube-proxy Pods: decode
   alone from the raw list bytes, and end to end through KubeApi over HTTP from the kube fake.
2. Heap held by the cache, next to the same objects decoded into the kubernetes client's
   models (tracemalloc, after the raw bytes are freed), and the ratio.
3. Node watch events: median and p99 processing time per event (decode + cache), for
   heartbeat-only and taint changes, and how many reconciles they trigger.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lbhc.controller.cache import ClusterCache
from lbhc.controller.reflector import Reflector
from lbhc.kube.client import KubeApi, KubeConfig, Resource, list_all, make_api_client
from lbhc.kube.decode import NodeList, PodList, ServiceList
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.bench import objects
from tests.bench.report import emit


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


def held(build: Callable[[], Any]) -> tuple[Any, int, float]:
    """(result, bytes still allocated after build, seconds)."""
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    result = build()
    seconds = time.perf_counter() - start
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, current, seconds


def bench_decode_and_memory(
    nodes: list[Any], services: list[Any], pods: list[Any]
) -> dict[str, Any]:
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

    def build_cache() -> ClusterCache:
        cache = ClusterCache("uid")
        cache.replace(Resource.NODES, NodeList.model_validate_json(raw["Node"]).items)
        cache.replace(Resource.SERVICES, ServiceList.model_validate_json(raw["Service"]).items)
        cache.replace(Resource.KUBE_PROXY_PODS, PodList.model_validate_json(raw["Pod"]).items)
        return cache

    cache, cache_bytes, _ = held(build_cache)
    del cache

    from kubernetes import client

    api = client.ApiClient()

    def build_models() -> tuple[Any, ...]:
        return (
            api.deserialize(raw["Node"].decode(), "V1NodeList", "application/json"),
            api.deserialize(raw["Service"].decode(), "V1ServiceList", "application/json"),
            api.deserialize(raw["Pod"].decode(), "V1PodList", "application/json"),
        )

    models, model_bytes, model_seconds = held(build_models)
    del models
    return {
        "objects": len(nodes) + len(services) + len(pods),
        "raw_mb": round(sum(len(b) for b in raw.values()) / 1e6, 1),
        "decode_seconds": round(decode_seconds, 2),
        "client_models_decode_seconds": round(model_seconds, 2),
        "cache_heap_mb": round(cache_bytes / 1e6, 1),
        "client_models_heap_mb": round(model_bytes / 1e6, 1),
        "heap_ratio": round(model_bytes / cache_bytes, 1),
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
    cache = ClusterCache("uid")
    cache.replace(Resource.NODES, NodeList.model_validate_json(list_bytes("Node", nodes)).items)
    fired: list[str] = []
    reflector = Reflector(None, Resource.NODES, cache, fired.append)  # type: ignore[arg-type]
    timings: dict[str, list[float]] = {"heartbeat": [], "taint": []}
    reconciles = {"heartbeat": 0, "taint": 0}
    for i in range(count):
        obj = json.loads(json.dumps(nodes[i % len(nodes)]))
        obj["metadata"]["resourceVersion"] = str(10**6 + i)
        kind = "taint" if i % 10 == 0 else "heartbeat"
        obj["status"]["conditions"][3]["lastHeartbeatTime"] = f"2026-11-22T03:{i % 60:02d}:00Z"
        if kind == "taint":
            obj["spec"]["taints"] = [
                {"key": "ToBeDeletedByClusterAutoscaler", "value": str(i), "effect": "NoSchedule"}
            ]
        line = json.dumps({"type": "MODIFIED", "object": obj}).encode()
        before = len(fired)
        start = time.perf_counter()
        reflector._handle(line)
        timings[kind].append(time.perf_counter() - start)
        reconciles[kind] += len(fired) - before
    result: dict[str, Any] = {"node_events": count}
    for kind, values in timings.items():
        ordered = sorted(values)
        result[f"{kind}_median_ms"] = round(statistics.median(ordered) * 1000, 3)
        result[f"{kind}_p99_ms"] = round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3)
        result[f"{kind}_reconciles"] = reconciles[kind]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="watch cache benchmarks")
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    nodes, services, pods = objects.cluster(args.nodes, args.services)
    figures: dict[str, Any] = {}
    figures.update(bench_decode_and_memory(nodes, services, pods))
    if not args.skip_http:
        figures.update(bench_list_over_http(args.nodes, args.services))
    figures.update(bench_node_events(nodes, args.events))
    return emit(figures, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
