"""Settings from flags, LBHC_* environment variables and a YAML file (--config), in that
order of precedence, validated once with errors that name the setting and what it expects."""

from __future__ import annotations

import difflib
import os
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from lbhc.durations import http_address, parse_duration
from lbhc.gce.config import DEFAULT_ENDPOINT, GceClientConfig
from lbhc.planner.config import (
    HEALTH_CHECKER_RANGES,
    KNOWN_KUBE_PROXY_SELECTORS,
    DrainingGate,
    FallbackPolicy,
    HealthCheckMode,
    PlannerConfig,
    ReadinessPolicy,
    Selector,
    UnknownVersionPolicy,
    selector_text,
)
from lbhc.planner.versions import parse_version

DEFAULT_KUBE_PROXY_SELECTOR = " | ".join(selector_text(s) for s in KNOWN_KUBE_PROXY_SELECTORS)
_CLUSTER_ID = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
_BASE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
_LABEL_SELECTOR = re.compile(r"^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*$")
# GCE names: networks and network tags (RFC 1035 labels, at most 63 characters).
_GCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_NETWORK_PATH = re.compile(
    r"(^|/)projects/[^/\s]+/global/networks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)
# Project ids (also domain-scoped, example.com:proj) and regions: no spaces or slashes, so a
# value can never change which URL a request goes to.
_PROJECT = re.compile(r"^[a-z0-9][-a-z0-9.:]*$")
_REGION = re.compile(r"^[a-z0-9][-a-z0-9]*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# A Kubernetes qualified name (annotation keys, loadBalancerClass): [prefix/]name.
_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_MAX_GCE_NAME = 63
_CONTROL_OR_SPACE = re.compile(r"[\s\x00-\x1f\x7f]")
# The settings of `lbhc run` alone (its flags; LBHC_* and the file reach them too).
RUN_SETTINGS = frozenset(
    {"dry_run", "resync_period", "http_address", "log_format", "leader_elect"}
    | {"leader_elect_lease_duration", "leader_elect_renew_deadline", "leader_elect_retry_period"}
    | {"leader_elect_resource_namespace", "leader_elect_resource_name"}
)
# The settings that are also flags (the rest: LBHC_* env or --config only).
FLAG_SETTINGS = frozenset(
    {"project", "region", "network", "node_tags", "cluster_id", "gce_endpoint", "kubeconfig"}
    | {"context", "health_check_mode", "network_project"}
    | RUN_SETTINGS
)
# Settings that no longer exist, and what replaced them: named in the error, not "unknown".
RETIRED_SETTINGS = {
    "replace_foreign_health_checks": (
        "replaced by health_check_mode: takeover, which records the check it replaces so "
        "that it can be given back (health_check_mode: coexist leaves it)"
    ),
}

CommaList = Annotated[list[str], NoDecode]


def as_duration(value: object) -> object:
    """Text as flags take it, with a unit (`30s`, `5m`, `1h30m`: units make it unambiguous,
    so `LBHC_RESYNC_PERIOD=300` is refused); a YAML number is seconds."""
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except Exception as exc:  # argparse's error type: the message is what matters
            raise ValueError(str(exc)) from None
    return value


def _as_address(value: str) -> str:
    try:
        return http_address(value)
    except Exception as exc:
        raise ValueError(str(exc)) from None


def _as_pattern(pattern: re.Pattern[str], expected: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"expected {expected}")
        return value

    return AfterValidator(check)


# Reusable kinds of value, each checked once.
Duration = Annotated[float, BeforeValidator(as_duration), Field(gt=0, allow_inf_nan=False)]
ListenAddress = Annotated[str, AfterValidator(_as_address)]
DnsLabel = Annotated[
    str, _as_pattern(_DNS_LABEL, "a DNS label such as lbhc-system (a namespace name)")
]
DnsSubdomain = Annotated[
    str,
    _as_pattern(
        re.compile(
            r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
        ),
        "a DNS subdomain name such as lbhc (lowercase letters, digits, dashes and dots)",
    ),
]


def _setting_error(name: str, value: object, message: str) -> ValidationError:
    """A failed check across settings, reported against the setting `name` to change."""
    return ValidationError.from_exception_data(
        "Settings",
        [
            {
                "type": PydanticCustomError("value_error", "{message}", {"message": message}),
                "loc": (name,),
                "input": value,
            }
        ],
    )


class _FileSource(PydanticBaseSettingsSource):
    """The settings file's values, as _read_config_file read (and checked) them."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self._values = values

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._values)


class SettingsError(ValueError):
    pass


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LBHC_", extra="forbid")
    node_tags_required: ClassVar[bool] = True
    file_values: ClassVar[dict[str, Any]] = {}  # the --config file's, once read

    # GCE
    project: str
    region: str
    network: str = "default"
    # A Shared VPC's host project, where the network and its firewall rules live.
    network_project: str | None = None
    node_tags: CommaList
    gce_endpoint: str = DEFAULT_ENDPOINT
    gce_mutations_per_second: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    gce_reads_per_second: float = Field(default=50.0, gt=0, allow_inf_nan=False)
    gce_max_attempts: int = Field(default=6, ge=1, le=20)
    gce_backoff_initial_sec: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    gce_backoff_max_sec: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    gce_operation_timeout_sec: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    # One request's read timeout; a request past it is retried (mutations with their
    # requestId, so a slow one that landed is not applied twice).
    gce_request_timeout_sec: float = Field(default=30.0, gt=0, le=600, allow_inf_nan=False)
    # Pool operations in flight, each holding its slot until DONE: at the default pacing and
    # 2-3 s operations, 8 capped attaches at ~3-4/s; 32 lets the pacing be the limit.
    max_concurrent_pool_calls: int = Field(default=32, ge=1, le=64)

    # The shared resources
    cluster_id: str | None = None
    base_name: str = "k8s-l4-healthcheck"
    port: int = Field(default=10256, ge=1, le=65535)
    request_path: str = "/healthz"
    check_interval_sec: int = Field(default=8, ge=1, le=300)
    timeout_sec: int = Field(default=1, ge=1, le=300)
    healthy_threshold: int = Field(default=1, ge=1, le=10)
    unhealthy_threshold: int = Field(default=3, ge=1, le=10)
    raise_only_timings: bool = False
    health_check_mode: HealthCheckMode = HealthCheckMode.COEXIST

    # Which Services and nodes count
    load_balancer_classes: CommaList = Field(default_factory=list)
    opt_out_annotation: str = "lbhc.dev/ignore"
    unknown_version_policy: UnknownVersionPolicy = UnknownVersionPolicy.FALLBACK
    kube_proxy_namespace: str = "kube-system"
    # Alternatives separated by `|`: the first that selects a Pod is used (kubeadm, kube-up
    # and GKE static Pods, Gardener).
    kube_proxy_selector: str = DEFAULT_KUBE_PROXY_SELECTOR

    # kube-proxy awareness
    fallback_policy: str = "any-old-node"
    kube_proxy_draining_gate: DrainingGate = DrainingGate.UNKNOWN
    readiness_policy: ReadinessPolicy = ReadinessPolicy.AUDIT
    readiness_selector: str = DEFAULT_KUBE_PROXY_SELECTOR
    probe_kube_proxy: bool = False
    probe_interval_sec: float = Field(default=60.0, ge=1, le=3600, allow_inf_nan=False)
    probe_timeout_sec: float = Field(default=2.0, gt=0, le=30, allow_inf_nan=False)
    # "No health server" only after refusals on 3 rounds spanning at least this long: a
    # kube-proxy restarting refuses for seconds, and the verdict can withdraw the check.
    probe_refusal_window_sec: float = Field(default=60.0, ge=1, le=3600, allow_inf_nan=False)
    # Sample GCE's own health checking (a few getHealth calls) at most this often; 0: never.
    lb_health_sample_sec: float = Field(default=0.0, ge=0, le=86400, allow_inf_nan=False)

    # Kubernetes
    kubeconfig: str | None = None
    context: str | None = None

    # lbhc run: the controller's loop, its HTTP server and leader election
    dry_run: bool = False
    resync_period: Duration = 300.0
    http_address: ListenAddress = "0.0.0.0:10258"
    log_format: Literal["json", "text"] = "json"
    leader_elect: bool = True
    leader_elect_lease_duration: Duration = 15.0
    leader_elect_renew_deadline: Duration = 10.0
    leader_elect_retry_period: Duration = 2.0
    # The namespace the Pod runs in (the Downward API's POD_NAMESPACE), as the Lease's.
    leader_elect_resource_namespace: DnsLabel = Field(
        default_factory=lambda: os.environ.get("POD_NAMESPACE", "lbhc-system")
    )
    leader_elect_resource_name: DnsSubdomain = "lbhc"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        values = getattr(settings_cls, "file_values", {})  # set on the class load_settings makes
        return (init_settings, env_settings, _FileSource(settings_cls, values))

    @field_validator("node_tags", "load_balancer_classes", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("project", "network_project")
    @classmethod
    def _check_project(cls, value: str | None) -> str | None:
        if value is not None and not _PROJECT.match(value):
            raise ValueError("expected a GCE project id such as my-project (no spaces or slashes)")
        return value

    @field_validator("region")
    @classmethod
    def _check_region(cls, value: str) -> str:
        if not _REGION.match(value):
            raise ValueError("expected a GCE region such as us-central1")
        return value

    @field_validator("network")
    @classmethod
    def _check_network(cls, value: str) -> str:
        if not (_GCE_NAME.match(value) or _NETWORK_PATH.search(value)):
            raise ValueError(
                "expected a VPC network name such as default, or its URL "
                "(projects/PROJECT/global/networks/NAME)"
            )
        return value

    @field_validator("node_tags")
    @classmethod
    def _check_node_tags(cls, value: list[str]) -> list[str]:
        if not value and cls.node_tags_required:
            raise ValueError("expected one or more network tags, comma-separated")
        bad = [tag for tag in value if not _GCE_NAME.match(tag)]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not a network tag; expected comma-separated tags of lowercase "
                "letters, digits and dashes, starting with a letter (at most 63 characters)"
            )
        return value

    @field_validator("load_balancer_classes")
    @classmethod
    def _check_lb_classes(cls, value: list[str]) -> list[str]:
        bad = [name for name in value if not _QUALIFIED_NAME.match(name)]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not a loadBalancerClass; expected comma-separated names "
                "such as example.com/my-lb"
            )
        return value

    @field_validator("opt_out_annotation")
    @classmethod
    def _check_annotation(cls, value: str) -> str:
        if not _QUALIFIED_NAME.match(value):
            raise ValueError("expected an annotation key such as lbhc.dev/ignore")
        return value

    @field_validator("kube_proxy_namespace")
    @classmethod
    def _check_namespace(cls, value: str) -> str:
        if not _DNS_LABEL.match(value):
            raise ValueError("expected a namespace name such as kube-system")
        return value

    @field_validator("cluster_id")
    @classmethod
    def _check_cluster_id(cls, value: str | None) -> str | None:
        if value is not None and not _CLUSTER_ID.match(value):
            raise ValueError(
                "expected 1-32 lowercase letters, digits or dashes, "
                "starting and ending with a letter or digit"
            )
        return value

    @field_validator("base_name")
    @classmethod
    def _check_base_name(cls, value: str) -> str:
        if not _BASE_NAME.match(value):
            raise ValueError(
                "expected a GCE name prefix: lowercase letter first, then up to 41 "
                "lowercase letters, digits or dashes"
            )
        return value

    @field_validator("request_path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        if not value.startswith("/") or _CONTROL_OR_SPACE.search(value) or len(value) > 1024:
            raise ValueError("expected an absolute path such as /healthz (no spaces)")
        return value

    @field_validator("gce_endpoint")
    @classmethod
    def _check_endpoint(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s@]+/?$", value):
            raise ValueError(
                "expected a URL such as https://compute.googleapis.com "
                "or http://127.0.0.1:8080 (scheme and host, no path, no credentials)"
            )
        return value.rstrip("/")

    @field_validator("fallback_policy")
    @classmethod
    def _check_fallback_policy(cls, value: str) -> str:
        parse_fallback_policy(value)
        return " ".join(value.split())

    @field_validator("kube_proxy_selector", "readiness_selector")
    @classmethod
    def _check_selector(cls, value: str) -> str:
        alternatives = [a.strip() for a in value.split("|")]
        if not all(
            a and all(_LABEL_SELECTOR.match(p.strip()) for p in a.split(",")) for a in alternatives
        ):
            raise ValueError(
                "expected equality label selectors such as k8s-app=kube-proxy, alternatives "
                "separated by | (component=kube-proxy,tier=node | app=kubernetes,role=proxy)"
            )
        return " | ".join(alternatives)

    @field_validator("kubeconfig")
    @classmethod
    def _check_kubeconfig(cls, value: str | None) -> str | None:
        # Checked here so a typo is one clear line, not the client's "No configuration found".
        if value is not None and not Path(value).expanduser().is_file():
            raise ValueError("expected the path of a kubeconfig file; no such file")
        return value

    @field_validator("context")
    @classmethod
    def _check_context(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("expected the name of a context in the kubeconfig")
        return value

    # Checks across settings: after every field is valid, whatever their order; each names
    # the setting to change, so the error renderer says where its value came from.
    @model_validator(mode="after")
    def _check_timeout_within_interval(self) -> Settings:
        if self.timeout_sec > self.check_interval_sec:
            raise _setting_error(
                "timeout_sec",
                self.timeout_sec,
                f"timeout_sec ({self.timeout_sec}) must not exceed check_interval_sec "
                f"({self.check_interval_sec}), as GCE requires",
            )
        return self

    @model_validator(mode="after")
    def _check_shared_name_length(self) -> Settings:
        # The shared resources are named base_name-cluster_id: refused here, not at the
        # first plan (a derived cluster id is 8 characters, which any valid base name fits).
        length = len(self.base_name) + 1 + len(self.cluster_id or "")
        if self.cluster_id and length > _MAX_GCE_NAME:
            raise _setting_error(
                "base_name",
                self.base_name,
                f"base_name-cluster_id would be {length} characters; expected at most "
                f"{_MAX_GCE_NAME} together (a GCE name): shorten either",
            )
        return self

    @model_validator(mode="after")
    def _check_lease_timings(self) -> Settings:
        # Writes stop renew_deadline after the last renew, before anyone may take over
        # (lease_duration after it): the order is what keeps one writer.
        lease, renew, retry = (
            self.leader_elect_lease_duration,
            self.leader_elect_renew_deadline,
            self.leader_elect_retry_period,
        )
        if self.leader_elect and not retry < renew < lease:
            raise _setting_error(
                "leader_elect_renew_deadline",
                renew,
                "leader election needs leader_elect_retry_period < leader_elect_renew_deadline "
                f"< leader_elect_lease_duration, got {duration_text(retry)}, "
                f"{duration_text(renew)} and {duration_text(lease)} (flags "
                "--leader-elect-retry-period, --leader-elect-renew-deadline, "
                "--leader-elect-lease-duration)",
            )
        return self

    def planner_config(self) -> PlannerConfig:
        policy, assumed = parse_fallback_policy(self.fallback_policy)
        return PlannerConfig(
            project=self.project,
            region=self.region,
            network=self.network,
            network_project=self.network_project or "",
            node_tags=tuple(self.node_tags),
            cluster_id=self.cluster_id,
            base_name=self.base_name,
            port=self.port,
            request_path=self.request_path,
            check_interval_sec=self.check_interval_sec,
            timeout_sec=self.timeout_sec,
            healthy_threshold=self.healthy_threshold,
            unhealthy_threshold=self.unhealthy_threshold,
            raise_only_timings=self.raise_only_timings,
            source_ranges=HEALTH_CHECKER_RANGES,
            load_balancer_classes=tuple(self.load_balancer_classes),
            opt_out_annotation=self.opt_out_annotation,
            health_check_mode=self.health_check_mode,
            unknown_version_policy=self.unknown_version_policy,
            kube_proxy_namespace=self.kube_proxy_namespace,
            kube_proxy_selectors=selector_alternatives(self.kube_proxy_selector),
            fallback_policy=policy,
            assumed_version=assumed,
            draining_gate=self.kube_proxy_draining_gate,
            readiness_policy=self.readiness_policy,
            readiness_selectors=selector_alternatives(self.readiness_selector),
        )

    def gce_client_config(self, *, read_only: bool, client_id: str = "") -> GceClientConfig:
        return GceClientConfig(
            client_id=client_id,
            project=self.project,
            region=self.region,
            endpoint=self.gce_endpoint,
            read_only=read_only,
            mutations_per_second=self.gce_mutations_per_second,
            reads_per_second=self.gce_reads_per_second,
            max_attempts=self.gce_max_attempts,
            backoff_initial_sec=self.gce_backoff_initial_sec,
            backoff_max_sec=self.gce_backoff_max_sec,
            operation_timeout_sec=self.gce_operation_timeout_sec,
            request_timeout_sec=self.gce_request_timeout_sec,
            network_project=self.network_project or "",
        )


def duration_text(seconds: float) -> str:
    """A duration as a person writes it: 300.0 -> 5m, 2.0 -> 2s, 0.25 -> 250ms."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 3600:g}h" if seconds % 3600 == 0 else f"{seconds / 60:g}m"
    return f"{seconds:g}s" if seconds >= 1 else f"{seconds * 1000:g}ms"


def default_text(name: str) -> str:
    """A setting's default as a user would write it, for help and docs."""
    field = Settings.model_fields[name]
    if field.default_factory is not None:
        default: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        default = field.default
    if any(getattr(m, "func", None) is as_duration for m in field.metadata):
        return duration_text(float(default))
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, list):
        return ",".join(default) or "none"
    return str(getattr(default, "value", default))


def selector_pairs(selector: str) -> Selector:
    return tuple(
        (key.strip(), value.strip())
        for key, value in (part.split("=", 1) for part in selector.split(","))
    )


def selector_alternatives(value: str) -> tuple[Selector, ...]:
    return tuple(selector_pairs(alternative) for alternative in value.split("|"))


def parse_fallback_policy(value: str) -> tuple[FallbackPolicy, tuple[int, int, int] | None]:
    """`any-old-node`, `never` or `assume-version vX.Y[.Z]`."""
    words = value.split()
    if words == [FallbackPolicy.ANY_OLD_NODE.value]:
        return FallbackPolicy.ANY_OLD_NODE, None
    if words == [FallbackPolicy.NEVER.value]:
        return FallbackPolicy.NEVER, None
    if len(words) == 2 and words[0] == FallbackPolicy.ASSUME_VERSION.value:
        version = parse_version(words[1])
        if version is not None:
            return FallbackPolicy.ASSUME_VERSION, version
    raise ValueError(
        "expected any-old-node, never, or assume-version followed by a version such as v1.31.0"
    )


class GceOnlySettings(Settings):
    """For `lbhc teardown`, which deletes by name from GCE alone: node tags, which only
    shape a firewall lbhc creates, are not needed (nor is the cluster)."""

    node_tags_required: ClassVar[bool] = False
    node_tags: CommaList = Field(default_factory=list)


def load_settings(
    config_file: Path | None = None, *, base: type[Settings] = Settings, **overrides: Any
) -> Settings:
    """Flags (overrides; None means "not given") beat LBHC_* env, which beats the file."""
    given = {key: value for key, value in overrides.items() if value is not None}
    retired = [name for name in RETIRED_SETTINGS if "LBHC_" + name.upper() in os.environ]
    if retired:  # the environment source ignores unknown variables: say so rather than drop it
        raise SettingsError(
            "\n".join(
                f"invalid settings: setting {name!r}: LBHC_{name.upper()} no longer exists: "
                f"{RETIRED_SETTINGS[name]}"
                for name in retired
            )
        )
    from_file = _read_config_file(config_file) if config_file is not None else {}
    settings_cls: type[Settings] = base
    if config_file is not None:
        # The file as read once above, at the lowest precedence.
        settings_cls = type(
            "FileSettings",
            (base,),
            {
                "file_values": from_file,
                "__annotations__": {"file_values": ClassVar[dict[str, Any]]},
            },
        )
    try:
        return settings_cls(**given)
    except ValidationError as exc:
        raise SettingsError(_describe(exc, config_file, given, from_file)) from exc


def _read_config_file(path: Path) -> dict[str, Any]:
    """The file's settings, or one clear line on why it cannot be one (checked before
    pydantic-settings reads it, whose errors do not say which file or line)."""
    where = f"config file {path}"
    if not path.exists():
        raise SettingsError(f"{where}: not found")
    if not path.is_file():
        raise SettingsError(f"{where}: not a regular file; expected a YAML file")
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SettingsError(f"{where}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise SettingsError(
            f"{where}: not UTF-8 text (byte {exc.start}); expected a YAML mapping of setting: value"
        ) from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsError(f"{where}: not valid YAML: {describe_yaml_error(exc)}") from exc
    except RecursionError as exc:
        raise SettingsError(f"{where}: nested too deeply to be settings") from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise SettingsError(
            f"{where}: expected a YAML mapping of setting: value, got a {_yaml_type(document)}"
        )
    return {str(key): value for key, value in document.items()}


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """PyYAML's multi-line report as one line: where, then what."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{' '.join(str(problem).split())}"


def _yaml_type(value: object) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _describe(
    exc: ValidationError,
    config_file: Path | None,
    given: dict[str, Any],
    from_file: dict[str, Any],
) -> str:
    """One line per setting: its name, what was wrong, what is expected, and the value and
    where it came from (flag, LBHC_* variable or file), so the fix is obvious."""
    lines = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error["loc"][:1])
        message = " ".join(error["msg"].removeprefix("Value error, ").split())
        if not name:  # a check across settings: its message names them
            lines.append(f"invalid settings: {message}")
            continue
        flag = "--" + name.replace("_", "-")
        env = "LBHC_" + name.upper()
        if error["type"] == "missing":
            message = f"required: pass {flag}, set {env}" + (
                f", or add `{name}:` to {config_file}" if config_file else ", or use --config FILE"
            )
        elif error["type"] == "extra_forbidden" and name in RETIRED_SETTINGS:
            message = f"no longer exists: {RETIRED_SETTINGS[name]}"
        elif error["type"] == "extra_forbidden":
            close = difflib.get_close_matches(name, Settings.model_fields, n=1)
            message = f"unknown setting in {config_file or 'input'}" + (
                f" (did you mean {close[0]!r}?)" if close else ""
            )
        else:
            expected = _expected(name) if error["type"] in _TYPE_ERRORS else ""
            if expected:
                message += f"; expected {expected}"
            source = _source(name, given, from_file, config_file)
            if source:
                message += (
                    f" (got {_shown(error.get('input'), name, given, from_file)} from {source})"
                )
        lines.append(f"invalid settings: setting {name!r}: {message}")
    return "\n".join(lines)


# pydantic's messages for these say what was wrong, not what is right: add that.
_TYPE_ERRORS = frozenset(
    {
        "int_parsing",
        "int_type",
        "int_from_float",
        "float_parsing",
        "float_type",
        "finite_number",
        "bool_parsing",
        "bool_type",
        "string_type",
    }
)


def _expected(name: str) -> str:
    """What a setting's type and bounds accept, for pydantic's type and range errors."""
    field = Settings.model_fields.get(name)
    if field is None:
        return ""
    annotation = field.annotation
    if annotation is bool:
        return "true or false"
    if isinstance(annotation, type) and issubclass(annotation, StrEnum):
        return "one of " + ", ".join(member.value for member in annotation)
    if annotation not in (int, float):
        return "a string" if annotation in (str, str | None) else ""
    kind = "an integer" if annotation is int else "a finite number"
    bounds = {
        key: getattr(rule, key)
        for rule in field.metadata
        for key in ("ge", "gt", "le")
        if getattr(rule, key, None) is not None
    }
    if "ge" in bounds and "le" in bounds:
        return f"{kind} from {bounds['ge']} to {bounds['le']}"
    if "gt" in bounds:
        return f"{kind} greater than {bounds['gt']}" + (
            f" and at most {bounds['le']}" if "le" in bounds else ""
        )
    return kind


def _source(
    name: str, given: dict[str, Any], from_file: dict[str, Any], config_file: Path | None
) -> str:
    if name in given:
        return "--" + name.replace("_", "-") if name in FLAG_SETTINGS else "arguments"
    env = "LBHC_" + name.upper()
    if any(key.upper() == env for key in os.environ):
        return env
    if name in from_file:
        return str(config_file)
    return ""


def _shown(value: object, name: str, given: dict[str, Any], from_file: dict[str, Any]) -> str:
    """The value as given (not pydantic's half-converted one), short and credential-free."""
    env = os.environ.get("LBHC_" + name.upper())
    raw = given.get(name, env if env is not None else from_file.get(name, value))
    text = repr(raw)
    text = re.sub(r"//[^/@\s]*@", "//***@", text)  # never echo a URL's user:password
    return text if len(text) <= 60 else text[:57] + "..."
