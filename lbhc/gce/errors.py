"""How GCE failures are told apart: retryable, benign for the end state, or real."""

from __future__ import annotations

import re
from typing import Any

from google.api_core import exceptions as core

from lbhc.errors import RunFailure, SetupError

RATE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
IN_USE_REASON = "resourceInUseByAnotherResource"


class GceOperationError(Exception):
    """A mutation was accepted but its operation finished with an error."""

    def __init__(self, operation: str, status: int, reasons: tuple[str, ...], message: str):
        super().__init__(f"operation {operation} failed ({status or 'no status'}): {message}")
        self.operation = operation
        self.status = status
        self.reasons = reasons
        self.message = message


class GceUnreachable(RunFailure):
    """No connection to the Compute API endpoint could be made, and none ever was."""


class GceTimeout(RunFailure, TimeoutError):
    """No connection, or no answer, within a call's timeouts, over all its attempts: the
    message names the endpoint, the timeouts, the attempts and the time spent. A
    TimeoutError (an OSError) too, so that where a failed read is a gap rather than the end
    (the controller's lists), it still is one."""


class GceAccessDenied(RunFailure):
    """The Compute API refused lbhc's credentials (401), or refused the first read (403):
    the message names the identity, never its token. Keeps the status, so is_forbidden()
    still holds."""

    def __init__(self, message: str, status: int, reasons: tuple[str, ...]) -> None:
        super().__init__(message)
        self.status = status
        self.reasons = reasons


class GceReadError(RunFailure):
    """A list a one-shot command needs in full failed (after its retries)."""


class GceNotCompute(SetupError):
    """The endpoint answered, but not as the Compute API does (an HTML page, a body that is
    not Compute's JSON): --gce-endpoint names something else."""


class GceScopeError(SetupError):
    """The project or region lbhc was told to use does not exist."""


class ReadOnlyViolation(RuntimeError):
    """A mutation was attempted through a client opened for planning."""


class NotLeader(RuntimeError):
    """A mutation was attempted by a replica that does not (or no longer) hold the lease."""


def result_label(exc: BaseException) -> str:
    """A low-cardinality label for metrics: the HTTP status, or the exception's class."""
    status = status_of(exc)
    return str(status) if status else type(exc).__name__


def reasons_of(exc: BaseException) -> tuple[str, ...]:
    """Classic Compute error bodies carry the reason in errors[], not in exc.reason."""
    if isinstance(exc, GceOperationError | GceAccessDenied):
        return exc.reasons
    found: list[str] = []
    if isinstance(exc, core.GoogleAPICallError):
        if exc.reason:
            found.append(exc.reason)
        for error in exc.errors or ():
            reason = error.get("reason") if isinstance(error, dict) else None
            if isinstance(reason, str):
                found.append(reason)
    return tuple(found)


def status_of(exc: BaseException) -> int:
    if isinstance(exc, GceOperationError | GceAccessDenied):
        return exc.status
    if isinstance(exc, core.GoogleAPICallError) and exc.code is not None:
        return int(exc.code)
    return 0


def is_retryable(exc: BaseException) -> bool:
    """429, 5xx and 403 rateLimitExceeded; transport errors too (connection reset)."""
    status = status_of(exc)
    if status == 429 or status >= 500:
        return True
    if status == 403 and RATE_LIMIT_REASONS.intersection(reasons_of(exc)):
        return True
    return _is_transport_error(exc)


def _is_transport_error(exc: BaseException) -> bool:
    """Connection resets, timeouts, and a token refresh that could not reach Google."""
    import requests
    from google.auth.exceptions import TransportError

    return isinstance(exc, requests.ConnectionError | requests.Timeout | TransportError)


def is_forbidden(exc: BaseException) -> bool:
    """403 that is not rate limiting: the role lacks a permission (a Shared VPC host project
    that lbhc may not write, say)."""
    return status_of(exc) == 403 and not RATE_LIMIT_REASONS.intersection(reasons_of(exc))


def has_reason(exc: BaseException, reason: str) -> bool:
    return reason in reasons_of(exc)


