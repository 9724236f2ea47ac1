"""What a node's kube-proxy can do for a load balancer, decided from the best source there
is, and which source that was (reference.md 1 and 2)."""

from __future__ import annotations

from dataclasses import dataclass

from lbhc.model.cluster import HealthProbe, Node, Pod
from lbhc.planner.config import DrainingGate
from lbhc.planner.nodes import is_being_deleted
from lbhc.planner.versions import (
    KubeProxyVersion,
    VersionSource,
    version_from_kubelet,
    version_from_node_field,
    version_from_pod,
)

Version = tuple[int, int, int]

# 1.7.2 is the first to serve /healthz on 0.0.0.0:10256 (1.7.0/1.7.1 bound it to 127.0.0.1,
# kubernetes#48600), so the first a cloud health checker can reach.
MIN_HEALTHZ_VERSION: Version = (1, 7, 2)
MIN_LIVEZ_VERSION: Version = (1, 28, 0)  # KEP-3836
# KubeProxyDrainingTerminatingNodes: alpha (off) in 1.28-1.29, on by default from 1.30.
MIN_DRAIN_GATE_VERSION: Version = (1, 28, 0)
MIN_DRAIN_DEFAULT_VERSION: Version = (1, 30, 0)


@dataclass(frozen=True)
class Capabilities:
    """Each is None when it cannot be known from what was seen."""

    serves_healthz: bool | None
    serves_livez: bool | None
    drains_when_deleted: bool | None

    def to_json(self) -> dict[str, bool | None]:
        return {
            "servesHealthz": self.serves_healthz,
            "servesLivez": self.serves_livez,
            "drainsWhenDeleted": self.drains_when_deleted,
        }


UNKNOWN = Capabilities(None, None, None)
NO_HEALTH_SERVER = Capabilities(False, False, False)


def capabilities_of(version: Version | None, gate: DrainingGate) -> Capabilities:
    if version is None:
        return UNKNOWN
    if version < MIN_HEALTHZ_VERSION:
        return NO_HEALTH_SERVER
    if version < MIN_DRAIN_GATE_VERSION:
        return Capabilities(True, False, False)
    if version >= MIN_DRAIN_DEFAULT_VERSION:
        return Capabilities(True, True, True)
    drains = {DrainingGate.ENABLED: True, DrainingGate.DISABLED: False}.get(gate)
    return Capabilities(True, True, drains)


def capabilities_from_probe(probe: HealthProbe, being_deleted: bool) -> Capabilities:
    """What the health port's answers prove: /livez 404 means older than 1.28, no answer
    means no health server; draining shows only on a node being deleted (/healthz 503 while
    /livez 200)."""
    if probe.healthz is None and probe.livez is None:
        return NO_HEALTH_SERVER
    if probe.healthz not in (200, 503):
        return NO_HEALTH_SERVER  # something else answers on the port; not kube-proxy's /healthz
    if probe.livez == 404:
        return Capabilities(True, False, False)
    if probe.livez not in (200, 503):
        return Capabilities(True, None, None)
    drains: bool | None = None
    if being_deleted and probe.livez == 200:
        drains = probe.healthz == 503
    return Capabilities(True, True, drains)


def describe_probe(probe: HealthProbe) -> str:
    def status(code: int | None) -> str:
        return "no answer" if code is None else str(code)

    return (
        f"probe of {probe.address}: /healthz {status(probe.healthz)}, /livez {status(probe.livez)}"
    )


@dataclass(frozen=True)
class KubeProxyFacts:
    """One node's kube-proxy as lbhc understands it."""

    version: KubeProxyVersion
    capabilities: Capabilities

    @property
    def source(self) -> VersionSource:
        return self.version.source

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version.display(),
            "source": self.version.source.value,
            "capabilities": self.capabilities.to_json(),
        }


def detect(
    node: Node,
    pod: Pod | None,
    probe: HealthProbe | None,
    gate: DrainingGate,
    assumed: Version | None = None,
) -> KubeProxyFacts:
    """Sources in order: an assumed version (kube-proxy replaced), the kube-proxy Pod's image
    tag, nodeInfo.kubeProxyVersion, the active probe, kubeletVersion. A parsable version
    decides. An unparsable one is "unknown" unless the probe, which observes the real
    server, can say more; it never lets the kubelet's version (a mere hint) decide."""
    if assumed is not None:
        raw = "v{}.{}.{}".format(*assumed)
        return KubeProxyFacts(
            KubeProxyVersion(raw, VersionSource.ASSUMED, assumed), capabilities_of(assumed, gate)
        )
    unparsable: KubeProxyVersion | None = None
    for found in (version_from_pod(pod), version_from_node_field(node)):
        if found is None:
            continue
        if found.version is not None:
            return KubeProxyFacts(found, capabilities_of(found.version, gate))
        unparsable = found  # the node field is the kubelet's version: not a better answer
        break
    if probe is not None:
        seen = KubeProxyVersion(describe_probe(probe), VersionSource.PROBE, None)
        return KubeProxyFacts(seen, capabilities_from_probe(probe, is_being_deleted(node)))
    if unparsable is not None:
        return KubeProxyFacts(unparsable, UNKNOWN)
    hint = version_from_kubelet(node)
    if hint is not None:
        return KubeProxyFacts(hint, capabilities_of(hint.version, gate))
    return KubeProxyFacts(KubeProxyVersion("", VersionSource.NONE, None), UNKNOWN)
