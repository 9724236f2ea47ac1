"""lbhc's GCE objects (lbhc.model.cloud) as the Compute API would show them: the pools and
rules the cloud provider makes for a Service, legacy health checks (the cloud provider's and
lbhc's own), lbhc's firewall, and the CloudSnapshot the planner reads them as."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from lbhc.model.backend import BackendView
from lbhc.model.cloud import (
    CloudSnapshot,
    Firewall,
    FirewallAllowed,
    ForwardingRule,
    HttpHealthCheck,
    TargetPool,
    http_health_check_url,
    network_url,
    resource_path,
)
from lbhc.model.cluster import Service
from lbhc.model.firewall import EffectiveFirewall, FirewallPolicy
from lbhc.model.lb_health import LbHealthView
from lbhc.planner.config import PlannerConfig
from lbhc.planner.names import target_pool_name
from lbhc.planner.planner import shared_name
from lbhc.planner.shared import desired_firewall, desired_health_check
from tests.builders.constants import CLOUD_PROVIDER_UID, PROJECT, REGION
from tests.builders.model import cluster, config


def compact(value: object) -> str:
    """JSON as the cloud provider writes descriptions (Go's json.Marshal: no spaces)."""
    return json.dumps(value, separators=(",", ":"))


def service_description(key: str) -> str:
    """The description the cloud provider gives a Service's pool and rule."""
    return compact({"kubernetes.io/service-name": key})


def pool_for(
    svc: Service,
    *,
    health_checks: tuple[str, ...] = (),
    claim: str | None = None,
    described: bool = True,
) -> TargetPool:
    """The pool a cloud provider would have made for `svc`."""
    description = service_description(claim or svc.key) if described else ""
    name = target_pool_name(svc.metadata.uid)
    return TargetPool(
        name=name,
        region=REGION,
        description=description,
        health_checks=health_checks,
        self_link=f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/regions/{REGION}/targetPools/{name}",
    )


def rule_for(svc: Service, claim: str | None = None, ip: str = "") -> ForwardingRule:
    name = target_pool_name(svc.metadata.uid)
    return ForwardingRule(
        name=name, description=service_description(claim or svc.key), ip_address=ip
    )


def check_url(name: str) -> str:
    return http_health_check_url(PROJECT, name)


def legacy_check(name: str, **overrides: Any) -> HttpHealthCheck:
    """A legacy check as read from GCE; the default is shaped like the cloud provider's."""
    fields: dict[str, Any] = {
        "name": name,
        "description": service_description(name),
        "request_path": "/healthz",
        "port": 10256,
        "check_interval_sec": 8,
        "timeout_sec": 1,
        "healthy_threshold": 1,
        "unhealthy_threshold": 3,
        "self_link": check_url(name),
    }
    return HttpHealthCheck(**{**fields, **overrides})


def cloud_provider_check(**overrides: Any) -> HttpHealthCheck:
    """The cloud provider's node check, k8s-<uid>-node (cloud-provider-gcp
    providers/gce/gce_healthchecks.go makeHTTPHealthCheck)."""
    return legacy_check(f"k8s-{CLOUD_PROVIDER_UID}-node", **overrides)


CLOUD_PROVIDER_CHECK = cloud_provider_check()


def names(cfg: PlannerConfig | None = None) -> tuple[str, str, str]:
    """(cluster id, shared resource name, health check URL) for the default cluster."""
    cfg = cfg or config()
    cluster_id, name = shared_name(cluster(), cfg)
    return cluster_id, name, http_health_check_url(cfg.project, name)


def our_check(cfg: PlannerConfig | None = None, **overrides: Any) -> HttpHealthCheck:
    cfg = cfg or config()
    cluster_id, name, url = names(cfg)
    check = desired_health_check(name, cluster_id, cfg)
    return HttpHealthCheck(**{**check.__dict__, "self_link": url, **overrides})


def our_firewall(cfg: PlannerConfig | None = None, **overrides: Any) -> Firewall:
    cfg = cfg or config()
    cluster_id, name, _ = names(cfg)
    firewall = desired_firewall(name, cluster_id, cfg)
    return Firewall(**{**firewall.__dict__, **overrides})


NETWORK_URL = network_url(PROJECT, "default")
HC_SOURCES = ("130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22")


def node_check_firewall(*, pinned_to: str = "", priority: int = 1000, **overrides: Any) -> Firewall:
    """The cloud provider's node check firewall, k8s-<uid>-node-http-hc (cloud-provider-gcp
    gce_loadbalancer_external.go ensureHTTPHealthCheckFirewall): pinned to one load
    balancer's IP as upstream makes it, or unpinned as a cluster whose probes all get in."""
    fields: dict[str, Any] = {
        "name": f"k8s-{CLOUD_PROVIDER_UID}-node-http-hc",
        "network": NETWORK_URL,
        "priority": priority,
        "allowed": (FirewallAllowed("tcp", ("10256",)),),
        "source_ranges": HC_SOURCES,
        "target_tags": ("gke-node",),
        "destination_ranges": (pinned_to,) if pinned_to else (),
    }
    return Firewall(**{**fields, **overrides})


def effective(*rules: Firewall, policies: tuple[FirewallPolicy, ...] = ()) -> EffectiveFirewall:
    return EffectiveFirewall(NETWORK_URL, rules, policies)


# What most tests need not think about: the health checkers reach every node on 10256.
ADMITTING = effective(node_check_firewall())


def cloud(
    *,
    check: HttpHealthCheck | None = None,
    firewall: Firewall | None = None,
    pools: tuple[TargetPool, ...] = (),
    rules: tuple[ForwardingRule, ...] = (),
    gaps: tuple[str, ...] = (),
    checks: tuple[HttpHealthCheck, ...] = (),
    checks_complete: bool = True,
    network_firewall: EffectiveFirewall | None = ADMITTING,
    network_firewall_unreadable: str = "",
    port_evidence: dict[int, str] | None = None,
    lb_health: LbHealthView | None = None,
    backends: BackendView | None = None,
) -> CloudSnapshot:
    """`checks`: the project's other legacy checks, as listed (ours comes from `check`).
    `network_firewall`: the network's effective firewall (lbhc's own `firewall` is added to
    its rules, as GCE lists it there); None: not read. `backends`: backend-service load
    balancers' resources (default: read, and there are none)."""
    listed = {resource_path(c.self_link): c for c in (*checks, *((check,) if check else ()))}
    if network_firewall is not None and firewall is not None:
        others = tuple(r for r in network_firewall.rules if r.name != firewall.name)
        network_firewall = replace(network_firewall, rules=(*others, firewall))
    return CloudSnapshot(
        check,
        firewall,
        pools,
        rules,
        gaps,
        health_checks=listed,
        health_checks_complete=checks_complete,
        effective_firewall=network_firewall,
        effective_firewall_unreadable=network_firewall_unreadable,
        port_evidence=port_evidence or {},
        lb_health=lb_health or LbHealthView(),
        backends=backends or BackendView(unreadable=""),
    )
