"""The groups of settings, one model each, as a file nests them (`gce: {project: ...}`).
Checks across settings sit in the group that holds both, after every field is valid, and
name the setting to change."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from lbhc.durations import duration_text
from lbhc.gce.config import DEFAULT_ENDPOINT
from lbhc.planner.config import (
    DrainingGate,
    FallbackPolicy,
    HealthCheckMode,
    ReadinessPolicy,
    ReplacementHealthz,
    UnknownVersionPolicy,
)
from lbhc.planner.hold import HoldConfig
from lbhc.planner.names import GCE_NAME
from lbhc.planner.versions import parse_version
from lbhc.settings.types import (
    DEFAULT_KUBE_PROXY_SELECTOR,
    DnsLabel,
    DnsSubdomain,
    Duration,
    GceNames,
    LabelSelectors,
    ListenAddress,
    ProjectId,
    QualifiedName,
    QualifiedNames,
    Region,
    Seconds,
)

_MAX_GCE_NAME = 63
_CLUSTER_ID = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
_BASE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
_NETWORK_PATH = re.compile(
    r"(^|/)projects/[^/\s]+/global/networks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)
_CONTROL_OR_SPACE = re.compile(r"[\s\x00-\x1f\x7f]")


class Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def setting_error(name: str, value: object, message: str) -> ValidationError:
    """A failed check across settings, reported against the field `name` of the group that
    raises it (pydantic puts the group in front), so the error says which one to change."""
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


class GceSettings(Group):
    """Where the load balancers are, and how lbhc talks to the Compute API."""

    node_tags_required: ClassVar[bool] = True

    project: ProjectId
    region: Region
    network: str = "default"
    # A Shared VPC's host project, where the network and its firewall rules live.
    network_project: ProjectId | None = None
    node_tags: GceNames
    endpoint: str = DEFAULT_ENDPOINT
    mutations_per_second: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    reads_per_second: float = Field(default=50.0, gt=0, allow_inf_nan=False)
    max_attempts: int = Field(default=6, ge=1, le=20)
    backoff_initial_sec: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    backoff_max_sec: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    operation_timeout_sec: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    # One attempt: to connect, then for each read of the answer. An attempt past either is
    # retried (mutations with their requestId, so a slow one that landed is not applied
    # twice), within the call's deadline.
    connect_timeout_sec: float = Field(default=10.0, gt=0, le=600, allow_inf_nan=False)
    request_timeout_sec: float = Field(default=30.0, gt=0, le=600, allow_inf_nan=False)
    # One call, every attempt and backoff included. None: 45 s for the one-shot commands,
    # where a person waits, and 120 s for `lbhc run` (lbhc.gce.config).
    call_timeout_sec: float | None = Field(default=None, gt=0, le=3600, allow_inf_nan=False)
    # Pool operations in flight, each holding its slot until DONE: at the default pacing and
    # 2-3 s operations, 8 capped attaches at ~3-4/s; 32 lets the pacing be the limit.
    max_concurrent_pool_calls: int = Field(default=32, ge=1, le=64)

    @field_validator("network")
    @classmethod
    def _check_network(cls, value: str) -> str:
        if not (GCE_NAME.match(value) or _NETWORK_PATH.search(value)):
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
        return value

    @field_validator("endpoint")
    @classmethod
    def _check_endpoint(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s@]+/?$", value):
            raise ValueError(
                "expected a URL such as https://compute.googleapis.com "
                "or http://127.0.0.1:8080 (scheme and host, no path, no credentials)"
            )
        return value.rstrip("/")


class TeardownGceSettings(GceSettings):
    """For `lbhc teardown`, which deletes by name from GCE alone: node tags, which only
    shape a firewall lbhc creates, are not needed."""

    node_tags_required: ClassVar[bool] = False
    node_tags: GceNames = Field(default_factory=list)


class ClusterOnlyGceSettings(TeardownGceSettings):
    """For `lbhc release-holds`, which talks to the cluster alone (GCE may be gone, or the
    settings at hand are another cluster's): no GCE setting is needed, and one given (a
    --config or LBHC_GCE_* shared with `lbhc run`) is still checked as usual."""

    project: ProjectId | None = None  # type: ignore[assignment]
    region: Region | None = None  # type: ignore[assignment]


class HealthCheckSettings(Group):
    """lbhc's shared check and its firewall rule: their names and the check's timings."""

    cluster_id: str | None = None
    base_name: str = "k8s-l4-healthcheck"
    port: int = Field(default=10256, ge=1, le=65535)
    request_path: str = "/healthz"
    check_interval_sec: int = Field(default=8, ge=1, le=300)
    timeout_sec: int = Field(default=1, ge=1, le=300)
    healthy_threshold: int = Field(default=1, ge=1, le=10)
    unhealthy_threshold: int = Field(default=3, ge=1, le=10)
    raise_only_timings: bool = False
    mode: HealthCheckMode = HealthCheckMode.COEXIST
    # Make lbhc's firewall for other owners' pools whose probes no rule admits (given
    # evidence the nodes answer the port); false: report them only.
    unblock_probes: bool = True

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

    @model_validator(mode="after")
    def _check_timeout_within_interval(self) -> HealthCheckSettings:
        if self.timeout_sec > self.check_interval_sec:
            raise setting_error(
                "timeout_sec",
                self.timeout_sec,
                f"health_check.timeout_sec ({self.timeout_sec}) must not exceed "
                f"health_check.check_interval_sec ({self.check_interval_sec}), as GCE requires",
            )
        return self

    @model_validator(mode="after")
    def _check_shared_name_length(self) -> HealthCheckSettings:
        # The shared resources are named base_name-cluster_id: refused here, not at the
        # first plan (a derived cluster id is 8 characters, which any valid base name fits).
        length = len(self.base_name) + 1 + len(self.cluster_id or "")
        if self.cluster_id and length > _MAX_GCE_NAME:
            raise setting_error(
                "base_name",
                self.base_name,
                f"base_name-cluster_id would be {length} characters; expected at most "
                f"{_MAX_GCE_NAME} together (a GCE name): shorten either",
            )
        return self


class ServicesSettings(Group):
    """Which LoadBalancer Services are lbhc's to cover."""

    load_balancer_classes: QualifiedNames = Field(default_factory=list)
    opt_out_annotation: QualifiedName = "lbhc.dev/ignore"


