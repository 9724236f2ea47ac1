"""What the planner needs to know beyond the two snapshots: plain, validated elsewhere."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Google's health-checker ranges for target-pool network LBs. 130.211.0.0/22 serves other
# LB types only, so it is deliberately absent (Google Cloud, "Health check firewall rules"
# for target-pool network load balancers: cloud.google.com/load-balancing/docs/health-checks).
HEALTH_CHECKER_RANGES = ("35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22")
# And for internal passthrough load balancers (the same page): what probes an internal backend
# service's check, so what the firewall must admit for it to drain anything.
INTERNAL_HEALTH_CHECKER_RANGES = ("35.191.0.0/16", "130.211.0.0/22")


Selector = tuple[tuple[str, str], ...]  # equality requirements, all of which must hold

# Where kube-proxy runs, by who installed the cluster: kubeadm's DaemonSet; kube-up's and
# GKE's static Pods (kubernetes cluster/gce/manifests/kube-proxy.manifest); Gardener's DaemonSet
# per worker pool (gardener pkg/component/kubernetes/proxy).
KUBEADM_SELECTOR: Selector = (("k8s-app", "kube-proxy"),)
STATIC_POD_SELECTOR: Selector = (("component", "kube-proxy"), ("tier", "node"))
GARDENER_SELECTOR: Selector = (("app", "kubernetes"), ("role", "proxy"))
KNOWN_KUBE_PROXY_SELECTORS: tuple[Selector, ...] = (
    KUBEADM_SELECTOR,
    STATIC_POD_SELECTOR,
    GARDENER_SELECTOR,
)


def selector_text(selector: Selector) -> str:
    return ",".join(f"{key}={value}" for key, value in selector)


class UnknownVersionPolicy(StrEnum):
    # Default: an unknown kube-proxy may not answer on the port at all, and attaching would
    # then take its node out of every LB. Falling back leaves pools as the cloud controller
    # made them, which is what upstream did for unparsable versions.
    FALLBACK = "fallback"
    ASSUME_SUPPORTED = "assume-supported"


class FallbackPolicy(StrEnum):
    # Default, as the original design and upstream: one node whose kube-proxy cannot serve
    # /healthz withdraws the shared check everywhere (or it would be marked unhealthy in
    # every pool and its share of traffic shifted onto the others).
    ANY_OLD_NODE = "any-old-node"
    NEVER = "never"
    # Every node is taken to run this version: for clusters whose kube-proxy is replaced by
    # something serving the same port (a CNI), where no kube-proxy Pod tells the version.
    ASSUME_VERSION = "assume-version"


class ReplacementHealthz(StrEnum):
    """Whether a kube-proxy replacement found in the cluster (Cilium, GKE Dataplane V2) serves
    kube-proxy's /healthz on the health port, which lbhc cannot read from the API."""

    AUTO = "auto"  # default: only where the active probe saw it answer
    YES = "yes"  # on every node (Cilium with kube-proxy-replacement-healthz-bind-address set)
    NO = "no"  # nowhere: attach lbhc's check to no pool


class DrainingGate(StrEnum):
    """KubeProxyDrainingTerminatingNodes on 1.28-1.29 kube-proxies (off by default there),
    which lbhc cannot see from outside: "unknown" unless the operator says."""

    UNKNOWN = "unknown"
    ENABLED = "enabled"
    DISABLED = "disabled"


class HealthCheckMode(StrEnum):
    """What lbhc does about an eligible pool that already carries a check not its own."""

    # Default: leave it. On a current cluster that is nearly every Cluster pool, carrying the
    # cloud provider's own node check; lbhc backfills only pools with none.
    COEXIST = "coexist"
    # Replace it with lbhc's (to own the timings), recording what it replaced so that a mode
    # change, fallback or `lbhc teardown` can give it back.
    TAKEOVER = "takeover"


class ReadinessPolicy(StrEnum):
    OFF = "off"
    AUDIT = "audit"  # default: report, never write
    ENFORCE = "enforce"  # patch the readiness probe path of the DaemonSets it manages


@dataclass(frozen=True)
class PlannerConfig:
    project: str
    region: str
    network: str = "default"
    network_project: str = ""  # a Shared VPC's host project; "" is `project`
    node_tags: tuple[str, ...] = ()
    cluster_id: str | None = None
    base_name: str = "k8s-l4-healthcheck"
    port: int = 10256
    request_path: str = "/healthz"
    check_interval_sec: int = 8
    timeout_sec: int = 1
    healthy_threshold: int = 1
    unhealthy_threshold: int = 3
    raise_only_timings: bool = False
    source_ranges: tuple[str, ...] = HEALTH_CHECKER_RANGES
    load_balancer_classes: tuple[str, ...] = ()
    opt_out_annotation: str = "lbhc.dev/ignore"
    health_check_mode: HealthCheckMode = HealthCheckMode.COEXIST
    unknown_version_policy: UnknownVersionPolicy = UnknownVersionPolicy.FALLBACK
    kube_proxy_namespace: str = "kube-system"
    # Alternatives, in order: the first that selects any Pod is the cluster's kube-proxy.
    kube_proxy_selectors: tuple[Selector, ...] = KNOWN_KUBE_PROXY_SELECTORS
    fallback_policy: FallbackPolicy = FallbackPolicy.ANY_OLD_NODE
    assumed_version: tuple[int, int, int] | None = None  # with FallbackPolicy.ASSUME_VERSION
    draining_gate: DrainingGate = DrainingGate.UNKNOWN
    replacement_serves_healthz: ReplacementHealthz = ReplacementHealthz.AUTO
    readiness_policy: ReadinessPolicy = ReadinessPolicy.AUDIT
    # kube-proxy DaemonSets the readiness policy covers (namespace: kube_proxy_namespace):
    # those any alternative selects.
    readiness_selectors: tuple[Selector, ...] = KNOWN_KUBE_PROXY_SELECTORS
    # Make lbhc's firewall for pools whose probes no rule admits (others' checks on the same
    # port), given evidence that the nodes answer it; False: report only.
    unblock_probes: bool = True

    @property
    def firewall_project(self) -> str:
        """Where the VPC network and its firewall rules live."""
        return self.network_project or self.project
