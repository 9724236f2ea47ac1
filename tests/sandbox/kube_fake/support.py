"""Helpers for the fake's tests: raw requests with exact bodies, watch streams read with
deadlines, and the real kubectl pointed at a server through the kubeconfig it writes."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFakeServer

# -- watches --------------------------------------------------------------------------------


class WatchStream:
    """A raw watch response read on a thread into parsed events, so a test waits on each
    event with a deadline instead of sleeping (and never hangs on a silent stream)."""

    def __init__(self, response: Any) -> None:
        self._response = response
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._ended = threading.Event()
        self.error: BaseException | None = None  # set when the stream was cut, not ended
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        buffer = b""
        try:
            for chunk in self._response.stream(decode_content=False):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._events.put(json.loads(line))
        except Exception as exc:  # the connection was cut mid-stream
            self.error = exc
        finally:
            self._ended.set()

    def next(self, timeout: float = 5.0) -> dict[str, Any]:
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            state = "ended" if self._ended.is_set() else "still open"
            raise AssertionError(f"no watch event within {timeout}s (stream {state})") from None

    def next_non_bookmark(self, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            event = self.next(max(deadline - time.monotonic(), 0.01))
            if event["type"] != "BOOKMARK":
                return event

    def wait_end(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Wait for the stream to end; the events not read yet."""
        assert self._ended.wait(timeout), f"the watch did not end within {timeout}s"
        rest: list[dict[str, Any]] = []
        while not self._events.empty():
            rest.append(self._events.get_nowait())
        return rest

    def close(self) -> None:
        if not self._ended.is_set():
            # Unblocks the reading thread (urllib3 >= 2.3); it may end meanwhile.
            with contextlib.suppress(RuntimeError, OSError, ValueError):
                self._response.shutdown()
        self._response.close()
        self._ended.wait(5)


WATCH_TIMEOUT = (5, 10)  # connect, read: a silent stream fails the test instead of hanging it


def object_names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def request(
    server: KubeFakeServer,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
) -> tuple[int, dict[str, Any]]:
    """One raw request with an exact JSON body (the client's models would reformat it):
    (status, decoded body)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def kubectl(server: KubeFakeServer, directory: Path, *args: str) -> str:
    """Run the real kubectl against `server` through the kubeconfig it writes; its stdout.
    Fails the test with kubectl's stderr on a non-zero exit."""
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed: cannot check the fake against a real kubectl")
    kubeconfig = server.write_kubeconfig(directory / "kubeconfig")
    env = {**os.environ, "HOME": str(directory), "KUBECONFIG": str(kubeconfig)}
    result = subprocess.run(
        [binary, "--cache-dir", str(directory / "cache"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout
