"""metav1.Status error bodies, shaped and worded like the real apiserver's."""

from __future__ import annotations

from typing import Any

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
    409: "the object has been modified; please apply your changes to the latest version",
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


def not_found(plural: str, name: str) -> ApiError:
    return ApiError(404, f'{plural} "{name}" not found', details={"name": name, "kind": plural})


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def forbidden(verb: str, plural: str, namespace: str | None) -> ApiError:
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return ApiError(
        403,
        f'{plural} is forbidden: User "system:serviceaccount:kube-system:lbhc" cannot '
        f'{verb} resource "{plural}" in API group "" {scope}',
        details={"kind": plural},
    )