def is_not_found(exc: BaseException) -> bool:
    return status_of(exc) == 404 or has_reason(exc, "notFound")


def is_not_found_in(exc: BaseException, collection: str) -> bool:
    """A 404 about a resource of `collection` ("httpHealthChecks"). The Compute API's message
    names the missing resource, which is how a call's own target (addHealthCheck's pool) is
    told apart from a resource it refers to (the check)."""
    return is_not_found(exc) and f"/{collection}/" in describe_gce_error(exc)


def is_already_exists(exc: BaseException) -> bool:
    return status_of(exc) == 409 or has_reason(exc, "alreadyExists")


def is_in_use(exc: BaseException) -> bool:
    return has_reason(exc, IN_USE_REASON)


def describe_gce_error(exc: BaseException) -> str:
    """One line for logs and results; never includes request headers (credentials)."""
    if isinstance(exc, GceOperationError | GceTimeout):
        return str(exc)
    if isinstance(exc, core.GoogleAPICallError):
        reasons = ",".join(reasons_of(exc)) or "no reason"
        return f"{exc.code} {reasons}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


# How the Compute API says a project or region does not exist (see the fake's _check_scope).
# google-api-core puts "METHOD URL: " before the API's message.
_NO_PROJECT = re.compile(
    r"(?:^|: )(?:The resource 'projects/([^/']+)' was not found|Failed to find project (\S+))"
)
_NO_REGION = re.compile(
    r"(?:^|: )(?:Invalid value for field 'region': '([^']*)'\. Unknown region|"
    r"The resource 'projects/[^/']+/regions/([^/']+)' was not found)"
)


def missing_project(exc: BaseException) -> str | None:
    """The project a 404 says does not exist (not a resource in it)."""
    if isinstance(exc, core.GoogleAPICallError) and status_of(exc) == 404:
        found = _NO_PROJECT.search(exc.message or "")
        if found:
            return found.group(1) or found.group(2)
    return None


def missing_region(exc: BaseException) -> str | None:
    """The region the Compute API says is unknown (400 invalid, or a 404 naming it)."""
    if isinstance(exc, core.GoogleAPICallError) and status_of(exc) in (400, 404):
        found = _NO_REGION.search(exc.message or "")
        if found:
            return found.group(1) or found.group(2)
    return None


def not_compute_answer(response: Any) -> str | None:
    """Why an HTTP answer cannot be the Compute API's (whose bodies, errors included, are
    JSON objects, errors as {"error": {...}}), or None when it can be. A 5xx is never judged:
    Google's front ends answer those with HTML pages too, and they pass on a retry."""
    if response is None or getattr(response, "status_code", 0) >= 500:
        return None
    kind = (response.headers.get("Content-Type") or "no Content-Type").split(";")[0].strip()
    try:
        body = response.json() if response.content else {}
    except ValueError:
        return f"answered {response.status_code} with {kind}, not JSON"
    if not isinstance(body, dict):
        return f"answered {response.status_code} with JSON that is not an object"
    if response.status_code >= 400 and not isinstance(body.get("error"), dict):
        return f"answered {response.status_code} without the Compute API's error body"
    return None


def operation_error(op: Any) -> GceOperationError | None:
    """Judge a DONE operation by httpErrorStatusCode/Message AND error.errors: with only
    error.errors set, the client's own .result() would report success."""
    errors = list(op.error.errors) if op.error else []
    status = int(op.http_error_status_code or 0)
    if not errors and status < 400:
        return None
    reasons = tuple(_camel(e.code) for e in errors if e.code)
    message = "; ".join(e.message for e in errors if e.message) or op.http_error_message or "failed"
    return GceOperationError(op.name, status, reasons, message)


def _camel(code: str) -> str:
    """Operation errors carry UPPER_SNAKE codes (RESOURCE_IN_USE_BY_ANOTHER_RESOURCE) where
    HTTP errors carry camelCase reasons; one vocabulary lets callers test either the same way."""
    if not code.isupper():
        return code
    head, *rest = code.lower().split("_")
    return head + "".join(part.capitalize() for part in rest)
