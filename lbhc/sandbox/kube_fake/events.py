"""Events and Leases: MicroTime decoding, events.k8s.io/v1 validation, and the core/v1 view.

The apiserver keeps one Event storage and serves it in both APIs, converting field names
(pkg/apis/events/v1/conversion.go); the fake stores the events.k8s.io/v1 form.

A MicroTime is decoded with Go's layout "2006-01-02T15:04:05.000000Z07:00": exactly six
fractional digits and a zone, or the request is rejected before validation runs, with 400
BadRequest (kubernetes#89156). A missing or null one is a zero time, which validation then
reports as 422 "Required value".
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from .resources import Resource
from .status import ApiError, FieldError

Object = dict[str, Any]
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(?:Z|[+-]\d{2}:\d{2})")
_QUALIFIED = re.compile(
    r"(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)
# events.k8s.io/v1 name -> core/v1 name; the rest have the same name in both.
_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
_FROM_CORE = {core: events for events, core in _TO_CORE.items()}
# Fields Go always serialises in a core/v1 Event (non-pointer structs and strings).
_CORE_ALWAYS: dict[str, Any] = {
    "involvedObject": {},
    "source": {},
    "firstTimestamp": None,
    "lastTimestamp": None,
    "eventTime": None,
    "reportingComponent": "",
    "reportingInstance": "",
}
MICRO_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Event": (("eventTime",), ("series", "lastObservedTime")),
    "Lease": (("spec", "acquireTime"), ("spec", "renewTime")),
}


def to_core_event(obj: Object) -> Object:
    """An events.k8s.io/v1 Event as the core/v1 API serves it."""
    core: Object = {"kind": "Event", "apiVersion": "v1"}
    for key, value in obj.items():
        if key not in ("kind", "apiVersion"):
            core[_TO_CORE.get(key, key)] = value
    for key, default in _CORE_ALWAYS.items():
        core.setdefault(key, default)
    return core


def present(resource: Resource, obj: Object) -> Object:
    """A stored object as `resource` serves it: converted for the core/v1 Event view."""
    if resource.view and obj.get("apiVersion") != resource.api_version:
        return to_core_event(obj)
    return obj


def from_core_event(obj: Object) -> Object:
    """A core/v1 Event in the events.k8s.io/v1 form the fake stores."""
    converted: Object = {"kind": "Event", "apiVersion": "events.k8s.io/v1"}
    for key, value in obj.items():
        if key not in ("kind", "apiVersion") and value not in (None, "", {}):
            converted[_FROM_CORE.get(key, key)] = value
    converted.setdefault("metadata", {})
    return converted


def check_micro_times(kind: str, obj: Object) -> None:
    """400 for a MicroTime Go's decoder would not parse, as the apiserver answers."""
    for path in MICRO_FIELDS.get(kind, ()):
        value: Any = obj
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and not is_micro_time(value):
            api_version = obj.get("apiVersion", "v1")
            version = str(api_version).rpartition("/")[2]
            raise ApiError(
                400,
                f'{kind} in version "{version}" cannot be handled as a {kind}: '
                f'{".".join(path)}: parsing time {_quote(value)} as "{MICRO_LAYOUT}": '
                "a MicroTime has exactly 6 fractional digits and a zone",
            )


def is_micro_time(value: Any) -> bool:
    if not isinstance(value, str) or not _MICRO.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def validate_event(obj: Object) -> list[FieldError]:
    """ValidateEventCreate for events.k8s.io/v1 (pkg/apis/core/validation/events.go), plus
    `regarding`, which lbhc always sets and the fake therefore insists on."""
    errors: list[FieldError] = []
    if not obj.get("eventTime"):
        errors.append(FieldError("Required", "eventTime"))
    errors += _series_errors(obj.get("series"))
    if obj.get("type") not in ("Normal", "Warning"):
        errors.append(
            FieldError("Invalid", "type", f"has invalid value: {obj.get('type') or ''}", "")
        )
    for field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
        if obj.get(field):
            errors.append(FieldError("Invalid", field, "needs to be unset", ""))
    if (obj.get("deprecatedSource") or {}).get("component"):
        errors.append(FieldError("Invalid", "deprecatedSource", "needs to be unset", ""))
    controller = obj.get("reportingController") or ""
    if not controller:
        errors.append(FieldError("Required", "reportingController"))
    elif not _QUALIFIED.fullmatch(controller):
        errors.append(
            FieldError("Invalid", "reportingController", "must be a qualified name", controller)
        )
    for field, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        errors += _required_text(obj, field, limit)
    if len(str(obj.get("note") or "").encode()) > 1024:
        errors.append(FieldError("TooLong", "note", "must have at most 1024 bytes"))
    errors += _regarding_errors(obj)
    return errors


def _series_errors(series: Any) -> list[FieldError]:
    if not series:
        return []
    errors: list[FieldError] = []
    count = series.get("count") if isinstance(series, dict) else None
    if not isinstance(count, int) or count < 2:
        errors.append(FieldError("Invalid", "series.count", "should be at least 2", count))
    if not (series.get("lastObservedTime") if isinstance(series, dict) else None):
        errors.append(FieldError("Required", "series.lastObservedTime"))
    return errors


def _required_text(obj: Object, field: str, limit: int) -> list[FieldError]:
    value = str(obj.get(field) or "")
    if not value:
        return [FieldError("Required", field)]
    if len(value) > limit:
        return [FieldError("TooLong", field, f"can have at most {limit} characters")]
    return []


def _regarding_errors(obj: Object) -> list[FieldError]:
    regarding = obj.get("regarding")
    if not isinstance(regarding, dict) or not regarding.get("kind") or not regarding.get("name"):
        return [FieldError("Required", "regarding", "kind and name of the object it is about")]
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    wanted = regarding.get("namespace") or ""
    # Events about cluster-scoped objects (Nodes) live in "default".
    if (wanted and wanted != namespace) or (not wanted and namespace not in ("", "default")):
        return [
            FieldError(
                "Invalid", "involvedObject.namespace", "does not match event.namespace", wanted
            )
        ]
    return []


def validate_lease(obj: Object) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errors: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        errors.append(
            FieldError("Invalid", "spec.leaseDurationSeconds", "must be greater than 0", duration)
        )
    transitions = spec.get("leaseTransitions")
    if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
        errors.append(
            FieldError(
                "Invalid",
                "spec.leaseTransitions",
                "must be greater than or equal to 0",
                transitions,
            )
        )
    return errors
