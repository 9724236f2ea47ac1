"""metav1.Status error bodies, shaped and worded like the real apiserver's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
_MESSAGES: dict[int, str] = {
    400: "the server rejected our request for an unknown reason",
    401: "Unauthorized",
    403: "forbidden",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: MODIFIED,
    410: "The resourceVersion for the provided list is too old.",
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected fault",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted",
}


class ApiError(Exception):
    """A failed request; `body()` is the Status object the apiserver would send."""

    def __init__(
        self,
        code: int,
        message: str | None = None,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        continue_token: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        self.code = code
        self.reason = reason or REASONS.get(code, "Unknown" if code >= 500 else "BadRequest")
        self.message = message or _MESSAGES.get(code, self.reason)
        self.details = details
        self.continue_token = continue_token
        self.retry_after = retry_after
        super().__init__(f"{code} {self.reason}: {self.message}")

    def body(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {}
        if self.continue_token:
            metadata["continue"] = self.continue_token
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": metadata,
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        details = dict(self.details or {})
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details or self.code in (404, 405):
            body["details"] = details
        body["code"] = self.code
        return body

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)} if self.retry_after is not None else {}


def not_found(plural: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        404,
        f'{_qualified(plural, group)} "{name}" not found',
        details=_details(plural, name, group),
    )


def already_exists(plural: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        f'{_qualified(plural, group)} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(plural, name, group),
    )


def conflict(plural: str, name: str, group: str = "", detail: str = MODIFIED) -> ApiError:
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {detail}',
        details=_details(plural, name, group),
    )


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def _details(kind: str, name: str, group: str) -> dict[str, Any]:
    # Go's omitempty: no empty name or group.
    return {**({"name": name} if name else {}), **({"group": group} if group else {}), "kind": kind}


@dataclass(frozen=True)
class FieldError:
    """One field.Error, worded as apimachinery's ErrorType does."""

    type: str  # "Required", "Invalid", "Unsupported", "Forbidden", "TooLong"
    field: str
    detail: str = ""
    value: Any = None

    @property
    def message(self) -> str:
        text = f"{self.type} value"
        if self.type in ("Invalid", "Unsupported"):
            text += f": {json.dumps(self.value)}"
        elif self.type == "Forbidden":
            text = "Forbidden"
        elif self.type == "TooLong":
            text = "Too long"
        return f"{text}: {self.detail}" if self.detail else text

    def cause(self) -> dict[str, str]:
        reason = {"TooLong": "FieldValueTooLong"}.get(self.type, f"FieldValue{self.type}")
        return {"reason": reason, "message": self.message, "field": self.field}


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 Invalid, as apierrors.NewInvalid words it."""
    listed = [f"{e.field}: {e.message}" for e in errors]
    aggregate = listed[0] if len(listed) == 1 else f"[{', '.join(listed)}]"
    return ApiError(
        422,
        f'{_qualified(kind, group)} "{name}" is invalid: {aggregate}',
        details={**_details(kind, name, group), "causes": [e.cause() for e in errors]},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def forbidden(verb: str, plural: str, namespace: str | None, group: str = "") -> ApiError:
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return ApiError(
        403,
        f'{_qualified(plural, group)} is forbidden: User "system:serviceaccount:kube-system:lbhc" '
        f'cannot {verb} resource "{plural}" in API group "{group}" {scope}',
        details=_details(plural, "", group),
    )
