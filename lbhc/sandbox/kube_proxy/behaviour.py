"""What kube-proxy's health server answers, version by version, as a pure function.

Ground truth for the sandbox, so it is written from upstream's handlers
(kubernetes/kubernetes pkg/proxy/healthcheck: healthcheck.go before 1.28, proxier_health.go
1.28-1.32, proxy_health.go from 1.33) and deliberately shares no code with lbhc's planner:
an emulator that reused the code under test would agree with its bugs.

Cilium's kube-proxy replacement answers too (respond_cilium), from cilium
daemon/healthz/kube_proxy_healthz.go: a server only when its healthz bind address is set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

Version = tuple[int, int, int]

# 1.7.0/1.7.1 bound the health server to 127.0.0.1 (kubernetes#48600): nothing outside the
# node, a cloud health checker included, can reach it before 1.7.2.
FIRST_REACHABLE: Version = (1, 7, 2)
LIVEZ_SINCE: Version = (1, 28, 0)  # KEP-3836, kubernetes#116470
DRAIN_GATE_SINCE: Version = (1, 28, 0)  # KubeProxyDrainingTerminatingNodes: alpha, off
DRAIN_DEFAULT_SINCE: Version = (1, 30, 0)  # beta, on by default (can still be turned off)
DRAIN_LOCKED_SINCE: Version = (1, 31, 0)  # GA: locked on, gate removed in 1.33
JSON_BODY_SINCE: Version = (1, 33, 0)  # json.Marshal(ProxyHealth), RFC 3339 times

HEALTHZ, LIVEZ = "/healthz", "/livez"
IP_FAMILY = "IPv4"  # the emulated proxier is single-stack

_JSON_HEADERS: Mapping[str, str] = {
    "Content-Type": "application/json",
    "X-Content-Type-Options": "nosniff",
}
# Go's http.NotFound, which ServeMux answers for every unregistered path.
_NOT_FOUND_HEADERS: Mapping[str, str] = {
    "Content-Type": "text/plain; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
}
_NOT_FOUND_BODY = b"404 page not found\n"


@dataclass(frozen=True)
class HealthResponse:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""


def reachable(version: Version) -> bool:
    """Whether a health checker outside the node can reach this version's health server."""
    return version >= FIRST_REACHABLE


def has_livez(version: Version) -> bool:
    return version >= LIVEZ_SINCE


def drains(version: Version, draining_gate: bool | None = None) -> bool:
    """Whether /healthz fails on a node being deleted. `draining_gate` is the
    KubeProxyDrainingTerminatingNodes setting; None means the version's default."""
    if version < DRAIN_GATE_SINCE:
        return False  # the node informer never fed the health server before 1.28
    if version >= DRAIN_LOCKED_SINCE:
        return True
    if version >= DRAIN_DEFAULT_SINCE:
        return draining_gate is not False
    return draining_gate is True


def respond(
    path: str,
    version: Version,
    *,
    node_eligible: bool,
    proxier_healthy: bool,
    now: datetime,
    last_updated: datetime,
    draining_gate: bool | None = None,
) -> HealthResponse:
    """The answer of kube-proxy `version` to GET `path` (the URL path, query ignored as Go's
    ServeMux does). `node_eligible` is the Node's truth (no deletionTimestamp, no
    ToBeDeletedByClusterAutoscaler taint); whether this version acts on it is decided here.
    `last_updated` is when the proxier last synced; a healthy answer reports `now` instead,
    as upstream does for compatibility. ValueError for a version with no reachable server."""
    if not reachable(version):
        raise ValueError(f"kube-proxy {_display(version)} serves no reachable health endpoint")
    path = path.split("?", 1)[0]
    if path == LIVEZ and has_livez(version):
        return _answer(version, proxier_healthy, None, now, last_updated)
    if path == HEALTHZ:
        # Without draining the health server never hears of the Node: it stays "eligible".
        seen_eligible = node_eligible or not drains(version, draining_gate)
        eligible_field = seen_eligible if version >= LIVEZ_SINCE else None
        healthy = proxier_healthy and seen_eligible
        return _answer(version, healthy, eligible_field, now, last_updated, proxier_healthy)
    return HealthResponse(404, dict(_NOT_FOUND_HEADERS), _NOT_FOUND_BODY)


# cilium-config's key for the address Cilium's kube-proxy-compatible health server binds;
# empty (the default) starts no server at all.
CILIUM_HEALTHZ_BIND_KEY = "kube-proxy-replacement-healthz-bind-address"


