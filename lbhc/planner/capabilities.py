"""What a node's kube-proxy can do for a load balancer, decided from the best source there
is, and which source that was (kubernetes pkg/proxy/healthcheck; KEP-4004 for the node field)."""

from __future__ import annotations

from dataclasses import dataclass

from lbhc.model.cluster import HealthProbe, Node, Pod
from lbhc.planner.config import DrainingGate
from lbhc.planner.nodes import is_being_deleted
from lbhc.planner.versions import (
    KubeProxyVersion,
    VersionSource,
    is_digest_only,
    kube_proxy_container_image,
    kubelet_lower_bound,
    version_from_kubelet,
    version_from_node_field,
    version_from_pod,
)

Version = tuple[int, int, int]

# 1.7.2 is the first to serve /healthz on 0.0.0.0:10256 (1.7.0/1.7.1 bound it to 127.0.0.1,
# kubernetes#48600), so the first a cloud health checker can reach.
MIN_HEALTHZ_VERSION: Version = (1, 7, 2)
MIN_LIVEZ_VERSION: Version = (1, 28, 0)  # KEP-3836
# KubeProxyDrainingTerminatingNodes: alpha (off) in 1.28-1.29, beta (on by default, can be
# turned off) in 1.30, GA (always on) from 1.31.
MIN_DRAIN_GATE_VERSION: Version = (1, 28, 0)
MIN_DRAIN_DEFAULT_VERSION: Version = (1, 30, 0)
MIN_DRAIN_GA_VERSION: Version = (1, 31, 0)


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
    if version >= MIN_DRAIN_GA_VERSION:
        return Capabilities(True, True, True)
    if version >= MIN_DRAIN_DEFAULT_VERSION:  # beta: on unless turned off
        return Capabilities(True, True, gate is not DrainingGate.DISABLED)
    drains = {DrainingGate.ENABLED: True, DrainingGate.DISABLED: False}.get(gate)
    return Capabilities(True, True, drains)


def capabilities_from_hint(kubelet: Version, gate: DrainingGate) -> Capabilities:
    """A kubelet's version allows any kube-proxy up to three minors older: a capability is
    False when not even the newest allowed has it, True only for serving /healthz when even
    the oldest does, and otherwise unknown. A hint never makes /livez or draining definite:
    that is for the Pod's image or a probe to show (KEP-4004)."""
    oldest, newest = (
        capabilities_of(kubelet_lower_bound(kubelet), gate),
        capabilities_of(kubelet, gate),
    )

    def hinted(low: bool | None, high: bool | None, may_be_true: bool) -> bool | None:
        if high is False:
            return False
        return True if may_be_true and low is True else None

    return Capabilities(
        hinted(oldest.serves_healthz, newest.serves_healthz, True),
        hinted(oldest.serves_livez, newest.serves_livez, False),
        hinted(oldest.drains_when_deleted, newest.drains_when_deleted, False),
    )


def capabilities_from_probe(probe: HealthProbe, being_deleted: bool) -> Capabilities:
    """What the health port's answers prove: /livez 404 means older than 1.28; a refused
    connection (confirmed by the prober's retries) means no health server, while a timeout
    proves nothing. Draining shows only on a node that was being deleted when probed
    (/healthz 503 while /livez 200), and only if it still is."""
    if probe.healthz is None and probe.livez is None:
        return NO_HEALTH_SERVER if probe.refused else UNKNOWN
    if probe.healthz not in (200, 503):
        return NO_HEALTH_SERVER  # something else answers on the port; not kube-proxy's /healthz
    if probe.livez == 404:
        return Capabilities(True, False, False)
    if probe.livez not in (200, 503):
        return Capabilities(True, None, None)
    drains: bool | None = None
    if being_deleted and probe.node_marked and probe.livez == 200:
        drains = probe.healthz == 503
    return Capabilities(True, True, drains)


def describe_probe(probe: HealthProbe) -> str:
    def status(code: int | None) -> str:
        if code is not None:
            return str(code)
        return "refused" if probe.refused else "no answer"

    return (
        f"probe of {probe.address}: /healthz {status(probe.healthz)}, /livez {status(probe.livez)}"
    )


@dataclass(frozen=True)
class KubeProxyFacts:
    """One node's kube-proxy as lbhc understands it; `note` says why a better source was
    passed over (a digest-only image) or what a kube-proxy replacement does; `drain_reason`
    is why a replacement does or does not drain a node being deleted."""

    version: KubeProxyVersion
    capabilities: Capabilities
    note: str = ""
    drain_reason: str = ""
    replacement: str = ""  # the replacing DaemonSet's name, with VersionSource.REPLACEMENT

    @property
    def source(self) -> VersionSource:
        return self.version.source

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version.display(),
            "source": self.version.source.value,
            "capabilities": self.capabilities.to_json(),
            "note": self.note,
        }


def detect(
    node: Node,
    pod: Pod | None,
    probe: HealthProbe | None,
    gate: DrainingGate,
    assumed: Version | None = None,
) -> KubeProxyFacts:
    """Sources ranked as evidence: an assumed version (kube-proxy replaced), the kube-proxy
    Pod's image tag, the active probe, then the kubelet's version as a hint
    (kubeletVersion, else nodeInfo.kubeProxyVersion, which KEP-4004 says always held the
    kubelet's). A parsable tag decides. An unparsable one is "unknown" unless the probe,
    which observes the real server, can say more; it never lets a hint decide."""
    if assumed is not None:
        raw = "v{}.{}.{}".format(*assumed)
        return KubeProxyFacts(
            KubeProxyVersion(raw, VersionSource.ASSUMED, assumed), capabilities_of(assumed, gate)
        )
    tagged = version_from_pod(pod)
    if tagged is not None and tagged.version is not None:
        return KubeProxyFacts(tagged, capabilities_of(tagged.version, gate))
    note = _digest_note(pod)  # only now: nearly every node has a tag, every pass
    if probe is not None:
        seen = KubeProxyVersion(describe_probe(probe), VersionSource.PROBE, None)
        return KubeProxyFacts(seen, capabilities_from_probe(probe, is_being_deleted(node)), note)
    if tagged is not None:  # an unparsable tag: the kubelet's version is no better answer
        return KubeProxyFacts(tagged, UNKNOWN)
    hint = version_from_kubelet(node) or version_from_node_field(node)
    if hint is not None and hint.version is not None:
        return KubeProxyFacts(hint, capabilities_from_hint(hint.version, gate), note)
    if hint is not None:
        return KubeProxyFacts(hint, UNKNOWN, note)
    return KubeProxyFacts(KubeProxyVersion("", VersionSource.NONE, None), UNKNOWN, note)


def _digest_note(pod: Pod | None) -> str:
    if pod is None or not is_digest_only(kube_proxy_container_image(pod)):
        return ""
    return (
        f"Pod {pod.metadata.name}'s image is pinned by digest only, which names no version; "
        "the next source is used"
    )


def needs_probe(node: Node, pod: Pod | None) -> bool:
    """Exactly when `detect` would consult a probe: no parsable image tag."""
    tagged = version_from_pod(pod)
    return tagged is None or tagged.version is None
