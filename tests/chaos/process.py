"""`lbhc run` as a real, separate process against fakes served by the test process.

A real process is what makes SIGKILL real: no finally block, no lease release, requests cut
mid-flight. `ProcessGroup` kills every process it started when the `with` block ends, so a
failing test leaves no orphan behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[2]
_SERVING = "serving /healthz, /readyz and /metrics on "


@dataclass(frozen=True)
class RunFlags:
    """The flags and LBHC_* settings of one `lbhc run`; durations as the CLI takes them."""

    project: str
    region: str
    node_tags: str = "gke-node"
    leader_elect: bool = True
    lease_duration: str = "3s"
    renew_deadline: str = "2s"
    retry_period: str = "250ms"
    lease_namespace: str = "lbhc-system"
    resync_period: str = "2s"
    settings: Mapping[str, str] = field(default_factory=dict)  # LBHC_* environment

    def argv(self, kubeconfig: Path, compute_url: str) -> list[str]:
        return [
            *("--kubeconfig", str(kubeconfig), "--gce-endpoint", compute_url),
            *("--project", self.project, "--region", self.region, "--node-tags", self.node_tags),
            *("--http-address", "127.0.0.1:0", "--resync-period", self.resync_period),
            f"--leader-elect={str(self.leader_elect).lower()}",
            *("--leader-elect-resource-namespace", self.lease_namespace),
            *("--leader-elect-lease-duration", self.lease_duration),
            *("--leader-elect-renew-deadline", self.renew_deadline),
            *("--leader-elect-retry-period", self.retry_period),
        ]


class LbhcProcess:
    """One `lbhc run` process; its JSON log goes to a file (a pipe nobody reads would fill
    and block it)."""

    def __init__(self, identity: str, popen: subprocess.Popen[bytes], log_path: Path) -> None:
        self.identity = identity
        self.popen = popen
        self.log_path = log_path
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill9(self) -> None:
        """SIGKILL and reap; safe to call from any thread, and again."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=30)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM (a clean stop releases the Lease); SIGKILL if it does not stop in time."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                return self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill9()
        return self.popen.wait()

    def records(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        out: list[dict[str, Any]] = []
        for line in lines:
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue  # a line cut by SIGKILL
        return out

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def http_url(self) -> str | None:
        """The /healthz, /readyz, /metrics, /plan server (it logs the port it picked)."""
        for record in self.records():
            message = str(record.get("msg", ""))
            if message.startswith(_SERVING):
                return message.removeprefix(_SERVING).strip()
        return None

    def get(self, path: str) -> tuple[int, bytes]:
        """GET from its HTTP server; (0, b"") while it is not serving yet."""
        url = self.http_url()
        if url is None:
            return 0, b""
        try:
            with urllib.request.urlopen(url + path, timeout=5) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except OSError:
            return 0, b""

    def last_plan(self) -> dict[str, Any] | None:
        status, body = self.get("/plan")
        if status != 200:
            return None
        plan: dict[str, Any] = json.loads(body)
        return plan


class ProcessGroup:
    """Starts `lbhc run` processes against one kube-apiserver and one Compute endpoint, and
    kills every one still running when the block ends."""

    def __init__(self, log_dir: Path, kubeconfig: Path, compute_url: str) -> None:
        self.log_dir = log_dir
        self.kubeconfig = kubeconfig
        self.compute_url = compute_url
        self.processes: list[LbhcProcess] = []

    def start(self, identity: str, flags: RunFlags) -> LbhcProcess:
        # Inherited LBHC_* variables are settings of the test run, not of this process.
        env = {k: v for k, v in os.environ.items() if not k.startswith("LBHC_")}
        env.update(PYTHONPATH=str(ROOT), POD_NAME=identity, **flags.settings)
        log_path = self.log_dir / f"{identity}-{len(self.processes)}.log"
        command = [
            sys.executable,
            "-m",
            "lbhc",
            "run",
            *flags.argv(self.kubeconfig, self.compute_url),
        ]
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        process = LbhcProcess(identity, popen, log_path)
        self.processes.append(process)
        return process

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for process in self.processes:
            if process.alive():
                process.kill9()
