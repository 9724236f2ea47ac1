"""Request decoding and the minimal validation every write gets: apiVersion/kind/namespace
checks (400), MicroTime decoding (400), names and per-kind rules (422 Invalid with causes)."""

from __future__ import annotations

import json
import re
from typing import Any

from .events import check_micro_times, validate_event, validate_lease
from .resources import Resource
from .status import ApiError, FieldError, bad_request, invalid

Object = dict[str, Any]

_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1035 = r"[a-z]([-a-z0-9]*[a-z0-9])?"
# rule -> (regex, max length, apimachinery's message)
_NAME_RULES: dict[str, tuple[str, int, str]] = {
    "subdomain": (
        _SUBDOMAIN,
        253,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        f"'example.com', regex used for validation is '{_SUBDOMAIN}')",
    ),
    "label": (
        _LABEL,
        63,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        f"'123-abc', regex used for validation is '{_LABEL}')",
    ),
    "dns1035": (
        _DNS1035,
        63,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
        "with an alphabetic character, and end with an alphanumeric character (e.g. "
        f"'my-name',  or 'abc-123', regex used for validation is '{_DNS1035}')",
    ),
}


def decode_body(raw: bytes, resource: Resource, namespace: str | None) -> Object:
    """The request's object, with apiVersion and kind defaulted from the URL as the apiserver
    does, and the namespace taken from the URL."""
    try:
        obj = json.loads(raw or b"null")
    except ValueError as exc:
        raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
    if not isinstance(obj, dict):
        raise bad_request("couldn't get version/kind; json parse error: not a JSON object")
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.kind)
    if obj["apiVersion"] != resource.api_version:
        raise bad_request(
            f"the API version in the data ({obj['apiVersion']}) does not match the expected "
            f"API version ({resource.api_version})"
        )
    if obj["kind"] != resource.kind:
        raise bad_request(
            f"the kind in the data ({obj['kind']}) does not match the expected kind "
            f"({resource.kind})"
        )
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise bad_request("metadata must be an object")
    decode_object(resource, obj, namespace)
    return obj


def decode_object(resource: Resource, obj: Object, namespace: str | None) -> None:
    """What decoding checks for an object from a request or a patch."""
    metadata = obj["metadata"]
    if resource.namespaced:
        body_namespace = metadata.get("namespace") or ""
        if body_namespace and namespace and body_namespace != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        metadata["namespace"] = namespace or body_namespace
    else:
        metadata.pop("namespace", None)  # cleared for cluster-scoped objects, as the API does
    check_micro_times(resource.kind, obj)


def validate(resource: Resource, obj: Object) -> None:
    """422 Invalid listing every field error, as the registry's strategy.Validate does."""
    metadata = obj["metadata"]
    name = metadata.get("name") or ""
    errors = name_errors(resource, name)
    if resource.kind == "Event":
        errors += validate_event(obj)
    elif resource.kind == "Lease":
        errors += validate_lease(obj)
    if errors:
        raise invalid(resource.kind, resource.group, name, errors)


def name_errors(resource: Resource, name: str) -> list[FieldError]:
    if not name:
        return [FieldError("Required", "metadata.name", "name or generateName is required")]
    pattern, limit, message = _NAME_RULES[resource.name_rule]
    errors: list[FieldError] = []
    if len(name) > limit:
        errors.append(
            FieldError("Invalid", "metadata.name", f"must be no more than {limit} characters", name)
        )
    if not re.fullmatch(pattern, name):
        errors.append(FieldError("Invalid", "metadata.name", message, name))
    return errors


def check_dry_run(query: dict[str, str]) -> bool:
    value = query.get("dryRun", "")
    if value not in ("", "All"):
        raise ApiError(400, f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return value == "All"
