"""A real HTTP/1.1 server on 127.0.0.1 serving a KubeFake, for real clients over sockets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Self

import yaml

from lbhc.sandbox.streaming import Body, StreamingServer

from .fake import KubeFake


class KubeFakeServer(StreamingServer):
    """`name` labels what this server takes in the fake's journal and lets faults single it
    out: several servers over one fake are an HA apiserver's fronts, one per client."""

    def __init__(
        self, fake: KubeFake, host: str = "127.0.0.1", port: int = 0, *, name: str = ""
    ) -> None:
        self.fake = fake
        self.name = name
        self._bind = (host, port)  # the port actually bound, once started

        def dispatch(
            method: str, path: str, headers: Mapping[str, str], body: bytes
        ) -> tuple[int, Mapping[str, str], Body]:
            response = fake.handle(method, path, dict(headers), body, self.stopping, name)
            if response.drop:
                # Out of the handler: the connection closes with no status line at all.
                raise ConnectionResetError("fault: connection closed unanswered")
            payload = response.body if response.stream is None else response.stream
            return response.status, response.headers, payload

        super().__init__(dispatch, f"kube-fake-server{'-' + name if name else ''}", host, port)

    def start(self) -> Self:
        super().start()
        self._bind = (self._bind[0], int(self.url.rsplit(":", 1)[1]))
        return self

    def restarted(self) -> KubeFakeServer:
        """This server, stopped, back on the same port (an apiserver restart) as a new
        server: clients configured with the old URL reach it again."""
        self.stop()
        host, port = self._bind
        return type(self)(self.fake, host, port, name=self.name).start()

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
