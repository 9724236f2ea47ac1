"""Field validation with the real API's messages and reasons."""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ComputeError, invalid, invalid_value, required

NAME_PATTERN = "[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
_NAME_RE = re.compile(NAME_PATTERN)
_PORT_RE = re.compile(r"^(\d{1,5})(?:-(\d{1,5}))?$")


def parse_json_object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8") if raw else "{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ComputeError(400, "parseError", f"Invalid JSON payload received. {exc}") from None
    if not isinstance(value, dict):
        raise ComputeError(400, "parseError", "Invalid JSON payload received. Expected an object.")
    return value


def check_known_fields(body: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    """Unknown JSON names are rejected by the real API's front end, never ignored."""
    known = set(allowed)
    for key in body:
        if key not in known:
            raise invalid(
                f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': "
                "Cannot find field."
            )


def check_name(value: Any, field: str = "resource.name") -> str:
    if value is None or value == "":
        raise required(field)
    if not isinstance(value, str) or _NAME_RE.fullmatch(value) is None:
        raise invalid_value(field, value, f"Must be a match of regex '(?:{NAME_PATTERN})'")
    return value


def opt_str(body: Mapping[str, Any], key: str, field: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_value(field, value, "Expected a string.")
    return value


def opt_int(body: Mapping[str, Any], key: str, field: str, low: int, high: int) -> int | None:
    """An int32 field; proto JSON also allows the number as a decimal string."""
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        raise invalid_value(field, value, "Expected an integer.")
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        value = int(value)
    if not isinstance(value, int):
        raise invalid_value(field, value, "Expected an integer.")
    if not low <= value <= high:
        raise invalid_value(field, value, f"Must be between {low} and {high}, inclusive.")
    return value


def str_list(body: Mapping[str, Any], key: str, field: str) -> list[str]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_value(field, value, "Expected a list of strings.")
    return list(value)


def required_list(body: Mapping[str, Any], key: str) -> list[tuple[str, Any]]:
    """(field path, entry) of each entry of `key`, a required, non-empty list that is the only
    field of the request body (addInstance, attachNetworkEndpoints, ...)."""
    check_known_fields(body, (key,), "resource")
    field = f"resource.{key}"
    entries = body.get(key)
    if not entries:
        raise required(field)
    if not isinstance(entries, list):
        raise invalid_value(field, entries, "Expected a list.")
    return [(f"{field}[{i}]", entry) for i, entry in enumerate(entries)]


def required_ref(body: Mapping[str, Any], key: str, where: str = "resource") -> str:
    """The reference in an object whose one field, `key`, is a required string (a
    getHealth body, an InstanceReference, ...)."""
    check_known_fields(body, (key,), where)
    ref = body.get(key)
    if not isinstance(ref, str) or not ref:
        raise required(f"{where}.{key}")
    return ref


def reference_list(body: Mapping[str, Any], key: str, ref_key: str) -> list[tuple[str, str]]:
    """(field path, reference) of each entry of a required_list of `ref_key` references
    (InstanceReference, HealthCheckReference), as given, for the caller to resolve."""
    refs: list[tuple[str, str]] = []
    for where, entry in required_list(body, key):
        if not isinstance(entry, dict):
            raise invalid_value(where, entry, "Expected an object.")
        refs.append((f"{where}.{ref_key}", required_ref(entry, ref_key, where)))
    return refs


def check_cidr(value: str, field: str) -> str:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise invalid_value(field, value, "Must be a CIDR address range.") from None
    return value


def check_port_spec(value: Any, field: str) -> str:
    """Ports as the API takes them: "10256" or "1000-2000" within 0-65535."""
    match = _PORT_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise invalid_value(field, value, "Must be a port number or a port range like 1000-2000.")
    low = int(match[1])
    high = int(match[2]) if match[2] is not None else low
    if high > 65535 or low > high:
        raise invalid_value(field, value, "Invalid port range.")
    return str(value)


def check_request_id(value: str) -> str:
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        parsed = None
    if parsed is None or parsed.int == 0:
        raise invalid_value(
            "requestId",
            value,
            "The request ID must be a valid UUID with the exception that zero UUID is not "
            "supported (00000000-0000-0000-0000-000000000000).",
        )
    return value
