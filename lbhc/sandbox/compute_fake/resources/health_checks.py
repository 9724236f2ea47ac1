"""Legacy global httpHealthChecks: the only kind of check a target pool accepts."""

from __future__ import annotations

from typing import Any

from ..errors import invalid_value
from ..store import Store
from ..validation import check_known_fields, check_name, opt_int, opt_str
from . import common
from .common import Kind, Request, Response

KIND = Kind(
    collection="httpHealthChecks",
    kind="compute#httpHealthCheck",
    label="http_health_check",
    fields=frozenset(
        {
            "checkIntervalSec",
            "creationTimestamp",
            "description",
            "healthyThreshold",
            "host",
            "id",
            "kind",
            "name",
            "port",
            "requestPath",
            "selfLink",
            "timeoutSec",
            "unhealthyThreshold",
        }
    ),
)

# Intervals and thresholds, as both kinds of check take them (HttpHealthCheck and HealthCheck
# in the discovery document): (default, lowest, highest).
_TIMING = {
    "checkIntervalSec": (5, 1, 300),
    "timeoutSec": (5, 1, 300),
    "healthyThreshold": (2, 1, 10),
    "unhealthyThreshold": (2, 1, 10),
}

_USER_FIELDS = frozenset(KIND.fields - common.OUTPUT_ONLY - {"name"})


def build(body: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Validated user fields from `body` laid over `base` (empty for insert/update)."""
    check_known_fields(body, KIND.fields, "resource")
    merged = {k: v for k, v in base.items() if k in _USER_FIELDS}
    merged.update({k: v for k, v in body.items() if k in _USER_FIELDS and v is not None})
    out: dict[str, Any] = {}
    for key in ("description", "host"):
        text = opt_str(merged, key, f"resource.{key}")
        if text:  # the real API omits empty strings
            out[key] = text
    path = opt_str(merged, "requestPath", "resource.requestPath") or "/"
    if not path.startswith("/"):
        raise invalid_value("resource.requestPath", path, "Must start with '/'.")
    out["requestPath"] = path
    port = opt_int(merged, "port", "resource.port", 1, 65535)
    out["port"] = 80 if port is None else port
    out.update(timing(merged))
    return out


def timing(body: dict[str, Any]) -> dict[str, int]:
    """checkIntervalSec, timeoutSec and the thresholds of a check of either kind, defaulted
    and in range; the timeout may not exceed the interval."""
    out: dict[str, int] = {}
    for key, (default, low, high) in _TIMING.items():
        value = opt_int(body, key, f"resource.{key}", low, high)
        out[key] = default if value is None else value
    if out["timeoutSec"] > out["checkIntervalSec"]:
        raise invalid_value(
            "resource.timeoutSec",
            out["timeoutSec"],
            "Timeout sec must be less than or equal to check interval sec.",
        )
    return out


def user_of(store: Store, project: str, check_url: str) -> str | None:
    """Path of the first target pool (any region) that references the check."""
    return common.first_user(
        store, project, "targetPools", lambda pool: check_url in pool.get("healthChecks", [])
    )


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, req.params["httpHealthCheck"])


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)


def handle_insert(req: Request) -> Response:
    name = check_name(req.json.get("name"))
    return common.insert(req, KIND, name, build(req.json, {}))


def handle_update(req: Request) -> Response:
    body = req.json
    return common.replace(
        req, KIND, req.params["httpHealthCheck"], "update", lambda _: build(body, {})
    )


def handle_patch(req: Request) -> Response:
    body = req.json
    return common.replace(
        req, KIND, req.params["httpHealthCheck"], "patch", lambda cur: build(body, cur)
    )


def handle_delete(req: Request) -> Response:
    return common.delete(req, KIND, req.params["httpHealthCheck"], user_of)