def respond_cilium(
    path: str, *, node_deleted: bool, agent_healthy: bool, now: datetime, last_updated: datetime
) -> HealthResponse:
    """Cilium's kube-proxy replacement's answer to GET `path`. Its mux registers /healthz
    only (so /livez is 404); /healthz is 503 while the agent is unhealthy or the local Node
    is being deleted, which Cilium learns from the Node's deletionTimestamp (or its Delete
    event), never from the autoscaler's ToBeDeletedByClusterAutoscaler taint
    (daemon/cmd/local_node_sync.go). The body is kube-proxy's pre-1.28 one, without
    nodeEligible; a failing answer reports the load balancer's last update."""
    if path.split("?", 1)[0] != HEALTHZ:
        return HealthResponse(404, dict(_NOT_FOUND_HEADERS), _NOT_FOUND_BODY)
    healthy = agent_healthy and not node_deleted
    body = _legacy_body(None, now, now if healthy else last_updated)
    return HealthResponse(200 if healthy else 503, dict(_JSON_HEADERS), body)


def _answer(
    version: Version,
    healthy: bool,
    node_eligible: bool | None,
    now: datetime,
    last_updated: datetime,
    proxier_healthy: bool | None = None,
) -> HealthResponse:
    proxier_ok = healthy if proxier_healthy is None else proxier_healthy
    reported = now if healthy else last_updated
    if version >= JSON_BODY_SINCE:
        body = _json_body(proxier_ok, node_eligible, now, reported, last_updated)
    else:
        body = _legacy_body(node_eligible, now, reported)
    return HealthResponse(200 if healthy else 503, dict(_JSON_HEADERS), body)


def _legacy_body(node_eligible: bool | None, now: datetime, reported: datetime) -> bytes:
    # fmt.Fprintf(`{"lastUpdated": %q,"currentTime": %q}`) with time.Time's String(), and
    # `, "nodeEligible": %v` appended on /healthz from 1.28. The spacing is upstream's.
    text = f'{{"lastUpdated": "{go_time_string(reported)}","currentTime": "{go_time_string(now)}"'
    if node_eligible is not None:
        text += f', "nodeEligible": {"true" if node_eligible else "false"}'
    return (text + "}").encode()


def _json_body(
    proxier_healthy: bool,
    node_eligible: bool | None,
    now: datetime,
    reported: datetime,
    last_updated: datetime,
) -> bytes:
    # json.Marshal(ProxyHealth): field order lastUpdated, currentTime, nodeEligible
    # (omitempty: /healthz only), healthy, status (one ProxierHealth per IP family).
    body: dict[str, object] = {
        "lastUpdated": rfc3339_nano(reported),
        "currentTime": rfc3339_nano(now),
    }
    if node_eligible is not None:
        body["nodeEligible"] = node_eligible
    body["healthy"] = proxier_healthy
    body["status"] = {
        IP_FAMILY: {"lastUpdated": rfc3339_nano(last_updated), "healthy": proxier_healthy}
    }
    return json.dumps(body, separators=(",", ":")).encode()


def go_time_string(moment: datetime) -> str:
    """Go's time.Time String() in UTC: `2026-11-22 04:18:08.123456 +0000 UTC`. Python keeps
    microseconds, not nanoseconds, and the monotonic-clock suffix (` m=+12.3`) is left out:
    it only says how long the process has run."""
    utc = _utc(moment)
    return f"{_date_time(utc, ' ')}{_fraction(utc)} +0000 UTC"


def rfc3339_nano(moment: datetime) -> str:
    """Go's time.RFC3339Nano in UTC, as encoding/json writes a time.Time."""
    utc = _utc(moment)
    return f"{_date_time(utc, 'T')}{_fraction(utc)}Z"


def _utc(moment: datetime) -> datetime:
    """Naive datetimes are taken as UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _date_time(utc: datetime, separator: str) -> str:
    # Formatted by hand: strftime("%Y") does not pad year 1, Go's zero time.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}{separator}"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    )


def _fraction(utc: datetime) -> str:
    """Go's `.999999999`: trailing zeros dropped, and the dot too when nothing is left."""
    digits = f"{utc.microsecond:06d}".rstrip("0")
    return f".{digits}" if digits else ""


def _display(version: Version) -> str:
    return "v{}.{}.{}".format(*version)
