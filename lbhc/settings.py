"""Settings from flags, LBHC_* environment variables and a YAML file (--config), in that
order of precedence, validated once with errors that name the setting and what it expects."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Self

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from lbhc.gce.config import DEFAULT_ENDPOINT, GceClientConfig
from lbhc.planner.config import (
    HEALTH_CHECKER_RANGES,
    DrainingGate,
    FallbackPolicy,
    PlannerConfig,
    ReadinessPolicy,
    UnknownVersionPolicy,
)
from lbhc.planner.versions import parse_version

_CLUSTER_ID = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
_BASE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
_LABEL_SELECTOR = re.compile(r"^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*$")

CommaList = Annotated[list[str], NoDecode]


class SettingsError(ValueError):
    pass


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LBHC_", extra="forbid", yaml_file=None)

    # GCE
    project: str = Field(min_length=1)
    region: str = Field(min_length=1)
    network: str = "default"
    node_tags: CommaList = Field(min_length=1)
    gce_endpoint: str = DEFAULT_ENDPOINT
    gce_mutations_per_second: float = Field(default=10.0, gt=0)
    gce_reads_per_second: float = Field(default=50.0, gt=0)
    gce_max_attempts: int = Field(default=6, ge=1, le=20)
    gce_backoff_initial_sec: float = Field(default=1.0, gt=0)
    gce_backoff_max_sec: float = Field(default=30.0, gt=0)
    gce_operation_timeout_sec: float = Field(default=600.0, gt=0)
    max_concurrent_pool_calls: int = Field(default=8, ge=1, le=64)

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
    replace_foreign_health_checks: bool = False

    # Which Services and nodes count
    load_balancer_classes: CommaList = Field(default_factory=list)
    opt_out_annotation: str = "lbhc.dev/ignore"
    unknown_version_policy: UnknownVersionPolicy = UnknownVersionPolicy.FALLBACK
    kube_proxy_namespace: str = "kube-system"
    kube_proxy_selector: str = "k8s-app=kube-proxy"

    # kube-proxy awareness
    fallback_policy: str = "any-old-node"
    kube_proxy_draining_gate: DrainingGate = DrainingGate.UNKNOWN
    readiness_policy: ReadinessPolicy = ReadinessPolicy.AUDIT
    readiness_selector: str = "k8s-app=kube-proxy"
    probe_kube_proxy: bool = False
    probe_interval_sec: float = Field(default=60.0, ge=1, le=3600)
    probe_timeout_sec: float = Field(default=2.0, gt=0, le=30)

    # Kubernetes
    kubeconfig: str | None = None
    context: str | None = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls))

    @field_validator("node_tags", "load_balancer_classes", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
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
        if not value.startswith("/"):
            raise ValueError("expected an absolute path such as /healthz")
        return value

    @field_validator("gce_endpoint")
    @classmethod
    def _check_endpoint(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+/?$", value):
            raise ValueError(
                "expected a URL such as https://compute.googleapis.com "
                "or http://127.0.0.1:8080 (scheme and host, no path)"
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
        if not all(_LABEL_SELECTOR.match(p.strip()) for p in value.split(",")):
            raise ValueError("expected equality label selectors such as k8s-app=kube-proxy")
        return value

    @model_validator(mode="after")
    def _check_timings(self) -> Self:
        if self.timeout_sec > self.check_interval_sec:
            raise ValueError(
                f"timeout_sec ({self.timeout_sec}) must not exceed "
                f"check_interval_sec ({self.check_interval_sec}), as GCE requires"
            )
        return self

    def planner_config(self) -> PlannerConfig:
        policy, assumed = parse_fallback_policy(self.fallback_policy)
        return PlannerConfig(
            project=self.project,
            region=self.region,
            network=self.network,
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
            replace_foreign_health_checks=self.replace_foreign_health_checks,
            unknown_version_policy=self.unknown_version_policy,
            kube_proxy_namespace=self.kube_proxy_namespace,
            kube_proxy_selector=selector_pairs(self.kube_proxy_selector),
            fallback_policy=policy,
            assumed_version=assumed,
            draining_gate=self.kube_proxy_draining_gate,
            readiness_policy=self.readiness_policy,
            readiness_selector=selector_pairs(self.readiness_selector),
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
        )


def selector_pairs(selector: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (key.strip(), value.strip())
        for key, value in (part.split("=", 1) for part in selector.split(","))
    )


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
        f"got {value!r}; expected any-old-node, never, or assume-version followed by a "
        "version such as v1.31.0"
    )


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Flags (overrides; None means "not given") beat LBHC_* env, which beats the file."""
    given = {key: value for key, value in overrides.items() if value is not None}
    if config_file is not None and not config_file.is_file():
        raise SettingsError(f"config file {config_file}: not found")
    settings_cls: type[Settings] = Settings
    if config_file is not None:
        settings_cls = type(
            "FileSettings",
            (Settings,),
            {
                "model_config": SettingsConfigDict(
                    **{**Settings.model_config, "yaml_file": str(config_file)}
                ),
            },
        )
    try:
        return settings_cls(**given)
    except ValidationError as exc:
        raise SettingsError(_describe(exc, config_file)) from exc
    except yaml.YAMLError as exc:
        raise SettingsError(f"config file {config_file}: not valid YAML: {exc}") from exc
    except (ValueError, TypeError) as exc:  # e.g. a YAML list or scalar instead of a mapping
        raise SettingsError(
            f"config file {config_file}: expected a YAML mapping of setting: value ({exc})"
        ) from exc


def _describe(exc: ValidationError, config_file: Path | None) -> str:
    lines = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error["loc"]) or "settings"
        flag = "--" + name.replace("_", "-")
        env = "LBHC_" + name.upper()
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "missing":
            message = f"required: pass {flag}, set {env}" + (
                f", or add `{name}:` to {config_file}" if config_file else ", or use --config FILE"
            )
        elif error["type"] == "extra_forbidden":
            message = f"unknown setting in {config_file or 'input'}"
        lines.append(f"setting {name!r}: {message}")
    return "invalid settings:\n  " + "\n  ".join(lines)
