"""Non-legacy HTTP health checks (global `healthChecks` or `regionHealthChecks`), the kind
backend services carry, as both upstream controllers make and keep them: created when
missing; when a port, path or description differs or a timing is below the wanted one,
updated with the timings merged raise-only (a timing someone raised is kept). The same
rules, written twice upstream: kubernetes/cloud-provider-gcp providers/gce/
gce_loadbalancer_internal.go (newInternalLBHealthCheck, needToUpdateHealthChecks,
mergeHealthChecks) and kubernetes/ingress-gce pkg/l4/healthchecks/healthchecksl4.go
(newL4HealthCheck, needToUpdateHealthChecks, mergeHealthChecks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake

from .compute import ComputeRequestError, ComputeWriter

Body = dict[str, Any]
_TIMINGS = ("checkIntervalSec", "timeoutSec", "unhealthyThreshold", "healthyThreshold")


@dataclass(frozen=True)
class Timings:
    interval: int
    timeout: int
    healthy: int
    unhealthy: int


def http_check(name: str, port: int, path: str, description: str, timings: Timings) -> Body:
    """A `type: HTTP` check body; an empty description is left out, as the API leaves it."""
    body: Body = {
        "name": name,
        "type": "HTTP",
        "httpHealthCheck": {"port": port, "requestPath": path},
        "checkIntervalSec": timings.interval,
        "timeoutSec": timings.timeout,
        "healthyThreshold": timings.healthy,
        "unhealthyThreshold": timings.unhealthy,
    }
    if description:
        body["description"] = description
    return body


def needs_update(current: Body, wanted: Body) -> bool:
    """needToUpdateHealthChecks."""
    have, want = current.get("httpHealthCheck"), wanted["httpHealthCheck"]
    if have is None:
        return True
    if (have.get("port"), have.get("requestPath")) != (want["port"], want["requestPath"]):
        return True
    if current.get("description", "") != wanted.get("description", ""):
        return True
    return any(int(current.get(k, 0)) < int(wanted[k]) for k in _TIMINGS)


def merged(current: Body, wanted: Body) -> Body:
    """mergeHealthChecks: `wanted` with each timing raised to the current one if higher."""
    out = dict(wanted)
    for key in _TIMINGS:
        out[key] = max(int(current.get(key, 0)), int(wanted[key]))
    return out


class HealthChecks:
    """One controller's checks, global or in its region."""

    def __init__(
        self, compute: ComputeFake, writer: ComputeWriter, project: str, region: str
    ) -> None:
        self._compute, self._w = compute, writer
        self._project, self._region = project, region

    def get(self, name: str, regional: bool) -> Body | None:
        found = self._compute.health_checks(self._project, self._region if regional else None)
        return found.get(name)

    def ensure(self, wanted: Body, regional: bool) -> Body:
        """Create, or update if needed; returns the check as stored (with its selfLink)."""
        collection = "regionHealthChecks" if regional else "healthChecks"
        current = self.get(wanted["name"], regional)
        if current is None:
            try:
                self._w.insert(collection, wanted)
            except ComputeRequestError as exc:
                if not exc.already_exists:
                    raise
        elif needs_update(current, wanted):
            self._w.update(collection, wanted["name"], merged(current, wanted))
        check = self.get(wanted["name"], regional)
        if check is None:
            raise RuntimeError(f"health check {wanted['name']} vanished after it was ensured")
        return check

    def delete(self, name: str, regional: bool) -> bool:
        """True when the check is gone (deleted, or there was none); False when a backend
        service still uses it: both upstreams take that refusal as "shared, keep it"."""
        collection = "regionHealthChecks" if regional else "healthChecks"
        try:
            self._w.delete(collection, name)
        except ComputeRequestError as exc:
            if exc.in_use:
                return False
            raise
        return True
