"""What the legacy cloud provider's service controller would have made for a LoadBalancer
Service: a target pool (without a check) and a forwarding rule named "a" + UID, described
with the Service's name. Used to seed the Compute fake so the fake looks like a real project
with a cluster in it. (The current cloud provider's are in lbhc.sandbox.upstream.) Also the
service controller's writes to a Service, common to both profiles."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from lbhc.model.cloud import instance_url
from lbhc.model.cluster import Node, Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.seed import lb_ip


def provision_load_balancers(
    fake: ComputeFake,
    project: str,
    region: str,
    services: Iterable[Service],
    nodes: Iterable[Node],
) -> list[str]:
    """One pool + forwarding rule per LoadBalancer Service without a loadBalancerClass;
    returns the pool names. Local-policy Services get their pool too (with no check: their
    per-service check is not lbhc's business)."""
    instances = [instance_url(n, project, f"{region}-a") for n in nodes]
    created: list[str] = []
    for index, service in enumerate(s for s in services if s.spec.type == "LoadBalancer"):
        if service.spec.load_balancer_class is not None:
            continue
        name = target_pool_name(service.metadata.uid)
        description = json.dumps({"kubernetes.io/service-name": service.key}, separators=(",", ":"))
        pool = fake.add_target_pool(
            project, region, name, description=description, instances=instances
        )
        fake.add_forwarding_rule(
            project,
            region,
            name,
            target=pool["selfLink"],
            description=description,
            ip_address=lb_ip(index),
        )
        created.append(name)
    return created


def publish_ingress(
    kube: KubeFake, compute: ComputeFake, project: str, region: str, service: Service
) -> None:
    """What the service controller writes once the load balancer exists: the forwarding
    rule's address in status.loadBalancer.ingress, through the status subresource (a write
    to the main resource would keep the stored status, as on a real apiserver)."""
    name = target_pool_name(service.metadata.uid)
    rule = compute.forwarding_rules(project, region)[name]
    meta = service.metadata
    publish_ingress_ip(kube, meta.namespace, meta.name, rule["IPAddress"])


def publish_ingress_ip(kube: KubeFake, namespace: str, name: str, ip: str) -> None:
    """status.loadBalancer.ingress = [{ip}] through the status subresource."""
    _patch_status(kube, namespace, name, {"ingress": [{"ip": ip}]})


def clear_ingress(kube: KubeFake, namespace: str, name: str) -> None:
    """status.loadBalancer emptied through the status subresource, as a controller resets it
    once the load balancer is gone."""
    _patch_status(kube, namespace, name, {"ingress": None})


def _patch_status(kube: KubeFake, namespace: str, name: str, balancer: dict[str, Any]) -> None:
    patch = {"status": {"loadBalancer": balancer}}
    response = kube.handle(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/services/{name}/status",
        {"Content-Type": "application/merge-patch+json"},
        json.dumps(patch).encode(),
    )
    if response.status != 200:
        raise RuntimeError(f"status update of Service {namespace}/{name}: HTTP {response.status}")


def release_finalizers(kube: KubeFake, service: dict[str, Any], released: Iterable[str]) -> None:
    """Remove `released` from the Service's finalizers (the API deletes it once none is left).
    The list is read afresh: another controller may have changed it since `service` was."""
    gone = set(released)
    meta = _live(kube, service)["metadata"]
    finalizers = [f for f in meta.get("finalizers", []) if f not in gone]
    kube.patch(
        "Service", meta["namespace"], meta["name"], {"metadata": {"finalizers": finalizers or None}}
    )


def add_finalizer(kube: KubeFake, service: dict[str, Any], finalizer: str) -> None:
    """Append `finalizer` to the Service's finalizers (read afresh), as the service controller
    adds its cleanup finalizer before it makes a load balancer."""
    meta = _live(kube, service)["metadata"]
    if finalizer in meta.get("finalizers", []):
        return
    finalizers = [*meta.get("finalizers", []), finalizer]
    kube.patch("Service", meta["namespace"], meta["name"], {"metadata": {"finalizers": finalizers}})


def _live(kube: KubeFake, service: dict[str, Any]) -> dict[str, Any]:
    meta = service["metadata"]
    return kube.get("Service", meta["namespace"], meta["name"]) or service
