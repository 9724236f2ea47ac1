"""kube-proxy replaced by the CNI: which replacement, and what it does on kube-proxy's health
port, so that lbhc neither takes the kubelet's version for a kube-proxy that is not there
nor claims a drain the replacement does not do.

Cilium's kube-proxy replacement (cilium/cilium daemon/healthz/kube_proxy_healthz.go) serves
only `/healthz`, and only when `kube-proxy-replacement-healthz-bind-address` is set (empty by
default: nothing listens on 10256). It answers 503 while the agent is unhealthy or the local
Node is being deleted; daemon/cmd/local_node_sync.go marks that from the Node's
deletionTimestamp (or its Delete event) and from nothing else, so the cluster-autoscaler's
ToBeDeletedByClusterAutoscaler taint does not fail it. Older releases (the handler in
daemon/cmd/kube_proxy_healthz.go) fail it only while the agent is unhealthy. Any other path,
`/livez` included, is the Go mux's 404.

GKE Dataplane V2 runs `anetd`, Cilium-based; Google does not publish what, if anything, it
serves on 10256, so lbhc claims nothing about it that a probe has not seen. Calico's eBPF
data plane serves nothing on 10256 and its calico-node DaemonSet runs with or without it,
so it is not detected (fallback_policy covers it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lbhc.model.cluster import HealthProbe, Node
from lbhc.planner.capabilities import NO_HEALTH_SERVER, Capabilities, KubeProxyFacts
from lbhc.planner.config import ReplacementHealthz
from lbhc.planner.versions import KubeProxyVersion, VersionSource

REPLACEMENT_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class Replacement:
    """A DaemonSet in kube-system that replaces kube-proxy, and what it is documented to do
    on the health port (None: not published)."""

    name: str
    product: str
    serves_livez: bool | None
    # Fails /healthz for a Node with a deletionTimestamp; never for the autoscaler's taint.
    drains_when_node_deleted: bool | None
    source: str  # where that is documented, for reasons and the README

    def display(self) -> str:
        return f"{self.product} (DaemonSet {REPLACEMENT_NAMESPACE}/{self.name})"


CILIUM = Replacement(
    "cilium",
    "Cilium",
    serves_livez=False,
    drains_when_node_deleted=True,
    source="cilium daemon/healthz/kube_proxy_healthz.go",
)
DATAPLANE_V2 = Replacement(
    "anetd",
    "GKE Dataplane V2",
    serves_livez=None,
    drains_when_node_deleted=None,
    source="GKE does not publish what anetd serves on port 10256",
)
# anetd first: it is GKE's, and no GKE cluster runs a DaemonSet named cilium beside it.
KNOWN_REPLACEMENTS: tuple[Replacement, ...] = (DATAPLANE_V2, CILIUM)
KNOWN_REPLACEMENT_NAMES: tuple[str, ...] = tuple(r.name for r in KNOWN_REPLACEMENTS)
_BY_NAME = {r.name: r for r in KNOWN_REPLACEMENTS}


def first_replacement(exists: Callable[[str], bool]) -> str | None:
    """The first known replacement DaemonSet (in the order above) that `exists` in
    kube-system, for the live read and a dump alike."""
    return next((name for name in KNOWN_REPLACEMENT_NAMES if exists(name)), None)


def known_replacement(name: str | None) -> Replacement | None:
    return _BY_NAME.get(name or "")


def serves_healthz(probe: HealthProbe | None, setting: ReplacementHealthz) -> bool | None:
    """The setting when it says; else what the probe saw: a /healthz status kube-proxy's
    server gives (200 or 503) is the replacement's server, a refusal (confirmed by the
    prober's retries) or any other answer is none, and no probe or a timeout is unknown."""
    if setting is not ReplacementHealthz.AUTO:
        return setting is ReplacementHealthz.YES
    if probe is None:
        return None
    if probe.healthz in (200, 503):
        return True
    if probe.healthz is not None or probe.refused:
        return False
    return None


def replaced_facts(
    node: Node, probe: HealthProbe | None, replacement: Replacement, setting: ReplacementHealthz
) -> KubeProxyFacts:
    serves = serves_healthz(probe, setting)
    seen = f"; probe saw /healthz {probe.healthz}" if probe and probe.healthz else ""
    raw = f"replaced by {replacement.display()}"
    version = KubeProxyVersion(raw, VersionSource.REPLACEMENT, None)
    if serves is False:
        why = (
            "kube_proxy.replacement_serves_healthz is no"
            if setting is ReplacementHealthz.NO
            else "nothing answers /healthz on its health port"
        )
        return KubeProxyFacts(version, NO_HEALTH_SERVER, why, why, replacement.name)
    drains, reason = _drains(node, replacement)
    if serves is None and drains is True:
        drains = None
        reason = (
            f"whether {replacement.product} serves /healthz on the health port is unknown (set "
            "kube_proxy.replacement_serves_healthz, or enable the probe)"
        )
    capabilities = Capabilities(serves, replacement.serves_livez if serves else None, drains)
    return KubeProxyFacts(version, capabilities, reason + seen, reason, replacement.name)


def _drains(node: Node, replacement: Replacement) -> tuple[bool | None, str]:
    if replacement.drains_when_node_deleted is None:
        return None, f"{replacement.source}, so whether it drains a node being deleted is unknown"
    if node.metadata.deletion_timestamp:
        return (
            replacement.drains_when_node_deleted,
            f"{replacement.product} fails /healthz while the Node has a deletionTimestamp "
            f"({replacement.source})",
        )
    return (
        False,
        f"{replacement.product} fails /healthz only once the Node is being deleted "
        f"(deletionTimestamp), not for the cluster-autoscaler's taint ({replacement.source})",
    )


def describe(replacement: Replacement, setting: ReplacementHealthz) -> str:
    """The plan's warning: what lbhc does with this replacement, and what to set."""
    serves = {
        ReplacementHealthz.AUTO: (
            "lbhc's check is attached only where the active probe (probe.enabled) saw its "
            "/healthz answer, or with kube_proxy.replacement_serves_healthz: yes"
        ),
        ReplacementHealthz.YES: (
            "kube_proxy.replacement_serves_healthz says it serves /healthz on the health port"
        ),
        ReplacementHealthz.NO: (
            "kube_proxy.replacement_serves_healthz says it serves nothing on the health port: "
            "lbhc's check is attached to no pool"
        ),
    }[setting]
    return (
        f"no kube-proxy Pods: kube-proxy is replaced by {replacement.display()}; {serves}; "
        f"drain verdicts follow what it is documented to do ({replacement.source})"
    )
