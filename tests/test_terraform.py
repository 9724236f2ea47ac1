"""terraform/: the e2e test project. Checks that need no cloud and no provider download:
the controller role matches the code, the outputs the e2e suite reads exist, no key is ever
minted, the files are formatted, and the health server the node VMs run behaves like
kube-proxy (run here against a fake metadata server)."""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from lbhc.gce.permissions import required_permissions
from tests import waiting
from tests.e2e.gcp import Outputs

TF_DIR = Path(__file__).resolve().parent.parent / "terraform"
SERVER = TF_DIR / "kube-proxy-health.py"
TEMPLATE = TF_DIR / "node-startup.sh.tftpl"
NODE_STATE_KEY = "lbhc-e2e-node-state"

# What tests/e2e reads from `terraform output -json`: one list, the suite's own.
SUITE_OUTPUTS = {field.name for field in dataclasses.fields(Outputs)}

TERRAFORM = shutil.which("terraform")
needs_terraform = pytest.mark.skipif(TERRAFORM is None, reason="terraform is not installed")


def tf_sources() -> str:
    return "\n".join(p.read_text() for p in sorted(TF_DIR.glob("*.tf")))


def run_terraform(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert TERRAFORM is not None
    # No CLI config, no checkpoint call home: only local work.
    env = {**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "CHECKPOINT_DISABLE": "1"}
    return subprocess.run(
        [TERRAFORM, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


# --- the module's text ---------------------------------------------------------------------


def test_controller_role_holds_exactly_the_permissions_the_code_declares() -> None:
    listed = json.loads((TF_DIR / "controller-permissions.json").read_text())
    assert listed == list(required_permissions())  # same set, sorted, no duplicates


def test_controller_role_reads_the_permissions_file() -> None:
    assert 'jsondecode(file("${path.module}/controller-permissions.json"))' in tf_sources()


def test_every_output_the_suite_reads_is_declared() -> None:
    declared = set(re.findall(r'^output\s+"([^"]+)"', tf_sources(), re.MULTILINE))
    assert declared == SUITE_OUTPUTS


def test_node_state_key_is_the_same_everywhere() -> None:
    assert f'node_state_metadata_key = "{NODE_STATE_KEY}"' in tf_sources()
    assert f'metadata["{NODE_STATE_KEY}"]' in tf_sources()  # the ignore_changes entry
    assert f'/instance/attributes/{NODE_STATE_KEY}"' in SERVER.read_text()


def test_no_service_account_key_is_ever_created() -> None:
    assert "google_service_account_key" not in tf_sources()


@needs_terraform
def test_terraform_files_are_formatted() -> None:
    result = run_terraform("fmt", "-check", "-recursive", "-diff", str(TF_DIR), cwd=TF_DIR)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_terraform
def test_startup_script_renders_to_valid_bash_embedding_the_server(tmp_path: Path) -> None:
    # templatefile() needs no provider, so a scratch directory renders it offline.
    expr = (
        f'base64encode(templatefile("{TEMPLATE}", {{ server_py = file("{SERVER}"), '
        f'port = 10256, metadata_key = "{NODE_STATE_KEY}" }}))'
    )
    result = subprocess.run(
        [TERRAFORM or "terraform", "console"],
        input=expr,
        cwd=tmp_path,
        env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "CHECKPOINT_DISABLE": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    script = base64.b64decode(json.loads(result.stdout.strip())).decode()

    syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr

    embedded = re.search(r"<<'LBHC_E2E_PY'\n(.*?\n)LBHC_E2E_PY\n", script, re.DOTALL)
    assert embedded is not None
    assert embedded.group(1) == SERVER.read_text()  # byte for byte what the tests below run
    assert "Environment=LBHC_E2E_PORT=10256\n" in script
    assert f"computeMetadata/v1/instance/attributes/{NODE_STATE_KEY}\n" in script
    assert "Restart=always\n" in script


def test_server_cannot_end_the_startup_scripts_heredoc_early() -> None:
    assert "LBHC_E2E_PY" not in SERVER.read_text().splitlines()


# --- the health server the node VMs run ----------------------------------------------------


class FakeMetadata:
    """The GCE metadata server's one attribute: absent, a value, or failing."""

    def __init__(self) -> None:
        self.value: str | None = None
        self.failing = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.headers.get("Metadata-Flavor") != "Google":
                    self._reply(403, "Missing Metadata-Flavor:Google header.")
                elif outer.failing:
                    self._reply(500, "oops")
                elif outer.value is None or self.path != urlsplit(outer.url).path:
                    self._reply(404, "not found")
                else:
                    self._reply(200, outer.value)

            def _reply(self, code: int, text: str) -> None:
                body = text.encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = (
            f"http://127.0.0.1:{self.port}/computeMetadata/v1/instance/attributes/{NODE_STATE_KEY}"
        )
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Node:
    def __init__(self, port: int, metadata: FakeMetadata) -> None:
        self.port = port
        self.metadata = metadata

    def get(self, path: str, method: str = "GET") -> tuple[int, http.client.HTTPMessage, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request(method, path)
            resp = conn.getresponse()
            return resp.status, resp.headers, resp.read()
        finally:
            conn.close()

    def wait_for(self, path: str, status: int, within: float = 5.0) -> None:
        got: list[int] = []

        def answers() -> bool:
            got.append(self.get(path)[0])
            return got[-1] == status

        waiting.wait_for(
            answers, within, lambda: f"{path} to answer {status}; it stayed {got[-1]}", every=0.05
        )


@pytest.fixture
def node() -> Iterator[Node]:
    metadata = FakeMetadata()
    env = {
        **os.environ,
        "LBHC_E2E_BIND": "127.0.0.1",
        "LBHC_E2E_PORT": "0",
        "LBHC_E2E_METADATA_URL": metadata.url,
        "LBHC_E2E_CACHE_SECONDS": "0.1",
    }
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.fullmatch(r"listening on 127\.0\.0\.1:(\d+)\n", line)
        if not match:
            proc.kill()
            pytest.fail(f"server said {line!r}, stderr: {proc.communicate(timeout=10)[1]}")
        yield Node(int(match.group(1)), metadata)
    finally:
        proc.kill()
        proc.communicate(timeout=10)
        metadata.close()


def test_livez_is_200_json_without_node_eligibility(node: Node) -> None:
    status, headers, body = node.get("/livez")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert set(json.loads(body)) == {"lastUpdated", "currentTime"}


def test_healthz_is_200_while_the_attribute_is_unset(node: Node) -> None:
    status, headers, body = node.get("/healthz")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert json.loads(body)["nodeEligible"] is True
    assert set(json.loads(body)) == {"lastUpdated", "currentTime", "nodeEligible"}


def test_healthz_fails_while_deleting_and_recovers_livez_unaffected(node: Node) -> None:
    node.metadata.value = "serving"
    node.wait_for("/healthz", 200)

    node.metadata.value = "deleting"
    node.wait_for("/healthz", 503)
    status, headers, body = node.get("/healthz")
    assert (status, json.loads(body)["nodeEligible"]) == (503, False)
    assert headers["Content-Type"] == "application/json"
    assert node.get("/livez")[0] == 200  # liveness ignores eligibility, as in kube-proxy

    node.metadata.value = "serving"
    node.wait_for("/healthz", 200)


def test_a_metadata_outage_keeps_the_last_state(node: Node) -> None:
    node.metadata.value = "deleting"
    node.wait_for("/healthz", 503)
    node.metadata.failing = True
    time.sleep(0.3)  # several cache periods
    assert node.get("/healthz")[0] == 503
    node.metadata.failing = False
    node.metadata.value = None  # attribute removed: an ordinary node again
    node.wait_for("/healthz", 200)


@pytest.mark.parametrize("path", ["/", "/metrics", "/healthz/", "/livez/x", "/readyz"])
def test_other_paths_are_404(node: Node, path: str) -> None:
    status, headers, _ = node.get(path)
    assert status == 404
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_query_strings_are_ignored_and_head_has_no_body(node: Node) -> None:
    assert node.get("/healthz?verbose=1")[0] == 200
    status, headers, body = node.get("/healthz", method="HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) > 0
