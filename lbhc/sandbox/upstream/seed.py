"""What today's GCE cloud provider would have made for the seeded cluster's target-pool
Services, written straight into the Compute fake through its seeding API (no journal
entries, no operations), in the shapes `netlb` makes at run time; including what it no longer
makes (a pool without a check). The backend-service load balancers are made by the emulated
controllers themselves before the sandbox is handed over (lbhc.sandbox.sandbox)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake

from . import shapes
from .netlb import Project, check_firewall, traffic_firewall, wanted_health_check
from .services import Handler, ServiceView, handler


def provision(
    fake: ComputeFake,
    where: Project,
    services: Iterable[dict[str, Any]],
    hosts: list[str],
    *,
    without_check: Collection[str] = (),
) -> None:
    """Every target-pool Service's load balancer, at the IP its status already publishes:
    its traffic firewall, the check its traffic policy wants (and that check's firewall) and
    a pool carrying it, and its forwarding rule; a Service whose key is in `without_check`
    gets a pool with no check, as a cloud provider older than the nodes check made it."""
    for obj in services:
        service = ServiceView.of(obj)
        if service.type != "LoadBalancer" or not service.ingress_ips:
            continue
        if handler(service) is Handler.TARGET_POOL:
            ip = service.ingress_ips[0]
            _load_balancer(fake, where, service, ip, hosts, service.key not in without_check)


def _firewall(fake: ComputeFake, project: str, body: dict[str, Any]) -> None:
    if body["name"] not in fake.firewalls(project):
        fake.add_firewall(project, body["name"], **{k: v for k, v in body.items() if k != "name"})


def _rule(fake: ComputeFake, where: Project, body: dict[str, Any]) -> None:
    fake.add_forwarding_rule(
        where.project,
        where.region,
        body["name"],
        target=body["target"],
        description=body["description"],
        ip_address=body["IPAddress"],
        port_range=body["portRange"],
        ip_protocol=body["IPProtocol"],
    )


def _load_balancer(
    fake: ComputeFake,
    where: Project,
    service: ServiceView,
    ip: str,
    hosts: list[str],
    with_check: bool,
) -> None:
    project, lb = where.project, service.lb_name
    _firewall(fake, project, traffic_firewall(service, ip, where.node_tags))
    checks: list[str] = []
    if with_check:
        check = wanted_health_check(service, where)
        _firewall(fake, project, check_firewall(service, check, ip, where))
        if check["name"] not in fake.http_health_checks(project):
            fields = {k: v for k, v in check.items() if k != "name"}
            fake.add_http_health_check(project, check["name"], **fields)
        checks.append(check["name"])
    body = shapes.target_pool(lb, service.key, hosts, checks)
    pool = fake.add_target_pool(
        project,
        where.region,
        lb,
        description=body["description"],
        instances=body["instances"],
        health_checks=body.get("healthChecks", ()),
    )
    target, protocol, ports = pool["selfLink"], service.protocol, service.port_numbers
    _rule(fake, where, shapes.forwarding_rule(lb, service.key, ip, protocol, ports, target))
