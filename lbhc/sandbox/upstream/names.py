"""Names, descriptions and constants of today's GCE cloud provider, from
kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer_naming.go, gce_clusterid.go,
gce_healthchecks.go, gce.go, gce_loadbalancer.go, gce_util.go, gce_annotations.go and
gce_loadbalancer_internal.go (ingress-gce's names are in `ingress_gce.names`).

Written from upstream, not imported from lbhc (load_balancer_name is not
lbhc.planner.names.target_pool_name): the emulator is an independent check on lbhc's names."""

from __future__ import annotations

import uuid
from typing import Any

# gce_clusterid.go: UIDNamespace, UIDConfigMapName, UIDCluster, UIDProvider, UIDLengthBytes.
UID_NAMESPACE = "kube-system"
UID_CONFIGMAP = "ingress-uid"
UID_KEY = "uid"
PROVIDER_UID_KEY = "provider-uid"
UID_LENGTH_BYTES = 8

# gce_healthchecks.go: nodesHealthCheckPath, lbNodesHealthCheckPort (kube-proxy's healthz).
NODES_HEALTH_CHECK_PATH = "/healthz"
NODES_HEALTH_CHECK_PORT = 10256
# gce.go: gceHcCheckIntervalSeconds, gceHcTimeoutSeconds, gceHcHealthyThreshold,
# gceHcUnhealthyThreshold: every check makeHTTPHealthCheck writes has these.
CHECK_INTERVAL_SEC = 8
TIMEOUT_SEC = 1
HEALTHY_THRESHOLD = 1
UNHEALTHY_THRESHOLD = 3
# gce_loadbalancer.go: l4LbSrcRngsFlag's default, the health checkers' source ranges.
HEALTH_CHECK_SOURCE_RANGES = (
    "130.211.0.0/22",
    "35.191.0.0/16",
    "209.85.152.0/22",
    "209.85.204.0/22",
)
# gce_loadbalancer_external.go: firewallPriorityDefault (the deny-rule flag is off).
FIREWALL_PRIORITY = 1000

# gce_annotations.go / gce_util.go: who handles a Service.
LB_TYPE_ANNOTATIONS = (
    "networking.gke.io/load-balancer-type",
    "cloud.google.com/load-balancer-type",
)
INTERNAL_TYPES = frozenset({"Internal", "internal"})
LEGACY_EXTERNAL_CLASS = "networking.gke.io/l4-regional-external-legacy"
LEGACY_INTERNAL_CLASS = "networking.gke.io/l4-regional-internal-legacy"
RBS_CLASS = "networking.gke.io/l4-regional-external"
RBS_ANNOTATION = "cloud.google.com/l4-rbs"
RBS_ENABLED = "enabled"
NETLB_FINALIZER_V1 = "gke.networking.io/l4-netlb-v1"  # the cloud provider's own NetLB
NETLB_FINALIZER_V2 = "gke.networking.io/l4-netlb-v2"  # ingress-gce's RBS NetLB
NETLB_FINALIZER_V3 = "gke.networking.io/l4-netlb-v3"
# gce_loadbalancer_internal.go ILBFinalizerV1 (the cloud provider's internal LBs) and V2
# (another controller's: ingress-gce with GKE subsetting).
ILB_FINALIZER_V1 = "gke.networking.io/l4-ilb-v1"
ILB_FINALIZER_V2 = "gke.networking.io/l4-ilb-v2"


def make_cluster_uid(seed: str) -> str:
    """A stand-in for gce_clusterid.go makeUID (UIDLengthBytes random bytes, hex encoded):
    16 lowercase hex characters, derived from `seed` so a sandbox is reproducible."""
    return uuid.uuid5(uuid.NAMESPACE_DNS, f"sandbox/ingress-uid/{seed}").hex[: 2 * UID_LENGTH_BYTES]


def ingress_uid_configmap(uid: str) -> dict[str, Any]:
    """The ConfigMap gce_clusterid.go ClusterID.getOrInitialize creates: the same new id
    under both keys."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": UID_CONFIGMAP, "namespace": UID_NAMESPACE},
        "data": {UID_KEY: uid, PROVIDER_UID_KEY: uid},
    }


def load_balancer_name(service_uid: str) -> str:
    """k8s.io/cloud-provider DefaultLoadBalancerName, which gce_loadbalancer.go
    GetLoadBalancerName returns: "a" + the Service UID without dashes, cut to 32. It names the
    target pool, the forwarding rule and a Local Service's own health check."""
    return ("a" + service_uid.replace("-", ""))[:32]


def nodes_health_check_name(cluster_id: str) -> str:
    """gce_loadbalancer_naming.go MakeNodesHealthCheckName: the check every Cluster pool
    made since it existed shares."""
    return f"k8s-{cluster_id}-node"


def health_check_firewall_name(cluster_id: str, check_name: str, nodes_check: bool) -> str:
    """gce_loadbalancer_naming.go MakeHealthCheckFirewallName."""
    if nodes_check:
        return nodes_health_check_name(cluster_id) + "-http-hc"
    return "k8s-" + check_name + "-http-hc"


def firewall_name(lb_name: str) -> str:
    """gce_loadbalancer_naming.go MakeFirewallName: the rule letting the traffic in."""
    return f"k8s-fw-{lb_name}"


def service_description(service_key: str) -> str:
    """gce_loadbalancer_naming.go makeServiceDescription (forwarding rules), which is also
    the target pool's description in createTargetPoolAndHealthCheck."""
    return f'{{"kubernetes.io/service-name":"{service_key}"}}'


def health_check_description(check_name: str) -> str:
    """gce_loadbalancer_naming.go makeHealthCheckDescription, called by makeHTTPHealthCheck
    with the CHECK's name: a Local Service's check says its load balancer name, not ns/name."""
    return f'{{"kubernetes.io/service-name":"{check_name}"}}'


def firewall_description(service_key: str, ip: str) -> str:
    """gce_loadbalancer_naming.go makeFirewallDescription (note the space after the comma)."""
    return f'{{"kubernetes.io/service-name":"{service_key}", "kubernetes.io/service-ip":"{ip}"}}'


def cluster_firewall_description(cluster_id: str) -> str:
    """The nodes check firewall's, from gce_loadbalancer_external.go
    ensureHTTPHealthCheckFirewall."""
    return f'{{"kubernetes.io/cluster-id":"{cluster_id}"}}'


# -- internal load balancers (gce_loadbalancer_naming.go, gce_loadbalancer_internal.go) -------


def instance_group_name(cluster_id: str) -> str:
    """makeInstanceGroupName: k8s-ig--<cluster id>, shared with ingress-gce."""
    return f"k8s-ig--{cluster_id}" if cluster_id else "k8s-ig"


def internal_health_check_name(lb_name: str, cluster_id: str, shared: bool) -> str:
    """makeHealthCheckName: the nodes check's name for a Cluster Service (a global
    `healthChecks` resource, not the legacy `httpHealthChecks` one of the same name)."""
    return nodes_health_check_name(cluster_id) if shared else lb_name


def internal_health_check_firewall_name(lb_name: str, cluster_id: str, shared: bool) -> str:
    """makeHealthCheckFirewallName: k8s-<id>-node-hc, or the load balancer's name + -hc."""
    return f"k8s-{cluster_id}-node-hc" if shared else f"{lb_name}-hc"


def backend_service_description(service_key: str) -> str:
    """makeBackendServiceDescription for an unshared backend service."""
    return f'{{"kubernetes.io/service-name":"{service_key}"}}'
