"""A stand-in for the GKE metadata server (Workload Identity): what google-auth's Application
Default Credentials ask it for, with a canary access token. Point a process at it with
GCE_METADATA_HOST and GCE_METADATA_IP (`env()`); it refuses requests without the
Metadata-Flavor header, as the real one does."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

from lbhc.sandbox.streaming import StreamingServer

_ROOT = "/computeMetadata/v1/"
_ACCOUNT = "instance/service-accounts/default/"


class FakeMetadata(StreamingServer):
    def __init__(self, access_token: str, project: str, email: str) -> None:
        self.tokens_served = 0
        self._lock = threading.Lock()
        answers: dict[str, object] = {
            "project/project-id": project,
            _ACCOUNT: {"aliases": ["default"], "email": email, "scopes": ["cloud-platform"]},
            _ACCOUNT + "email": email,
            _ACCOUNT + "token": {
                "access_token": access_token,
                "expires_in": 3599,
                "token_type": "Bearer",
            },
        }

        def dispatch(
            method: str, target: str, headers: Mapping[str, str], body: bytes
        ) -> tuple[int, Mapping[str, str], bytes]:
            flavor = {"Metadata-Flavor": "Google"}
            if {k.lower(): v for k, v in headers.items()}.get("metadata-flavor") != "Google":
                return 403, {}, b"Missing Metadata-Flavor:Google header.\n"
            path = urlsplit(target).path
            if path == "/":  # google-auth's "am I on GCE?" ping
                return 200, flavor, b""
            answer = answers.get(path.removeprefix(_ROOT))
            if answer is None:
                return 404, flavor, b"not found\n"
            if path.endswith("/token"):
                with self._lock:
                    self.tokens_served += 1
            text = answer if isinstance(answer, str) else json.dumps(answer)
            content = "text/plain" if isinstance(answer, str) else "application/json"
            return 200, {**flavor, "Content-Type": content}, text.encode()

        super().__init__(dispatch, "fake-metadata")

    def env(self) -> dict[str, str]:
        host = self.url.removeprefix("http://")
        return {"GCE_METADATA_HOST": host, "GCE_METADATA_IP": host}
