"""Small frozen projections of the Kubernetes objects lbhc reads.

They are validated straight from the API's raw JSON (extra fields ignored) rather than
through the kubernetes client's models, which cost ~10x the memory (docs/benchmarks.md, 4). Only
fields the planner uses are kept, so the projections double as the planner's input types.

Each is a slotted frozen dataclass validated by pydantic (a TypeAdapter per class), not a
pydantic BaseModel: a BaseModel instance carries a __dict__ and a fields-set set, ~490 bytes
before its first field, and a Pod is a dozen nested instances. At 5,000 Nodes, 10,000
Services and 5,000 Pods that overhead alone was most of the cache (docs/benchmarks.md, 4).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Self

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter


class _Projection:
    """What callers use of pydantic's model API: validate from a dict or raw JSON, dump."""

    __slots__ = ()
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="ignore", populate_by_name=True)

    @classmethod
    def model_validate(cls, obj: Any) -> Self:
        validated: Self = _adapter(cls).validate_python(obj)
        return validated

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> Self:
        validated: Self = _adapter(cls).validate_json(data)
        return validated

    def model_dump(self, *, by_alias: bool = False) -> dict[str, Any]:
        dumped: dict[str, Any] = _adapter(type(self)).dump_python(self, by_alias=by_alias)
        return dumped


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:  # built once per class; a race only builds one twice
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def _interned(value: dict[str, str]) -> dict[str, str]:
    """Label keys and values repeat across thousands of objects: share one copy of each."""
    return {sys.intern(k): sys.intern(v) for k, v in value.items()}


InternedMap = Annotated[dict[str, str], AfterValidator(_interned)]
projection = dataclass(frozen=True, slots=True)


@projection
class ObjectMeta(_Projection):
    name: str
    namespace: str = ""
    uid: str = ""
    deletion_timestamp: Annotated[str | None, Field(alias="deletionTimestamp")] = None
    # resourceVersion changes with every write (heartbeats included): left out of equality
    # so an unchanged object never looks changed.
    resource_version: Annotated[str, Field(alias="resourceVersion")] = field(
        default="", compare=False
    )


@projection
class LabeledMeta(ObjectMeta):
    """Nodes and Pods: lbhc reads their labels (LB exclusion, the kube-proxy selector) and
    never their annotations, which on Nodes are large; they are not kept."""

    labels: InternedMap = field(default_factory=dict)
    # RFC 3339; for grace periods (a node or Pod just created is not yet a problem).
    creation_timestamp: Annotated[str, Field(alias="creationTimestamp")] = ""


# cluster-autoscaler core/scaledown/actuation/delay.go DelayDeletionAnnotationPrefix: while a
# node carries an annotation with it, the autoscaler waits before deleting the node.
DELAY_DELETION_PREFIX = "delay-deletion.cluster-autoscaler.kubernetes.io/"


def _delay_deletion_only(annotations: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in annotations.items() if k.startswith(DELAY_DELETION_PREFIX)}


@projection
class NodeMeta(LabeledMeta):
    """A Node's annotations are large and lbhc needs few: only the delay-deletion ones (its
    own hold, and any other controller's) are kept."""

    annotations: Annotated[InternedMap, AfterValidator(_delay_deletion_only)] = field(
        default_factory=dict
    )


@projection
class AnnotatedMeta(ObjectMeta):
    """Services: lbhc reads their annotations (the opt-out), never their labels."""

    annotations: InternedMap = field(default_factory=dict)


@projection
class Taint(_Projection):
    key: str
    value: str = ""
    effect: str = ""


@projection
class NodeSpec(_Projection):
    taints: tuple[Taint, ...] = ()
    provider_id: Annotated[str, Field(alias="providerID")] = ""


@projection
class NodeSystemInfo(_Projection):
    kubelet_version: Annotated[str, Field(alias="kubeletVersion")] = ""
    # Really the kubelet's version and cleared from 1.33 on (KEP-4004): a hint only.
    kube_proxy_version: Annotated[str, Field(alias="kubeProxyVersion")] = ""


@projection
class NodeAddress(_Projection):
    type: str = ""
    address: str = ""


@projection
class Condition(_Projection):
    type: str
    status: str = "Unknown"


def _ready_only(conditions: tuple[Condition, ...]) -> tuple[Condition, ...]:
    return tuple(c for c in conditions if c.type == "Ready")


@projection
class NodeStatus(_Projection):
    node_info: Annotated[NodeSystemInfo, Field(alias="nodeInfo")] = field(
        default_factory=NodeSystemInfo
    )
    # Where kube-proxy's health port is probed from the controller (InternalIP).
    addresses: tuple[NodeAddress, ...] = ()
    # Only Ready, type and status: a heartbeat (which moves only the times) changes nothing
    # here, and the other conditions would cost memory at thousands of nodes.
    conditions: Annotated[tuple[Condition, ...], AfterValidator(_ready_only)] = ()


