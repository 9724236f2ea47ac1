"""lbhc as a separate process with credentials on both sides: a kubeconfig whose user has a
bearer token, and Application Default Credentials from a Workload Identity metadata server
stand-in, both reaching the fakes over TLS through taps."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.controller.harness import PROJECT, REGION, World
from tests.security.canaries import GCE_ACCESS_TOKEN, KUBE_TOKEN
from tests.security.metadata import FakeMetadata
from tests.security.tap import Tap, self_signed
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Credentialed:
    """Where lbhc processes find the world, and the wire each side's requests crossed."""

    world: World
    kube_tap: Tap
    compute_tap: Tap
    metadata: FakeMetadata
    env: dict[str, str]
    kubeconfig: Path
    outputs: list[tuple[str, str]] = field(default_factory=list)  # (source, text) to scan

    def flags(self) -> list[str]:
        return [
            "--kubeconfig", str(self.kubeconfig), "--project", PROJECT, "--region", REGION,
            "--node-tags", "gke-node", "--gce-endpoint", self.compute_tap.url,
        ]  # fmt: skip

    def lbhc(self, *commands: tuple[str, ...], expect: int = 0) -> list[str]:
        """Run the commands side by side to completion, each with the flags; return their
        stderr. All output is kept for the scan."""
        procs = [self._start(command) for command in commands]
        errors = []
        for command, proc in zip(commands, procs, strict=True):
            out, err = proc.communicate(timeout=120)
            self.outputs += [(f"lbhc {' '.join(command)} stdout", out)]
            self.outputs += [(f"lbhc {' '.join(command)} stderr", err)]
            assert proc.returncode == expect, f"lbhc {' '.join(command)}: {err[-3000:]}"
            errors.append(err)
        return errors

    def _start(self, command: tuple[str, ...]) -> subprocess.Popen[str]:
        args = [sys.executable, "-m", "lbhc", *command, *self.flags()]
        pipe = subprocess.PIPE
        return subprocess.Popen(args, env=self.env, cwd=ROOT, stdout=pipe, stderr=pipe, text=True)


def kubeconfig(path: Path, server: str, ca: Path | None = None) -> Path:
    """A kubeconfig whose user authenticates with the canary bearer token."""
    cluster = {"server": server, **({"certificate-authority": str(ca)} if ca else {})}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": KUBE_TOKEN}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@contextmanager
def credentialed(world: World, tmp: Path) -> Iterator[Credentialed]:
    cert, key = self_signed(tmp)
    with ExitStack() as stack:
        kube_tap = stack.enter_context(Tap(world.kube_server.url, (cert, key)))
        compute_tap = stack.enter_context(Tap(world.compute_url, (cert, key)))
        metadata = stack.enter_context(
            FakeMetadata(GCE_ACCESS_TOKEN, PROJECT, f"lbhc@{PROJECT}.iam.gserviceaccount.com")
        )
        # Only what the process needs: no ambient Google or Kubernetes configuration.
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp),
            "CLOUDSDK_CONFIG": str(tmp / "gcloud"),
            "PYTHONPATH": str(ROOT),
            "REQUESTS_CA_BUNDLE": str(cert),
            "POD_NAME": "lbhc-canary-0",
            "LBHC_GCE_BACKOFF_INITIAL_SEC": "0.05",
            "LBHC_GCE_BACKOFF_MAX_SEC": "0.2",
            **metadata.env(),
        }
        path = kubeconfig(tmp / "kubeconfig", kube_tap.url, cert)
        yield Credentialed(world, kube_tap, compute_tap, metadata, env, path)


class Controller:
    """`lbhc run` in the background; its stderr read as it comes so the HTTP address is known."""

    def __init__(self, c: Credentialed, *extra: str) -> None:
        self._c = c
        args = [sys.executable, "-m", "lbhc", "run", *c.flags(), *extra]
        self.proc = subprocess.Popen(
            args, env=c.env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self._out: list[str] = []
        assert self.proc.stderr is not None and self.proc.stdout is not None
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stderr, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stdout, self._out), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line)

    def url(self) -> str:
        def found() -> str | None:
            assert self.proc.poll() is None, "".join(self.lines)[-3000:]
            for line in list(self.lines):
                match = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
                if match:
                    return match.group(1)
            return None

        url: str = wait_for(found, timeout=60, what="lbhc run to serve HTTP")
        return url

    def logged(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        for reader in self._readers:
            reader.join(timeout=10)
        self._c.outputs += [("lbhc run stderr", "".join(self.lines))]
        self._c.outputs += [("lbhc run stdout", "".join(self._out))]
        return code

    def json_lines(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.lines if line.startswith("{")]