class KubeProxySettings(Group):
    """Where kube-proxy runs and what its version means."""

    namespace: DnsLabel = "kube-system"
    # Alternatives separated by `|`: the first that selects a Pod is used (kubeadm, kube-up
    # and GKE static Pods, Gardener).
    selector: LabelSelectors = DEFAULT_KUBE_PROXY_SELECTOR
    unknown_version_policy: UnknownVersionPolicy = UnknownVersionPolicy.FALLBACK
    fallback_policy: str = "any-old-node"
    draining_gate: DrainingGate = DrainingGate.UNKNOWN
    # With no kube-proxy and a known replacement (Cilium, GKE Dataplane V2): does it serve
    # /healthz on the health port? `auto` lets the probe tell, node by node.
    replacement_serves_healthz: ReplacementHealthz = ReplacementHealthz.AUTO

    @field_validator("fallback_policy")
    @classmethod
    def _check_fallback_policy(cls, value: str) -> str:
        parse_fallback_policy(value)
        return " ".join(value.split())


class ProbeSettings(Group):
    """Probing each node's kube-proxy health port from the controller."""

    enabled: bool = False
    interval_sec: Seconds = Field(default=60.0, ge=1, le=3600)
    timeout_sec: Seconds = Field(default=2.0, gt=0, le=30)
    # "No health server" only after refusals on 3 rounds spanning at least this long: a
    # kube-proxy restarting refuses for seconds, and the verdict can withdraw the check.
    refusal_window_sec: Seconds = Field(default=60.0, ge=1, le=3600)


class ReadinessSettings(Group):
    """kube-proxy DaemonSets' readiness probes (which must stay on /livez)."""

    policy: ReadinessPolicy = ReadinessPolicy.AUDIT
    selector: LabelSelectors = DEFAULT_KUBE_PROXY_SELECTOR


