"""ingress-gce's names and descriptions for L4 load balancers, bit for bit:
kubernetes/ingress-gce pkg/utils/namer/l4_namer.go (L4Namer: L4Backend, L4ForwardingRule,
L4HealthCheck, L4HealthCheckFirewall, L4Firewall), pkg/utils/namer/utils.go
(TrimFieldsEvenly, GetSuffixedName), pkg/utils/namer/namer.go (InstanceGroup,
decorateName), pkg/utils/common/common.go (ContentHash), pkg/utils/utils.go
(MakeL4LBServiceDescription, MakeL4LBFirewallDescription), pkg/utils/negdescription.go
(StandardNEGDescription) and the keys of pkg/l4/annotations/service.go.

Written from upstream, not imported from lbhc: the emulator is an independent check on how
lbhc recognises these load balancers."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

# pkg/utils/common/common.go charMap: digits then lowercase letters.
_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"
# pkg/utils/namer: defaultPrefix + schemaVersionV2, clusterUIDLength, maximumL4CombinedLength.
PREFIX = "k8s2"
CLUSTER_UID_LENGTH = 8
MAX_COMBINED_LENGTH = 39
MAX_NAME_LENGTH = 63
SHARED_HC_SUFFIX = "l4-shared-hc"
FIREWALL_HC_SUFFIX = "-fw"

# pkg/l4/annotations/service.go: what the L4 controllers record on the Service.
ANNOTATION_PREFIX = "service.kubernetes.io"
BACKEND_SERVICE_KEY = f"{ANNOTATION_PREFIX}/backend-service"
HEALTHCHECK_KEY = f"{ANNOTATION_PREFIX}/healthcheck"
FIREWALL_FOR_HC_KEY = f"{ANNOTATION_PREFIX}/firewall-rule-for-hc"
FIREWALL_KEY = f"{ANNOTATION_PREFIX}/firewall-rule"
TCP_FORWARDING_RULE_KEY = f"{ANNOTATION_PREFIX}/tcp-forwarding-rule"
UDP_FORWARDING_RULE_KEY = f"{ANNOTATION_PREFIX}/udp-forwarding-rule"
L3_FORWARDING_RULE_KEY = f"{ANNOTATION_PREFIX}/l3-forwarding-rule"
FIREWALL_DENY_KEY = f"{FIREWALL_KEY}-deny"
# pkg/l4/resources/l4syncresult.go L4ResourceAnnotationKeys: removed before the new set is
# merged in (updateL4ResourcesAnnotations).
RESOURCE_ANNOTATION_KEYS = (
    BACKEND_SERVICE_KEY,
    TCP_FORWARDING_RULE_KEY,
    UDP_FORWARDING_RULE_KEY,
    L3_FORWARDING_RULE_KEY,
    HEALTHCHECK_KEY,
    FIREWALL_KEY,
    FIREWALL_DENY_KEY,
    FIREWALL_FOR_HC_KEY,
)

# pkg/utils/common/finalizer.go.
ILB_FINALIZER_V2 = "gke.networking.io/l4-ilb-v2"
NETLB_FINALIZER_V2 = "gke.networking.io/l4-netlb-v2"  # instance group backends
NETLB_FINALIZER_V3 = "gke.networking.io/l4-netlb-v3"  # NEG backends
# pkg/l4/annotations/service.go RegionalInternalLoadBalancerClass.
ILB_CLASS = "networking.gke.io/l4-regional-internal"

# pkg/utils/utils.go L4LBSharedResourcesDesc; meta.VersionGA.
_SHARED_DESCRIPTION = (
    "This resource is shared by all L4 %s Services using ExternalTrafficPolicy: Cluster."
)
_API_VERSION = "ga"
ILB = "ILB"  # utils.L4LBType ToString
XLB = "XLB"


def content_hash(text: str, length: int) -> str:
    """ContentHash: the first `length` bytes of SHA-256, each mapped onto [0-9a-z]."""
    digest = hashlib.sha256(text.encode()).digest()
    return "".join(_CHARS[byte % len(_CHARS)] for byte in digest[:length])


def trim_fields_evenly(maximum: int, *fields: str) -> list[str]:
    """TrimFieldsEvenly: cut the fields in proportion to their length so the total is at
    most `maximum`, the rounding left over given back to the first fields."""
    total = sum(len(f) for f in fields)
    if maximum <= 0 or total <= maximum:
        return list(fields)
    excess = total - maximum
    lengths = [len(f) - len(f) * excess // total - 1 for f in fields]
    for i in range(maximum - sum(lengths)):
        lengths[i] += 1
    return [f[:n] for f, n in zip(fields, lengths, strict=True)]


def suffixed(name: str, suffix: str) -> str:
    """GetSuffixedName: `name` cut to leave room for `suffix` within 63 characters."""
    return name[: MAX_NAME_LENGTH - len(suffix)] + suffix


@dataclass(frozen=True)
class L4Namer:
    """NewL4Namer(kubeSystemUID, namer): names from the kube-system Namespace's UID, and
    the cluster namer's uid (the ingress-uid ConfigMap's) for the shared instance groups."""

    kube_system_uid: str
    cluster_uid: str

    @property
    def cluster_hash(self) -> str:
        """v2ClusterUID: ContentHash(kubeSystemUID, 8)."""
        return content_hash(self.kube_system_uid, CLUSTER_UID_LENGTH)

    def _service_hash(self, namespace: str, name: str) -> str:
        return content_hash(f"{self.cluster_hash};{namespace};{name}", 8)

    def _trimmed(self, namespace: str, name: str, maximum: int) -> str:
        return "-".join(trim_fields_evenly(maximum, namespace, name))

    def backend(self, namespace: str, name: str) -> str:
        """L4Backend: k8s2-{uid}-{ns}-{name}-{hash}; also the NEGs', the nodes firewall's
        (L4Firewall) and a Local Service's check's name."""
        trimmed = self._trimmed(namespace, name, MAX_COMBINED_LENGTH)
        return f"{PREFIX}-{self.cluster_hash}-{trimmed}-{self._service_hash(namespace, name)}"

    def forwarding_rule(self, namespace: str, name: str, protocol: str) -> str:
        """L4ForwardingRule: k8s2-{protocol}-{uid}-{ns}-{name}-{hash} (the internal LB's; the
        external one keeps the cloud provider's name, "a" + UID: l4netlb.go frName)."""
        protocol = protocol.lower()
        protocol = "l3" if protocol == "l3_default" else protocol
        trimmed = self._trimmed(namespace, name, MAX_COMBINED_LENGTH - len(protocol) - 1)
        hashed = self._service_hash(namespace, name)
        return f"{PREFIX}-{protocol}-{self.cluster_hash}-{trimmed}-{hashed}"

    def health_check(self, namespace: str, name: str, shared: bool) -> str:
        """L4HealthCheck: k8s2-{uid}-l4-shared-hc for externalTrafficPolicy Cluster."""
        if shared:
            return f"{PREFIX}-{self.cluster_hash}-{SHARED_HC_SUFFIX}"
        return self.backend(namespace, name)

    def health_check_firewall(self, namespace: str, name: str, shared: bool) -> str:
        """L4HealthCheckFirewall: k8s2-{uid}-l4-shared-hc-fw, or the backend's name + -fw."""
        if shared:
            return f"{PREFIX}-{self.cluster_hash}-{SHARED_HC_SUFFIX}{FIREWALL_HC_SUFFIX}"
        return suffixed(self.backend(namespace, name), FIREWALL_HC_SUFFIX)

    @property
    def instance_group(self) -> str:
        """Namer.InstanceGroup: decorateName("k8s-ig") = k8s-ig--{uid}, the shared groups
        (the cloud provider's makeInstanceGroupName gives the same)."""
        name = f"k8s-ig--{self.cluster_uid}" if self.cluster_uid else "k8s-ig"
        return name if len(name) <= 62 else name[:62] + "0"  # namer.go truncate


def _description(**fields: str) -> str:
    """json.Marshal of L4LBResourceDescription: service-name always, the rest omitempty, in
    the struct's order, no spaces."""
    body = {"networking.gke.io/service-name": fields.get("service", "")}
    for key, value in (
        ("networking.gke.io/api-version", _API_VERSION),
        ("networking.gke.io/service-ip", fields.get("ip", "")),
        ("networking.gke.io/resource-description", fields.get("shared", "")),
    ):
        if value:
            body[key] = value
    return json.dumps(body, separators=(",", ":"))


def service_description(service_key: str, ip: str, shared: bool, lb_type: str) -> str:
    """MakeL4LBServiceDescription (checks, backend services, forwarding rules)."""
    if shared:
        return _description(shared=_SHARED_DESCRIPTION % lb_type)
    return _description(service=service_key, ip=ip)


def firewall_description(service_key: str, ip: str, shared: bool) -> str:
    """MakeL4LBFirewallDescription: the shared rule's says "all L4  Services" (an empty type)."""
    if shared:
        return _description(shared=_SHARED_DESCRIPTION % "")
    return _description(service=service_key, ip=ip)


def neg_description(kube_system_uid: str, namespace: str, name: str, port: str = "0") -> str:
    """StandardNEGDescription.String (json.Marshal, every field omitempty)."""
    fields = {
        "cluster-uid": kube_system_uid,
        "namespace": namespace,
        "service-name": name,
        "port": port,
    }
    return json.dumps({k: v for k, v in fields.items() if v}, separators=(",", ":"))
