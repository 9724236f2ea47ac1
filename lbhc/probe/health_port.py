"""One probe of a node's kube-proxy health port: the status of /healthz and /livez, or None
where nothing answered, and whether that was a refused connection (nothing listening) or a
timeout (which proves nothing). Decided on the status code only, never the body
(kubernetes pkg/proxy/healthcheck)."""

from __future__ import annotations

import http.client

from lbhc.model.cluster import HealthProbe

_MAX_BODY = 4096  # kube-proxy's bodies are tiny; never read an unbounded one


def get_status(host: str, port: int, path: str, timeout: float) -> int | None:
    return request_status(host, port, path, timeout)[0]


def request_status(host: str, port: int, path: str, timeout: float) -> tuple[int | None, bool]:
    """(status, refused): status None when nothing answered; refused True only when the
    connection was actively refused."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"User-Agent": "lbhc-kube-proxy-probe"})
        response = connection.getresponse()
        response.read(_MAX_BODY)
        return response.status, False
    except ConnectionRefusedError:
        return None, True
    except (OSError, http.client.HTTPException):  # timeouts, resets, garbage
        return None, False
    finally:
        connection.close()


def probe_health_port(address: str, port: int, timeout: float) -> HealthProbe:
    host = address.strip("[]")
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    healthz, refused = request_status(host, port, "/healthz", timeout)
    livez = request_status(host, port, "/livez", timeout)[0] if healthz is not None else None
    return HealthProbe(where, livez=livez, healthz=healthz, refused=refused)
