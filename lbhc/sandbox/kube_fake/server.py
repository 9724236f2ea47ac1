"""A real HTTP/1.1 server on 127.0.0.1 serving a KubeFake, for real clients over sockets."""

from __future__ import annotations

from collections.abc import Mapping

from ..loopback import LoopbackServer
from .fake import KubeFake


class KubeFakeServer(LoopbackServer):
    def __init__(self, fake: KubeFake, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fake = fake

        def dispatch(
            method: str, path: str, headers: Mapping[str, str], body: bytes
        ) -> tuple[int, Mapping[str, str], bytes]:
            response = fake.handle(method, path, dict(headers))
            return response.status, response.headers, response.body

        super().__init__(dispatch, "kube-fake-server", host, port)