@projection
class Node(_Projection):
    metadata: NodeMeta
    spec: NodeSpec = field(default_factory=NodeSpec)
    status: NodeStatus = field(default_factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)

    @property
    def internal_ip(self) -> str:
        for address in self.status.addresses:
            if address.type == "InternalIP":
                return address.address
        return ""


@projection
class ServiceSpec(_Projection):
    type: str = "ClusterIP"
    # Absent means Cluster: the API server defaults it, but dumps and older objects may omit it.
    external_traffic_policy: Annotated[str, Field(alias="externalTrafficPolicy")] = "Cluster"
    load_balancer_class: Annotated[str | None, Field(alias="loadBalancerClass")] = None


@projection
class LoadBalancerIngress(_Projection):
    ip: str = ""
    hostname: str = ""


@projection
class LoadBalancerStatus(_Projection):
    ingress: tuple[LoadBalancerIngress, ...] = ()


@projection
class ServiceStatus(_Projection):
    """Kept so that the service controller's status update, which it writes once the load
    balancer exists, is a change that triggers a pass: the pool may appear in GCE after
    lbhc's pass for the new Service, and would otherwise wait for the next resync."""

    load_balancer: Annotated[LoadBalancerStatus, Field(alias="loadBalancer")] = field(
        default_factory=LoadBalancerStatus
    )


@projection
class Service(_Projection):
    metadata: AnnotatedMeta
    spec: ServiceSpec = field(default_factory=ServiceSpec)
    status: ServiceStatus = field(default_factory=ServiceStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


@projection
class HttpGetAction(_Projection):
    path: str = ""
    port: int | str = ""


@projection
class Probe(_Projection):
    """Only HTTP probes matter here: kube-proxy's health server speaks HTTP."""

    http_get: Annotated[HttpGetAction | None, Field(alias="httpGet")] = None


@projection
class Container(_Projection):
    name: str = ""
    image: str = ""
    readiness_probe: Annotated[Probe | None, Field(alias="readinessProbe")] = None
    liveness_probe: Annotated[Probe | None, Field(alias="livenessProbe")] = None


@projection
class PodSpec(_Projection):
    node_name: Annotated[str, Field(alias="nodeName")] = ""
    containers: tuple[Container, ...] = ()
    node_selector: Annotated[InternedMap, Field(alias="nodeSelector")] = field(default_factory=dict)


@projection
class PodStatus(_Projection):
    phase: str = ""
    conditions: tuple[Condition, ...] = ()


@projection
class OwnerReference(_Projection):
    kind: str = ""
    name: str = ""
    uid: str = ""


@projection
class PodMeta(LabeledMeta):
    owner_references: Annotated[tuple[OwnerReference, ...], Field(alias="ownerReferences")] = ()


@projection
class Pod(_Projection):
    metadata: PodMeta
    spec: PodSpec = field(default_factory=PodSpec)
    status: PodStatus = field(default_factory=PodStatus)

    @property
    def ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)


@projection
class LabelSelector(_Projection):
    match_labels: Annotated[dict[str, str], Field(alias="matchLabels")] = field(
        default_factory=dict
    )


@projection
class PodTemplateSpec(_Projection):
    spec: PodSpec = field(default_factory=PodSpec)


@projection
class DaemonSetSpec(_Projection):
    selector: LabelSelector = field(default_factory=LabelSelector)
    template: PodTemplateSpec = field(default_factory=PodTemplateSpec)


@projection
class DaemonSet(_Projection):
    """kube-proxy DaemonSets, for the readiness-probe policy (audit or enforce /livez)."""

    metadata: LabeledMeta
    spec: DaemonSetSpec = field(default_factory=DaemonSetSpec)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


@projection
class Namespace(_Projection):
    metadata: ObjectMeta


@projection
class ConfigMap(_Projection):
    """Only kube-system/ingress-uid is read: the cloud provider's cluster uid."""

    metadata: ObjectMeta
    data: dict[str, str] = field(default_factory=dict)


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
    """Where to probe a node's kube-proxy, whether the node was marked for deletion, and
    whether it is settled (Ready, its kube-proxy Pod, if any, neither starting nor going):
    only then can refusals mean "no health server" rather than a restart."""

    address: str
    node_marked: bool
    settled: bool = True


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
    # The cloud provider's cluster id from ConfigMap kube-system/ingress-uid (`provider-uid`
    # when present, else `uid`, as gce_clusterid.go GetID): the id in its own node check's
    # name, k8s-<id>-node (None when absent or not read).
    cloud_provider_uid: str | None = None
    # The name of a DaemonSet in kube-system known to replace kube-proxy (`cilium`, `anetd`),
    # when one exists (lbhc/planner/replacement.py); None when none was found or not read.
    kube_proxy_replacement: str | None = None

    @property
    def complete(self) -> bool:
        return not self.gaps
