"""Every failure a user can meet, in one line at the CLI's edge (as kubectl's CheckErr and
terraform's diagnostics do): the lower layers raise typed errors, this module words them.
None means a bug, which gets a traceback."""

from __future__ import annotations

from lbhc.errors import RunFailure, credentials_missing, first_line
from lbhc.settings import SettingsError


def user_message(exc: BaseException) -> str | None:
    from google.api_core import exceptions as core
    from google.auth import exceptions as auth

    from lbhc.cli.teardown import TeardownError
    from lbhc.gce.errors import describe_gce_error
    from lbhc.httpserver import BindError
    from lbhc.kube.client import KubeReadError
    from lbhc.kube.snapshot_file import SnapshotFileError
    from lbhc.planner.planner import PlanningError

    if isinstance(
        exc,
        SettingsError
        | SnapshotFileError
        | PlanningError
        | KubeReadError
        | TeardownError
        | RunFailure
        | BindError,
    ):
        return str(exc)
    if isinstance(exc, auth.DefaultCredentialsError):
        # Normally turned into a SetupError where credentials are made (lbhc.gce.config).
        return credentials_missing(exc)
    if isinstance(exc, auth.RefreshError):
        # args[0] is google-auth's summary ("invalid_grant: ..."); args[1] the raw response.
        why = exc.args[0] if exc.args and isinstance(exc.args[0], str) else first_line(exc)
        return (
            f"Google credentials were refused when refreshed ({why[:200]}): renew them "
            "(`gcloud auth application-default login`, a new key for "
            "GOOGLE_APPLICATION_CREDENTIALS, or the Workload Identity binding)"
        )
    if isinstance(exc, core.GoogleAPICallError):
        return f"GCE API: {describe_gce_error(exc)}"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc}"
    try:
        from kubernetes.config.config_exception import ConfigException
    except ImportError:  # pragma: no cover
        return None
    if isinstance(exc, ConfigException):
        return f"Kubernetes config: {exc}"
    return None
