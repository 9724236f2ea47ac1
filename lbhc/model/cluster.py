"""Small frozen projections of the Kubernetes objects lbhc reads.

They are validated straight from the API's raw JSON (extra fields ignored) rather than
through the kubernetes client's models, which cost ~10x the memory (reference.md 5). Only
fields the planner uses are kept, so the projections double as the planner's input types.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Projection(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


def _interned(value: dict[str, str]) -> dict[str, str]:
    """Label keys and values repeat across thousands of objects: share one copy of each."""
    return {sys.intern(k): sys.intern(v) for k, v in value.items()}


class ObjectMeta(_Projection):
    name: str
    namespace: str = ""
    uid: str = ""
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")
    resource_version: str = Field(default="", alias="resourceVersion")

    def __eq__(self, other: object) -> bool:
        """Equal when what lbhc reads is equal: resourceVersion changes with every write
        (heartbeats included) and must not make an unchanged object look changed."""
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = dict(self), dict(other)
        mine.pop("resource_version")
        theirs.pop("resource_version")
        return bool(mine == theirs)

    __hash__ = None  # type: ignore[assignment]  # dict fields in subclasses: not hashable


class LabeledMeta(ObjectMeta):
    """Nodes and Pods: lbhc reads their labels (LB exclusion, the kube-proxy selector) and
    never their annotations, which on Nodes are large; they are not kept."""

    labels: dict[str, str] = Field(default_factory=dict)
    # RFC 3339; for grace periods (a node or Pod just created is not yet a problem).
    creation_timestamp: str = Field(default="", alias="creationTimestamp")

    @field_validator("labels")
    @classmethod
    def _intern_labels(cls, value: dict[str, str]) -> dict[str, str]:
        return _interned(value)


class AnnotatedMeta(ObjectMeta):
    """Services: lbhc reads their annotations (the opt-out), never their labels."""

    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("annotations")
    @classmethod
    def _intern_annotations(cls, value: dict[str, str]) -> dict[str, str]:
        return _interned(value)


class Taint(_Projection):
    key: str
    value: str = ""
    effect: str = ""


class NodeSpec(_Projection):
    taints: tuple[Taint, ...] = ()
    provider_id: str = Field(default="", alias="providerID")


class NodeSystemInfo(_Projection):
    kubelet_version: str = Field(default="", alias="kubeletVersion")
    # Really the kubelet's version and cleared from 1.33 on (KEP-4004): a hint only.
    kube_proxy_version: str = Field(default="", alias="kubeProxyVersion")


class NodeAddress(_Projection):
    type: str = ""
    address: str = ""


class NodeStatus(_Projection):
    node_info: NodeSystemInfo = Field(default_factory=NodeSystemInfo, alias="nodeInfo")
    # Where kube-proxy's health port is probed from the controller (InternalIP).
    addresses: tuple[NodeAddress, ...] = ()


class Node(_Projection):
    metadata: LabeledMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def internal_ip(self) -> str:
        for address in self.status.addresses:
            if address.type == "InternalIP":
                return address.address
        return ""


class ServiceSpec(_Projection):
    type: str = "ClusterIP"
    # Absent means Cluster: the API server defaults it, but dumps and older objects may omit it.
    external_traffic_policy: str = Field(default="Cluster", alias="externalTrafficPolicy")
    load_balancer_class: str | None = Field(default=None, alias="loadBalancerClass")


class Service(_Projection):
    metadata: AnnotatedMeta
    spec: ServiceSpec = Field(default_factory=ServiceSpec)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class HttpGetAction(_Projection):
    path: str = ""
    port: int | str = ""


class Probe(_Projection):
    """Only HTTP probes matter here: kube-proxy's health server speaks HTTP."""

    http_get: HttpGetAction | None = Field(default=None, alias="httpGet")


class Container(_Projection):
    name: str = ""
    image: str = ""
    readiness_probe: Probe | None = Field(default=None, alias="readinessProbe")
    liveness_probe: Probe | None = Field(default=None, alias="livenessProbe")


class PodSpec(_Projection):
    node_name: str = Field(default="", alias="nodeName")
    containers: tuple[Container, ...] = ()
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")


class Condition(_Projection):
    type: str
    status: str = "Unknown"


class PodStatus(_Projection):
    phase: str = ""
    conditions: tuple[Condition, ...] = ()


class OwnerReference(_Projection):
    kind: str = ""
    name: str = ""
    uid: str = ""


class PodMeta(LabeledMeta):
    owner_references: tuple[OwnerReference, ...] = Field(default=(), alias="ownerReferences")


class Pod(_Projection):
    metadata: PodMeta
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)


class LabelSelector(_Projection):
    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")


class PodTemplateSpec(_Projection):
    spec: PodSpec = Field(default_factory=PodSpec)


class DaemonSetSpec(_Projection):
    selector: LabelSelector = Field(default_factory=LabelSelector)
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class DaemonSet(_Projection):
    """kube-proxy DaemonSets, for the readiness-probe policy (audit or enforce /livez)."""

    metadata: LabeledMeta
    spec: DaemonSetSpec = Field(default_factory=DaemonSetSpec)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class Namespace(_Projection):
    metadata: ObjectMeta


@dataclass(frozen=True)
class HealthProbe:
    """One active probe of a node's kube-proxy health port. A status is None when nothing
    answered (refused, timed out): no health server there, or the node is unreachable."""

    address: str
    livez: int | None
    healthz: int | None
    refused: bool = False  # nothing listening (confirmed by retries), not merely a timeout
    node_marked: bool = False  # the node was being deleted when probed


@dataclass(frozen=True)
class ProbeTarget:
    """Where to probe a node's kube-proxy, and whether the node was marked for deletion."""

    address: str
    node_marked: bool


@dataclass(frozen=True)
class ClusterSnapshot:
    """What the cluster looked like when read.

    `complete` is False when any part could not be read in full (a list failed, a page
    went missing): the planner then withholds every detach and delete.
    """

    nodes: tuple[Node, ...] = ()
    services: tuple[Service, ...] = ()
    kube_proxy_pods: tuple[Pod, ...] = ()
    kube_system_uid: str | None = None
    gaps: tuple[str, ...] = field(default=())
    # False when Nodes or kube-proxy Pods could not be read in full: version skew cannot be
    # ruled out then, so nothing new may be attached either.
    versions_complete: bool = True
    observed_at: float | None = None  # Unix time of the read; None for a dump (no grace)
    kube_proxy_daemonsets: tuple[DaemonSet, ...] = ()
    # Node name -> what the controller's active probe of its health port saw (optional).
    health_probes: Mapping[str, HealthProbe] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.gaps
