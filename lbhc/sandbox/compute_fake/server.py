"""A real HTTP/1.1 server on 127.0.0.1 serving a ComputeFake (for real clients over sockets)."""

from __future__ import annotations

from collections.abc import Mapping

from lbhc.sandbox.streaming import StreamingServer

from .fake import ComputeFake


class ComputeFakeServer(StreamingServer):
    def __init__(self, fake: ComputeFake, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fake = fake

        def dispatch(
            method: str, path: str, headers: Mapping[str, str], body: bytes
        ) -> tuple[int, Mapping[str, str], bytes]:
            return fake.handle(method, path, None, dict(headers), body)

        super().__init__(dispatch, "compute-fake-server", host, port)
