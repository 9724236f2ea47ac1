"""Compute API errors with the real v1 error body shape.

The real API answers `{"error": {"code", "message", "errors": [{"message", "domain", "reason"}]}}`
and google-api-core reads the reason from `errors[0]["reason"]`, so every error the fake raises is
rendered exactly in that shape.
"""

from __future__ import annotations

import http
import re
from typing import Any

# Reasons Compute reports under the usageLimits domain rather than "global".
_USAGE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded"})

# Operation errors use UPPER_SNAKE codes, not the camelCase HTTP reasons.
_OPERATION_CODES = {
    "notFound": "RESOURCE_NOT_FOUND",
    "alreadyExists": "RESOURCE_ALREADY_EXISTS",
    "invalid": "INVALID_FIELD_VALUE",
    "required": "REQUIRED_FIELD_NOT_SPECIFIED",
}

DEFAULT_REASONS = {
    400: "invalid",
    403: "forbidden",
    404: "notFound",
    409: "alreadyExists",
    412: "conditionNotMet",
    429: "rateLimitExceeded",
    500: "backendError",
    503: "backendError",
}

DEFAULT_MESSAGES = {
    403: "Required permission is missing.",
    429: "Rate Limit Exceeded",
    500: "Internal error. Please try again or contact Google Support.",
    503: "The service is currently unavailable.",
}


class ComputeError(Exception):
    """An error the fake answers with; raised by handlers, rendered by the dispatcher."""

    def __init__(self, code: int, reason: str, message: str, domain: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.domain = domain or ("usageLimits" if reason in _USAGE_LIMIT_REASONS else "global")

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "errors": [{"message": self.message, "domain": self.domain, "reason": self.reason}],
        }
        return {"error": err}

    def operation_error(self) -> dict[str, Any]:
        """The `error`, `httpErrorStatusCode` and `httpErrorMessage` of a failed operation."""
        return {
            "error": {"errors": [{"code": operation_code(self.reason), "message": self.message}]},
            "httpErrorStatusCode": self.code,
            "httpErrorMessage": http_phrase(self.code),
        }


def operation_code(reason: str) -> str:
    if reason in _OPERATION_CODES:
        return _OPERATION_CODES[reason]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", reason).upper()


def http_phrase(code: int) -> str:
    try:
        return http.HTTPStatus(code).phrase.upper()
    except ValueError:
        return "ERROR"


def not_found(resource_path: str) -> ComputeError:
    return ComputeError(404, "notFound", f"The resource '{resource_path}' was not found")


def already_exists(resource_path: str) -> ComputeError:
    return ComputeError(409, "alreadyExists", f"The resource '{resource_path}' already exists")


def invalid(message: str) -> ComputeError:
    return ComputeError(400, "invalid", message)


def invalid_value(field: str, value: Any, why: str) -> ComputeError:
    return invalid(f"Invalid value for field '{field}': '{value}'. {why}")


def required(field: str) -> ComputeError:
    return ComputeError(400, "required", f"Required field '{field}' not specified")


def condition_not_met(message: str) -> ComputeError:
    """412: an optimistic-locking precondition (a fingerprint) does not hold."""
    return ComputeError(412, "conditionNotMet", message)


def in_use(kind_label: str, resource_path: str, user_path: str) -> ComputeError:
    return ComputeError(
        400,
        "resourceInUseByAnotherResource",
        f"The {kind_label} resource '{resource_path}' is already being used by '{user_path}'",
    )


def fault(code: int, reason: str | None = None, message: str | None = None) -> ComputeError:
    """An injected failure: defaults to what the real API says for that status."""
    reason = reason or DEFAULT_REASONS.get(code, "backendError")
    if message is None:
        message = DEFAULT_MESSAGES.get(code, http.HTTPStatus(code).phrase)
        if reason == "rateLimitExceeded" and code == 403:
            message = (
                "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' "
                "of service 'compute.googleapis.com'."
            )
    return ComputeError(code, reason, message)
