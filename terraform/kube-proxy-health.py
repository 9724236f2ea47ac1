#!/usr/bin/env python3
"""kube-proxy's health endpoints, imitated on a plain VM for lbhc's end-to-end suite.

Serves what kube-proxy 1.31 serves on 0.0.0.0:10256 (only the parts a cloud health checker
sees): /livez always 200; /healthz 200 unless this "node" is being deleted, then 503; any
other path 404. "Being deleted" is the instance metadata attribute lbhc-e2e-node-state set
to "deleting", which the suite flips instead of tainting a real Node.

Standard library only: it runs with the image's python3 and nothing installed. The
LBHC_E2E_* variables exist so tests can run this file locally against a fake metadata server.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

METADATA_URL = os.environ.get(
    "LBHC_E2E_METADATA_URL",
    "http://metadata.google.internal/computeMetadata/v1/instance/attributes/lbhc-e2e-node-state",
)
BIND = os.environ.get("LBHC_E2E_BIND", "0.0.0.0")
PORT = int(os.environ.get("LBHC_E2E_PORT", "10256"))
# Google's checkers probe every few seconds from several places; one metadata read a second
# is plenty and keeps the state change visible well inside one check interval.
CACHE_SECONDS = float(os.environ.get("LBHC_E2E_CACHE_SECONDS", "1.0"))
DELETING = "deleting"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class NodeState:
    """The metadata attribute, read at most once per CACHE_SECONDS."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = ""
        self._fetched_at = float("-inf")

    def _fetch(self) -> str:
        req = urllib.request.Request(METADATA_URL, headers={"Metadata-Flavor": "Google"})
        try:
            with urllib.request.urlopen(req, timeout=1.0) as resp:
                return resp.read().decode("utf-8", "replace").strip()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # attribute not set: an ordinary node
                return ""
            raise

    def eligible(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now - self._fetched_at >= CACHE_SECONDS:
                try:
                    value = self._fetch()
                except (OSError, ValueError) as exc:
                    # Keep the last answer: a metadata hiccup must not look like a drain.
                    log(f"metadata read failed, keeping {self._value!r}: {exc}")
                else:
                    if value != self._value:
                        log(f"node state {self._value!r} -> {value!r}")
                    self._value = value
                # Also on failure, so an unreachable server is retried once per interval.
                self._fetched_at = now
            return self._value != DELETING


STATE = NodeState()


def go_time(t: datetime) -> str:
    # kube-proxy before 1.33 prints Go's time.Time.String(), not RFC 3339; humans only.
    return t.strftime("%Y-%m-%d %H:%M:%S.%f +0000 UTC")


class Handler(BaseHTTPRequestHandler):
    server_version = "lbhc-e2e-kube-proxy-health"
    sys_version = ""

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        now = go_time(datetime.now(UTC))
        # The imitated proxier is always in sync, so lastUpdated is now.
        body: dict[str, object] = {"lastUpdated": now, "currentTime": now}
        if path == "/livez":
            code = 200
        elif path == "/healthz":
            eligible = STATE.eligible()
            body["nodeEligible"] = eligible
            code = 200 if eligible else 503
        else:
            # What Go's http.NotFound answers.
            self._send(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        self._send(code, json.dumps(body).encode(), "application/json")

    do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass  # a probe every few seconds from each checker would flood the journal


def main() -> None:
    server = ThreadingHTTPServer((BIND, PORT), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    # Tests bind port 0 and read the real port from this line.
    print(f"listening on {host}:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