class HoldSettings(Group):
    """Holding a node cluster-autoscaler deletes until its load balancers have drained it
    (cluster-autoscaler's delay-deletion annotations)."""

    deletion: Literal["off", "on"] = "off"
    # Released this long after the drain bound has passed since the node was marked, even
    # when GCE's getHealth has not (yet) confirmed the drain.
    release_margin_sec: Seconds = Field(default=HoldConfig.release_margin_sec, ge=0, le=600)
    # Node patches (annotation added or removed) per second, at most.
    writes_per_sec: float = Field(default=5.0, gt=0, le=100, allow_inf_nan=False)
    # What cluster-autoscaler's --node-deletion-delay-timeout is (its default: 2 minutes):
    # a hold that reaches it was cut short by the autoscaler, and an alert says so.
    autoscaler_timeout_sec: Seconds = Field(default=120.0, ge=1, le=86400)

    @model_validator(mode="after")
    def _check_margin(self) -> HoldSettings:
        # A margin as long as the autoscaler's timeout makes every hold that GCE does not
        # confirm end at the timeout: the autoscaler's clock, not lbhc's, would decide.
        if self.release_margin_sec >= self.autoscaler_timeout_sec:
            raise setting_error(
                "autoscaler_timeout_sec",
                self.autoscaler_timeout_sec,
                f"expected longer than hold.release_margin_sec "
                f"({duration_text(self.release_margin_sec)}); set it to cluster-autoscaler's "
                "--node-deletion-delay-timeout (2m by default)",
            )
        return self


class KubeSettings(Group):
    """How to reach the API server (default: in-cluster, then $KUBECONFIG, then ~/.kube)."""

    kubeconfig: str | None = None
    context: str | None = None
    # One request, one attempt (no retries below lbhc): to connect, then for each read of
    # the answer (watches wait longer: the server's bookmarks come about once a minute).
    connect_timeout_sec: float = Field(default=5.0, gt=0, le=600, allow_inf_nan=False)
    request_timeout_sec: float = Field(default=30.0, gt=0, le=600, allow_inf_nan=False)

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


class ControllerSettings(Group):
    """`lbhc run`'s loop."""

    dry_run: bool = False
    resync_period: Duration = 300.0
    # How often a few serving nodes of each class of pools are read again in GCE's own health
    # view (getHealth); 0: never (nodes marked for deletion still are).
    lb_health_sample_sec: Seconds = Field(default=60.0, ge=0, le=86400)
    # The read budget every getHealth (and membership) read shares; 0 turns GCE's view off.
    # The default is 2% of the Compute read quota's long-standing default (1,500 a minute).
    lb_health_reads_per_minute: int = Field(default=30, ge=0, le=1500)


class LogSettings(Group):
    format: Literal["json", "text"] = "json"


class HttpSettings(Group):
    """The controller's /healthz, /readyz, /metrics and /plan."""

    address: ListenAddress = "0.0.0.0:10258"


class LeaderElectionSettings(Group):
    """One writer among replicas, as k8s.io/component-base's LeaderElectionConfiguration."""

    enabled: bool = True
    lease_duration: Duration = 15.0
    renew_deadline: Duration = 10.0
    retry_period: Duration = 2.0
    # The namespace the Pod runs in (the Downward API's POD_NAMESPACE), as the Lease's.
    resource_namespace: DnsLabel = Field(
        default_factory=lambda: os.environ.get("POD_NAMESPACE", "lbhc-system")
    )
    resource_name: DnsSubdomain = "lbhc"

    @model_validator(mode="after")
    def _check_lease_timings(self) -> LeaderElectionSettings:
        # Writes stop renew_deadline after the last renew, before anyone may take over
        # (lease_duration after it): the order is what keeps one writer.
        lease, renew, retry = self.lease_duration, self.renew_deadline, self.retry_period
        if self.enabled and not retry < renew < lease:
            raise setting_error(
                "renew_deadline",
                renew,
                "leader election needs retry_period < renew_deadline < lease_duration, got "
                f"{duration_text(retry)}, {duration_text(renew)} and {duration_text(lease)} "
                "(flags --leader-elect-retry-period, --leader-elect-renew-deadline, "
                "--leader-elect-lease-duration)",
            )
        return self


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
