"""One HTTP health-check probe, as GCE sends it, for the fake's HealthProber: a legacy
httpHealthCheck's, or an HTTP-type healthCheck's (its httpHealthCheck object)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

USER_AGENT = "GoogleHC/1.0"  # what GCE's legacy checkers send
_BODY_CAP = 64 * 1024  # response bytes read after the headers; the rest is dropped


@dataclass(frozen=True)
class CheckConfig:
    """What one probe of a check needs, durations already scaled."""

    host: str
    port: int
    path: str
    interval: float
    timeout: float
    healthy: int
    unhealthy: int

    @classmethod
    def of(cls, check: dict[str, Any], scale: float) -> CheckConfig:
        return cls(
            host=str(check.get("host") or ""),
            port=int(check.get("port", 80)),
            path=str(check.get("requestPath") or "/"),
            interval=float(check.get("checkIntervalSec", 5)) * scale,
            timeout=float(check.get("timeoutSec", 5)) * scale,
            healthy=int(check.get("healthyThreshold", 2)),
            unhealthy=int(check.get("unhealthyThreshold", 2)),
        )

    @classmethod
    def of_health_check(cls, check: dict[str, Any], scale: float) -> CheckConfig | None:
        """A non-legacy check's, if it is of type HTTP with a fixed port; else None (the
        prober sends only HTTP GETs)."""
        http = check.get("httpHealthCheck") or {}
        if check.get("type") != "HTTP" or "port" not in http:
            return None
        return cls.of({**check, **http}, scale)


async def probe_http(target: tuple[str, int], config: CheckConfig) -> bool:
    """True if `GET path` on target answers 200, headers and body, within the timeout."""
    try:
        return await asyncio.wait_for(_get(target, config), config.timeout)
    except (OSError, EOFError, ValueError, TimeoutError, asyncio.LimitOverrunError):
        return False


async def _get(target: tuple[str, int], config: CheckConfig) -> bool:
    host, port = target
    host_header = config.host or (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    reader, writer = await asyncio.open_connection(host, port)
    try:
        request = (
            f"GET {config.path} HTTP/1.1\r\nHost: {host_header}\r\n"
            f"User-Agent: {USER_AGENT}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        )
        writer.write(request.encode("latin-1"))
        await writer.drain()
        status = (await reader.readline()).split(None, 2)
        ok = len(status) >= 2 and status[0].startswith(b"HTTP/") and status[1] == b"200"
        length: int | None = None
        while (line := await reader.readline()) not in (b"\r\n", b"\n"):
            if not line:
                return False  # closed before the headers ended
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is not None:
            await reader.readexactly(min(length, _BODY_CAP))
        else:  # no length: the body ends when the server closes (we asked it to)
            left = _BODY_CAP
            while left > 0 and (chunk := await reader.read(min(left, 16384))):
                left -= len(chunk)
        return ok
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
