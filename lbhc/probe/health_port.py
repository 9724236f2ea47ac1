"""One probe of a node's kube-proxy health port: the status of /healthz and /livez, or None
where nothing answered. Decided on the status code only, never the body (reference.md 1)."""

from __future__ import annotations

import http.client

from lbhc.model.cluster import HealthProbe

_MAX_BODY = 4096  # kube-proxy's bodies are tiny; never read an unbounded one


def get_status(host: str, port: int, path: str, timeout: float) -> int | None:
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"User-Agent": "lbhc-kube-proxy-probe"})
        response = connection.getresponse()
        response.read(_MAX_BODY)
        return response.status
    except (OSError, http.client.HTTPException):  # TimeoutError is an OSError
        return None
    finally:
        connection.close()


def probe_health_port(address: str, port: int, timeout: float) -> HealthProbe:
    host = address.strip("[]")
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    healthz = get_status(host, port, "/healthz", timeout)
    livez = get_status(host, port, "/livez", timeout) if healthz is not None else None
    return HealthProbe(where, livez=livez, healthz=healthz)
