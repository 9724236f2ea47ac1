"""Compute API objects -> lbhc's plain model. Pure; kept apart from the calls themselves."""

from __future__ import annotations

from typing import Any

from lbhc.model.backend import BackendService, HealthCheck
from lbhc.model.cloud import (
    Firewall,
    FirewallAllowed,
    ForwardingRule,
    HttpHealthCheck,
    TargetPool,
)
from lbhc.model.firewall import EffectiveFirewall, FirewallPolicy, PolicyRule


def health_check_from_json(body: dict[str, Any]) -> HttpHealthCheck:
    """Legacy checks come back as JSON (no generated client exists); absent fields take
    the API's documented defaults."""
    return HttpHealthCheck(
        name=body["name"],
        description=body.get("description", ""),
        host=body.get("host", ""),
        request_path=body.get("requestPath", "/"),
        port=int(body.get("port", 80)),
        check_interval_sec=int(body.get("checkIntervalSec", 5)),
        timeout_sec=int(body.get("timeoutSec", 5)),
        healthy_threshold=int(body.get("healthyThreshold", 2)),
        unhealthy_threshold=int(body.get("unhealthyThreshold", 2)),
        self_link=body.get("selfLink", ""),
    )


def firewall_from_proto(fw: Any) -> Firewall:
    return Firewall(
        name=fw.name,
        network=fw.network,
        description=fw.description,
        direction=fw.direction or "INGRESS",
        priority=fw.priority if "priority" in fw else 1000,
        allowed=tuple(FirewallAllowed(a.I_p_protocol, tuple(a.ports)) for a in fw.allowed),
        source_ranges=tuple(fw.source_ranges),
        target_tags=tuple(fw.target_tags),
        destination_ranges=tuple(fw.destination_ranges),
        source_tags=tuple(fw.source_tags),
        source_service_accounts=tuple(fw.source_service_accounts),
        target_service_accounts=tuple(fw.target_service_accounts),
        disabled=bool(fw.disabled),
        self_link=fw.self_link,
        denied=tuple(FirewallAllowed(d.I_p_protocol, tuple(d.ports)) for d in fw.denied),
    )


def firewall_to_proto(fw: Firewall) -> Any:
    from google.cloud import compute_v1

    return compute_v1.Firewall(
        name=fw.name,
        network=fw.network,
        description=fw.description,
        direction=fw.direction,
        priority=fw.priority,
        allowed=[
            compute_v1.Allowed(I_p_protocol=a.ip_protocol, ports=list(a.ports)) for a in fw.allowed
        ],
        source_ranges=list(fw.source_ranges),
        target_tags=list(fw.target_tags),
        destination_ranges=list(fw.destination_ranges),
        source_tags=list(fw.source_tags),
        source_service_accounts=list(fw.source_service_accounts),
        target_service_accounts=list(fw.target_service_accounts),
        disabled=fw.disabled,
    )


def target_pool_from_proto(pool: Any) -> TargetPool:
    return TargetPool(
        name=pool.name,
        region=pool.region,
        description=pool.description,
        health_checks=tuple(pool.health_checks),
        self_link=pool.self_link,
    )


def forwarding_rule_from_proto(rule: Any) -> ForwardingRule:
    return ForwardingRule(
        name=rule.name,
        description=rule.description,
        target=rule.target,
        ip_address=rule.I_p_address,
        backend_service=rule.backend_service,
        scheme=rule.load_balancing_scheme,
    )


# The sub-object of each HTTP-speaking check type: port and path live there.
_HTTP_KINDS = {
    "HTTP": "http_health_check",
    "HTTPS": "https_health_check",
    "HTTP2": "http2_health_check",
}


def health_check_from_proto(check: Any) -> HealthCheck:
    """A non-legacy check; absent timings take the API's documented defaults (5, 5, 2, 2)."""
    kind = check.type_ or ""
    sub = getattr(check, _HTTP_KINDS[kind]) if kind in _HTTP_KINDS else None
    return HealthCheck(
        name=check.name,
        self_link=check.self_link,
        region=check.region,
        type=kind,
        port=(sub.port or None) if sub is not None else None,
        request_path=(sub.request_path or "/") if sub is not None else "",
        check_interval_sec=check.check_interval_sec or 5,
        timeout_sec=check.timeout_sec or 5,
        healthy_threshold=check.healthy_threshold or 2,
        unhealthy_threshold=check.unhealthy_threshold or 2,
        description=check.description,
    )


def backend_service_from_proto(service: Any) -> BackendService:
    draining = (
        service.connection_draining.draining_timeout_sec if service.connection_draining else 0
    )
    return BackendService(
        name=service.name,
        self_link=service.self_link,
        region=service.region,
        scheme=service.load_balancing_scheme,
        protocol=service.protocol,
        health_checks=tuple(service.health_checks),
        backends=tuple(b.group for b in service.backends),
        draining_timeout_sec=draining or 0,
        description=service.description,
    )


def effective_firewall_from_proto(
    network: str, response: Any, after_vpc: bool
) -> EffectiveFirewall:
    """networks.getEffectiveFirewalls' answer. Policies of type SYSTEM are left out: they are
    Google's own, undocumented as to order."""
    return EffectiveFirewall(
        network=network,
        rules=tuple(firewall_from_proto(fw) for fw in response.firewalls),
        policies=tuple(
            FirewallPolicy(
                name=policy.name,
                type=policy.type_,
                rules=tuple(policy_rule_from_proto(rule) for rule in policy.rules),
                short_name=policy.short_name or policy.display_name,
            )
            for policy in response.firewall_policys
            if policy.type_ in ("HIERARCHY", "NETWORK")
        ),
        policy_after_vpc_rules=after_vpc,
    )


def policy_rule_from_proto(rule: Any) -> PolicyRule:
    match = rule.match
    other_sources = bool(
        match.src_address_groups
        or match.src_fqdns
        or match.src_region_codes
        or match.src_threat_intelligences
        or match.src_networks
        or match.src_network_type
    )
    other_destinations = bool(
        match.dest_address_groups
        or match.dest_fqdns
        or match.dest_region_codes
        or match.dest_threat_intelligences
        or match.dest_network_type
    )
    return PolicyRule(
        priority=rule.priority,
        action=rule.action,
        direction=rule.direction or "INGRESS",
        disabled=bool(rule.disabled),
        src_ip_ranges=tuple(match.src_ip_ranges),
        dest_ip_ranges=tuple(match.dest_ip_ranges),
        layer4=tuple(FirewallAllowed(c.ip_protocol, tuple(c.ports)) for c in match.layer4_configs),
        target_resources=tuple(rule.target_resources),
        target_service_accounts=tuple(rule.target_service_accounts),
        other_sources=other_sources,
        other_destinations=other_destinations,
        target_secure_tags=bool(rule.target_secure_tags),
        rule_name=rule.rule_name,
    )
