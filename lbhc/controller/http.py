"""/healthz and /livez (the process is alive), /readyz (caches synced and GCE reachable),
/metrics, and /plan (the last plan, as `lbhc plan --output json` prints it: what a dry run
exports; names, reasons and diffs, never a credential). Nothing else: other paths are 404,
other methods 405, request bodies are never read (see Exposed)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from lbhc.controller.metrics import Metrics
from lbhc.httpserver import Exposed, LoopbackServer

# On every answer: no content sniffing, no caching by anything in between.
_COMMON = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
_TEXT = {**_COMMON, "Content-Type": "text/plain; charset=utf-8"}
LIMITS = Exposed()  # GET and HEAD; 10 s to send a request's headers, 10 s per write


def health_server(
    address: str,
    metrics: Metrics,
    ready: Callable[[], tuple[bool, str]],
    last_plan: Callable[[], dict[str, Any] | None] = lambda: None,
    exposed: Exposed = LIMITS,
) -> LoopbackServer:
    """`address` is HOST:PORT; port 0 picks a free one (read it back from .url)."""
    host, _, port = address.rpartition(":")

    def dispatch(
        method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        # Exact paths only: no normalisation, so /healthz/../metrics or //plan are 404.
        route = path.split("?", 1)[0]
        if route in ("/healthz", "/livez"):
            return 200, _TEXT, b"ok\n"
        if route == "/readyz":
            ok, why = ready()
            return (200 if ok else 503), _TEXT, (why + "\n").encode()
        if route == "/plan":
            plan = last_plan()
            if plan is None:
                return 503, _TEXT, b"no pass has completed yet\n"
            return 200, {**_COMMON, "Content-Type": "application/json"}, json.dumps(plan).encode()
        if route == "/metrics":
            content = {**_COMMON, "Content-Type": CONTENT_TYPE_LATEST}
            return 200, content, generate_latest(metrics.registry)
        return 404, _TEXT, b"not found\n"

    bind = host.strip("[]") or "0.0.0.0"
    return LoopbackServer(dispatch, "lbhc-http", bind, int(port), exposed=exposed)
