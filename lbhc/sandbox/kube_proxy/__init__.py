"""kube-proxy's health server (/healthz, /livez on 10256) emulated per node over real
loopback sockets, so health checks and probes in the sandbox hit what GCE would hit."""

from .behaviour import (
    CILIUM_HEALTHZ_BIND_KEY,
    HealthResponse,
    Version,
    drains,
    go_time_string,
    has_livez,
    reachable,
    respond,
    respond_cilium,
    rfc3339_nano,
)
from .fleet import KUBE_PROXY_PORT, KubeProxyFleet, image_version, node_eligible
from .server import KubeProxyServer, NodeState

__all__ = [
    "CILIUM_HEALTHZ_BIND_KEY",
    "KUBE_PROXY_PORT",
    "HealthResponse",
    "KubeProxyFleet",
    "KubeProxyServer",
    "NodeState",
    "Version",
    "drains",
    "go_time_string",
    "has_livez",
    "image_version",
    "node_eligible",
    "reachable",
    "respond",
    "respond_cilium",
    "rfc3339_nano",
]
