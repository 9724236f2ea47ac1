"""One builders package for the objects tests talk about: Kubernetes API dicts with
cloud-provider-style tweaks (`kube`), lbhc's projections of them decoded by lbhc's own decoder
(`model`), and GCE objects (`gce`). The package's own names are the planner tests' vocabulary:
projections and GCE model objects; API dicts are `tests.builders.kube.node(...)`."""

from tests.builders import gce, kube, model
from tests.builders.constants import CLOUD_PROVIDER_UID, KUBE_SYSTEM_UID, PROJECT, REGION
from tests.builders.gce import (
    CLOUD_PROVIDER_CHECK,
    check_url,
    cloud,
    cloud_provider_check,
    compact,
    legacy_check,
    names,
    our_check,
    our_firewall,
    pool_for,
    rule_for,
)
from tests.builders.kube import http_probe
from tests.builders.model import (
    MODERN_IMAGE,
    TO_BE_DELETED,
    assessed,
    cluster,
    config,
    kube_proxy_daemonset,
    kube_proxy_pod,
    node,
    service,
)

__all__ = [
    "CLOUD_PROVIDER_CHECK",
    "CLOUD_PROVIDER_UID",
    "KUBE_SYSTEM_UID",
    "MODERN_IMAGE",
    "PROJECT",
    "REGION",
    "TO_BE_DELETED",
    "assessed",
    "check_url",
    "cloud",
    "cloud_provider_check",
    "cluster",
    "compact",
    "config",
    "gce",
    "http_probe",
    "kube",
    "kube_proxy_daemonset",
    "kube_proxy_pod",
    "legacy_check",
    "model",
    "names",
    "node",
    "our_check",
    "our_firewall",
    "pool_for",
    "rule_for",
    "service",
]
