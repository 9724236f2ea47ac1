"""Which failures are the user's to fix (one clear line) rather than bugs (a traceback)."""

from __future__ import annotations


def user_message(exc: BaseException) -> str | None:
    from google.api_core import exceptions as core
    from google.auth import exceptions as auth

    from lbhc.cli.teardown import TeardownError
    from lbhc.gce.errors import describe
    from lbhc.kube.client import KubeReadError
    from lbhc.kube.snapshot_file import SnapshotFileError
    from lbhc.planner.planner import PlanningError
    from lbhc.settings import SettingsError

    if isinstance(
        exc, SettingsError | SnapshotFileError | PlanningError | KubeReadError | TeardownError
    ):
        return str(exc)
    if isinstance(exc, auth.DefaultCredentialsError):
        return (
            "no Google credentials: run `gcloud auth application-default login`, set "
            "GOOGLE_APPLICATION_CREDENTIALS, or use Workload Identity"
        )
    if isinstance(exc, core.GoogleAPICallError):
        return f"GCE API: {describe(exc)}"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc}"
    try:
        from kubernetes.config.config_exception import ConfigException
    except ImportError:  # pragma: no cover
        return None
    if isinstance(exc, ConfigException):
        return f"Kubernetes config: {exc}"
    return None
