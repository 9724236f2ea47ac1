"""A real HTTP/1.1 server on 127.0.0.1 serving a KubeFake, for real clients over sockets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from lbhc.httpserver import Body, LoopbackServer

from .fake import KubeFake


class KubeFakeServer(LoopbackServer):
    def __init__(self, fake: KubeFake, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fake = fake

        def dispatch(
            method: str, path: str, headers: Mapping[str, str], body: bytes
        ) -> tuple[int, Mapping[str, str], Body]:
            response = fake.handle(method, path, dict(headers), body, self.stopping)
            payload = response.body if response.stream is None else response.stream
            return response.status, response.headers, payload

        super().__init__(dispatch, "kube-fake-server", host, port)

    def write_kubeconfig(self, path: str | os.PathLike[str], context: str = "lbhc-fake") -> Path:
        """Write a kubeconfig for this server (cluster, context and a user without
        credentials: the fake does not authenticate) and return its path. The server must be
        running: the file names its port."""
        target = Path(path)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
            "current-context": context,
            "preferences": {},
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        target.chmod(0o600)  # as kubectl writes kubeconfigs
        return target
