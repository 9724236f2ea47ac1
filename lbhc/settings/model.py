"""The settings model: one pydantic-settings model of groups (as kopf's OperatorSettings
groups its own), each default written once in its group, and the configs the rest of lbhc
takes from it."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from lbhc.gce.config import (
    CONTROLLER_CALL_TIMEOUT_SEC,
    ONE_SHOT_CALL_TIMEOUT_SEC,
    GceClientConfig,
)
from lbhc.kube.config import KubeConfig
from lbhc.planner.config import HEALTH_CHECKER_RANGES, PlannerConfig, Selector
from lbhc.planner.hold import HoldConfig
from lbhc.settings.groups import (
    ClusterOnlyGceSettings,
    ControllerSettings,
    GceSettings,
    HealthCheckSettings,
    HoldSettings,
    HttpSettings,
    KubeProxySettings,
    KubeSettings,
    LeaderElectionSettings,
    LogSettings,
    ProbeSettings,
    ReadinessSettings,
    ServicesSettings,
    TeardownGceSettings,
    parse_fallback_policy,
)


class Settings(BaseSettings):
    """Read with load_settings: flags, then LBHC_* variables, then the --config file."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)
    # The layers load_settings read (variables, file), below the arguments given; none when
    # a Settings is built directly, which then reads nothing behind its caller's back.
    layers: ClassVar[tuple[PydanticBaseSettingsSource, ...]] = ()

    gce: GceSettings
    health_check: HealthCheckSettings = Field(default_factory=HealthCheckSettings)
    services: ServicesSettings = Field(default_factory=ServicesSettings)
    kube_proxy: KubeProxySettings = Field(default_factory=KubeProxySettings)
    probe: ProbeSettings = Field(default_factory=ProbeSettings)
    readiness: ReadinessSettings = Field(default_factory=ReadinessSettings)
    hold: HoldSettings = Field(default_factory=HoldSettings)
    kube: KubeSettings = Field(default_factory=KubeSettings)
    controller: ControllerSettings = Field(default_factory=ControllerSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        layers: tuple[PydanticBaseSettingsSource, ...] = getattr(settings_cls, "layers", ())
        return (init_settings, *layers)

    def planner_config(self) -> PlannerConfig:
        gce, check, kube_proxy = self.gce, self.health_check, self.kube_proxy
        policy, assumed = parse_fallback_policy(kube_proxy.fallback_policy)
        return PlannerConfig(
            project=gce.project,
            region=gce.region,
            network=gce.network,
            network_project=gce.network_project or "",
            node_tags=tuple(gce.node_tags),
            cluster_id=check.cluster_id,
            base_name=check.base_name,
            port=check.port,
            request_path=check.request_path,
            check_interval_sec=check.check_interval_sec,
            timeout_sec=check.timeout_sec,
            healthy_threshold=check.healthy_threshold,
            unhealthy_threshold=check.unhealthy_threshold,
            raise_only_timings=check.raise_only_timings,
            source_ranges=HEALTH_CHECKER_RANGES,
            load_balancer_classes=tuple(self.services.load_balancer_classes),
            opt_out_annotation=self.services.opt_out_annotation,
            health_check_mode=check.mode,
            unblock_probes=check.unblock_probes,
            unknown_version_policy=kube_proxy.unknown_version_policy,
            kube_proxy_namespace=kube_proxy.namespace,
            kube_proxy_selectors=selector_alternatives(kube_proxy.selector),
            fallback_policy=policy,
            assumed_version=assumed,
            draining_gate=kube_proxy.draining_gate,
            replacement_serves_healthz=kube_proxy.replacement_serves_healthz,
            readiness_policy=self.readiness.policy,
            readiness_selectors=selector_alternatives(self.readiness.selector),
        )

    def hold_config(self) -> HoldConfig:
        """What the hold planner takes (lbhc/planner/hold.py), for `lbhc run` and `status`."""
        return HoldConfig(release_margin_sec=self.hold.release_margin_sec)

    def gce_client_config(
        self, *, read_only: bool, client_id: str = "", controller: bool = False
    ) -> GceClientConfig:
        """`controller`: for `lbhc run`, whose calls may take longer before they fail (a
        failed pass re-reads the region to retry) than a one-shot command's."""
        gce = self.gce
        default_call_timeout = (
            CONTROLLER_CALL_TIMEOUT_SEC if controller else ONE_SHOT_CALL_TIMEOUT_SEC
        )
        return GceClientConfig(
            client_id=client_id,
            project=gce.project,
            region=gce.region,
            endpoint=gce.endpoint,
            read_only=read_only,
            mutations_per_second=gce.mutations_per_second,
            reads_per_second=gce.reads_per_second,
            max_attempts=gce.max_attempts,
            backoff_initial_sec=gce.backoff_initial_sec,
            backoff_max_sec=gce.backoff_max_sec,
            operation_timeout_sec=gce.operation_timeout_sec,
            connect_timeout_sec=gce.connect_timeout_sec,
            request_timeout_sec=gce.request_timeout_sec,
            call_timeout_sec=gce.call_timeout_sec or default_call_timeout,
            max_concurrent_calls=gce.max_concurrent_pool_calls,
            network_project=gce.network_project or "",
            network=gce.network,
        )

    def kube_config(self, host: str | None = None) -> KubeConfig:
        """`host`: a plain URL instead of the kubeconfig (tests, the sandbox)."""
        kube = self.kube
        return KubeConfig(
            kubeconfig=kube.kubeconfig,
            context=kube.context,
            host=host,
            connect_timeout_sec=kube.connect_timeout_sec,
            read_timeout_sec=kube.request_timeout_sec,
        )


class GceOnlySettings(Settings):
    """For `lbhc teardown`, which deletes by name from GCE alone (no node tags, no cluster)."""

    gce: TeardownGceSettings


class KubeOnlySettings(Settings):
    """For `lbhc release-holds`, which reads and writes Nodes only: the kube settings count,
    the GCE ones are optional."""

    gce: ClusterOnlyGceSettings


def selector_pairs(selector: str) -> Selector:
    return tuple(
        (key.strip(), value.strip())
        for key, value in (part.split("=", 1) for part in selector.split(","))
    )


def selector_alternatives(value: str) -> tuple[Selector, ...]:
    return tuple(selector_pairs(alternative) for alternative in value.split("|"))


def group_model(settings_cls: type[Settings], group: str) -> type[Any]:
    """The model class of a group (GceOnlySettings and KubeOnlySettings have their own for
    gce)."""
    annotation = settings_cls.model_fields[group].annotation
    assert isinstance(annotation, type)
    return annotation
