"""What each setting is called where a user writes it.

A setting has a path (`gce.project`): its place in the --config file, and its variable
`LBHC_GCE_PROJECT`. Flags are flat, as Kubernetes components' are (`--project`), and
lbhc 0.1 read the same flat name from the file and the environment (`project:`,
`LBHC_PROJECT`); those flat spellings still work, with a warning naming the new one, so a
ConfigMap written for 0.1 keeps working after an upgrade."""

from __future__ import annotations

from dataclasses import dataclass

# lbhc 0.2 grouped the settings; the flat names 0.1 read have been deprecated since. Each
# warning names both releases, so a reader can tell how old the spelling is (a test holds them
# to releases no newer than lbhc's own version).
FLAT_NAMES_OF = "0.1"
FLAT_NAMES_DEPRECATED_SINCE = "0.2"
FLAT_NAMES_NOTE = f"(lbhc {FLAT_NAMES_OF}'s name, deprecated since {FLAT_NAMES_DEPRECATED_SINCE})"


@dataclass(frozen=True)
class SettingName:
    path: str  # "gce.project"
    argument: str  # "project": the flag's name, load_settings' keyword and 0.1's flat name
    is_flag: bool = False

    @property
    def group(self) -> str:
        return self.path.split(".", 1)[0]

    @property
    def field(self) -> str:
        return self.path.split(".", 1)[1]

    @property
    def env(self) -> str:
        return "LBHC_" + self.path.replace(".", "_").upper()

    @property
    def flat_env(self) -> str:
        """The variable lbhc 0.1 read (the same as `env` where the names agree)."""
        return "LBHC_" + self.argument.upper()

    @property
    def flag(self) -> str:
        return "--" + self.argument.replace("_", "-")


def _group(
    group: str, *fields: tuple[str, str] | str, flags: frozenset[str] = frozenset()
) -> tuple[SettingName, ...]:
    """Fields given as `name` (its flat name too) or `(name, flat name)`."""
    names = []
    for field in fields:
        name, argument = (field, field) if isinstance(field, str) else field
        names.append(SettingName(f"{group}.{name}", argument, argument in flags))
    return tuple(names)


_RUN_FLAGS = frozenset(
    {"dry_run", "resync_period", "http_address", "log_format", "leader_elect"}
    | {"leader_elect_lease_duration", "leader_elect_renew_deadline", "leader_elect_retry_period"}
    | {"leader_elect_resource_namespace", "leader_elect_resource_name"}
)
_FLAGS = _RUN_FLAGS | {
    "project",
    "region",
    "network",
    "node_tags",
    "network_project",
    "gce_endpoint",
    "cluster_id",
    "health_check_mode",
    "kubeconfig",
    "context",
}

SETTING_NAMES: tuple[SettingName, ...] = (
    *_group(
        "gce",
        "project",
        "region",
        "network",
        "network_project",
        "node_tags",
        ("endpoint", "gce_endpoint"),
        ("mutations_per_second", "gce_mutations_per_second"),
        ("reads_per_second", "gce_reads_per_second"),
        ("max_attempts", "gce_max_attempts"),
        ("backoff_initial_sec", "gce_backoff_initial_sec"),
        ("backoff_max_sec", "gce_backoff_max_sec"),
        ("operation_timeout_sec", "gce_operation_timeout_sec"),
        ("connect_timeout_sec", "gce_connect_timeout_sec"),
        ("request_timeout_sec", "gce_request_timeout_sec"),
        ("call_timeout_sec", "gce_call_timeout_sec"),
        "max_concurrent_pool_calls",
        flags=_FLAGS,
    ),
    *_group(
        "health_check",
        "cluster_id",
        "base_name",
        "port",
        "request_path",
        "check_interval_sec",
        "timeout_sec",
        "healthy_threshold",
        "unhealthy_threshold",
        "raise_only_timings",
        ("mode", "health_check_mode"),
        "unblock_probes",
        flags=_FLAGS,
    ),
    *_group("services", "load_balancer_classes", "opt_out_annotation"),
    *_group(
        "kube_proxy",
        ("namespace", "kube_proxy_namespace"),
        ("selector", "kube_proxy_selector"),
        "unknown_version_policy",
        "fallback_policy",
        ("draining_gate", "kube_proxy_draining_gate"),
        "replacement_serves_healthz",
    ),
    *_group(
        "probe",
        ("enabled", "probe_kube_proxy"),
        ("interval_sec", "probe_interval_sec"),
        ("timeout_sec", "probe_timeout_sec"),
        ("refusal_window_sec", "probe_refusal_window_sec"),
    ),
    *_group("readiness", ("policy", "readiness_policy"), ("selector", "readiness_selector")),
    *_group(
        "hold",
        ("deletion", "hold_deletion"),
        ("release_margin_sec", "hold_release_margin_sec"),
        ("writes_per_sec", "hold_writes_per_sec"),
        ("autoscaler_timeout_sec", "hold_autoscaler_timeout_sec"),
    ),
    *_group(
        "kube",
        "kubeconfig",
        "context",
        ("connect_timeout_sec", "kube_connect_timeout_sec"),
        ("request_timeout_sec", "kube_request_timeout_sec"),
        flags=_FLAGS,
    ),
    *_group(
        "controller",
        "dry_run",
        "resync_period",
        "lb_health_sample_sec",
        "lb_health_reads_per_minute",
        flags=_FLAGS,
    ),
    *_group("log", ("format", "log_format"), flags=_FLAGS),
    *_group("http", ("address", "http_address"), flags=_FLAGS),
    *_group(
        "leader_election",
        ("enabled", "leader_elect"),
        ("lease_duration", "leader_elect_lease_duration"),
        ("renew_deadline", "leader_elect_renew_deadline"),
        ("retry_period", "leader_elect_retry_period"),
        ("resource_namespace", "leader_elect_resource_namespace"),
        ("resource_name", "leader_elect_resource_name"),
        flags=_FLAGS,
    ),
)
BY_PATH = {name.path: name for name in SETTING_NAMES}
BY_ARGUMENT = {name.argument: name for name in SETTING_NAMES}
GROUPS = tuple(dict.fromkeys(name.group for name in SETTING_NAMES))
# The arguments of `lbhc run` alone (its flags); the others are every command's.
RUN_SETTINGS = _RUN_FLAGS
FLAG_SETTINGS = frozenset(name.argument for name in SETTING_NAMES if name.is_flag)
# Settings that no longer exist, and what replaced them: named in the error, not "unknown".
RETIRED_SETTINGS = {
    "replace_foreign_health_checks": (
        "replaced by health_check.mode: takeover, which records the check it replaces so "
        "that it can be given back (health_check.mode: coexist leaves it)"
    ),
}


def lookup(name: str) -> SettingName:
    """A setting by path (`gce.project`) or flat name (`project`)."""
    found = BY_PATH.get(name) or BY_ARGUMENT.get(name)
    if found is None:
        raise KeyError(f"no setting {name!r}")
    return found


def environment_names() -> frozenset[str]:
    """Every variable lbhc reads as a setting, old spellings included (tests clear them)."""
    return frozenset(
        {n.env for n in SETTING_NAMES}
        | {n.flat_env for n in SETTING_NAMES}
        | {"LBHC_" + name.upper() for name in RETIRED_SETTINGS}
    )
