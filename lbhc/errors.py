"""The failures lower layers raise when the fix is the user's, and how a failed connection is
told apart: 2 when the fix is a flag, setting or file (SetupError, like an invalid setting),
1 when something is down, refused or failed at run time (RunFailure). The CLI words every
failure in one line (lbhc/cli/messages.py); this module imports nothing above it."""

from __future__ import annotations

from collections.abc import Iterator

from lbhc.settings import SettingsError


class SetupError(SettingsError):
    """Found only once lbhc looks (a kubeconfig without the context asked for, a project that
    does not exist, an endpoint that is not the Compute API), but fixed like an invalid
    setting: by a flag, a setting or a file. A SettingsError, so main() gives it the same
    exit code (2; 1 under `plan --detailed-exitcode`)."""


class RunFailure(RuntimeError):
    """Something lbhc depends on is down, refused or failed; the message is one line that
    says what, why, and what to check. Exit code 1."""


def credentials_missing(exc: BaseException) -> str:
    """google-auth's own text says which source failed (a GOOGLE_APPLICATION_CREDENTIALS file
    that is missing or malformed); it never holds a secret."""
    return (
        f"no usable Google credentials ({first_line(exc)}): run `gcloud auth "
        "application-default login`, set GOOGLE_APPLICATION_CREDENTIALS to a service account "
        "key file, or run on GCE/GKE with a service account (Workload Identity); a local fake "
        "needs none (an http:// --gce-endpoint)"
    )


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's text, bounded: library messages can run to pages."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def connect_failure(exc: BaseException) -> str | None:
    """Why no connection could be made (refused, a host name that does not resolve, no
    answer while connecting, a TLS handshake that failed), dug out of requests' and urllib3's
    wrappers; None for any other failure (a reset or a timeout once connected, an HTTP
    status), which may well pass on a retry."""
    import ssl

    from urllib3 import exceptions as u3

    for current in _wrapped(exc):
        if isinstance(current, u3.NameResolutionError):
            cause = current.__cause__
            detail = cause.strerror if isinstance(cause, OSError) and cause.strerror else ""
            return f"the host name does not resolve{f' ({detail})' if detail else ''}"
        if isinstance(current, u3.NewConnectionError):
            cause = current.__cause__
            if isinstance(cause, OSError) and cause.strerror:
                return cause.strerror.lower()
            return "no connection could be made"
        if isinstance(current, u3.ConnectTimeoutError):
            return "no answer while connecting (connect timeout)"
        if isinstance(current, u3.SSLError | ssl.SSLError):
            return f"TLS handshake failed ({_tls_reason(current)})"
    return None


def timeout_kind(exc: BaseException) -> str | None:
    """ "connect" when no connection was made in time, "read" when a connection was made and
    no answer (or no more of it) came in time; None for any other failure."""
    import requests
    from urllib3 import exceptions as u3

    for current in _wrapped(exc):
        if isinstance(current, u3.NewConnectionError):
            return None  # a ConnectTimeoutError for urllib3's history's sake: refused, say
        if isinstance(current, u3.ConnectTimeoutError):
            return "connect"
        if isinstance(current, requests.ReadTimeout | u3.ReadTimeoutError):
            return "read"
    return None


def _wrapped(exc: BaseException) -> Iterator[BaseException]:
    """The exception and those it wraps: urllib3's MaxRetryError keeps the cause in `reason`,
    requests and google-auth pass urllib3's (or requests') error as their first argument."""
    from urllib3 import exceptions as u3

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        if isinstance(current, u3.MaxRetryError):
            current = current.reason
        elif current.args and isinstance(current.args[0], BaseException):
            current = current.args[0]
        else:
            current = current.__cause__ or current.__context__


def _tls_reason(exc: BaseException) -> str:
    import ssl

    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {current.verify_message}"
        if isinstance(current, ssl.SSLError) and current.reason:
            return str(current.reason).lower().replace("_", " ")
        wrapped = current.args[0] if current.args else None
        current = wrapped if isinstance(wrapped, BaseException) else current.__cause__
    return first_line(exc, 120)
