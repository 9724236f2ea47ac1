"""/healthz (the process is alive), /readyz (caches synced and GCE reachable), /metrics, and
/plan (the last plan, as `lbhc plan --output json` prints it: what a dry run exports)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from lbhc.controller.metrics import Metrics
from lbhc.httpserver import LoopbackServer


def health_server(
    address: str,
    metrics: Metrics,
    ready: Callable[[], tuple[bool, str]],
    last_plan: Callable[[], dict[str, Any] | None] = lambda: None,
) -> LoopbackServer:
    """`address` is HOST:PORT; port 0 picks a free one (read it back from .url)."""
    host, _, port = address.rpartition(":")
    text = {"Content-Type": "text/plain; charset=utf-8"}

    def dispatch(
        method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        route = path.split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, text, b"method not allowed\n"
        if route in ("/healthz", "/livez"):
            return 200, text, b"ok\n"
        if route == "/readyz":
            ok, why = ready()
            return (200 if ok else 503), text, (why + "\n").encode()
        if route == "/plan":
            plan = last_plan()
            if plan is None:
                return 503, text, b"no pass has completed yet\n"
            return 200, {"Content-Type": "application/json"}, json.dumps(plan).encode()
        if route == "/metrics":
            return 200, {"Content-Type": CONTENT_TYPE_LATEST}, generate_latest(metrics.registry)
        return 404, text, b"not found\n"

    return LoopbackServer(dispatch, "lbhc-http", host.strip("[]") or "0.0.0.0", int(port))
