"""What every world the suites build shares, in one place: a Compute project with its default
network, a cluster's standing objects in the Kubernetes fake (kube-system and its UID, lbhc's
namespace, the cloud provider's ingress-uid ConfigMap, nodes), and a Service with the load
balancer the GCE cloud provider makes for it. The suites' worlds (the controller harness, the
chaos, hostile, bench and e2e worlds) compose these rather than each seeding its own way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lbhc.model.cluster import Node, Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.cloud_provider import provision_load_balancers
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from tests.builders import kube as kube_builders
from tests.builders.constants import KUBE_SYSTEM_UID, PROJECT, REGION
from tests.builders.gce import service_description


def compute_fake(project: str = PROJECT, operation_latency: float = 0.0) -> ComputeFake:
    """A Compute fake holding `project` and its `default` network (lbhc's firewall's)."""
    compute = ComputeFake(operation_latency=operation_latency)
    compute.add_network(project, "default")
    return compute


def seed_cluster(
    kube: KubeFake,
    *,
    kube_system_uid: str = KUBE_SYSTEM_UID,
    namespaces: Iterable[str] = (),
    cloud_provider_uid: str | None = None,
    nodes: Iterable[dict[str, Any]] = (),
) -> KubeFake:
    """kube-system with its UID (lbhc's cluster id), other `namespaces` (lbhc-system for the
    Lease, default...), the cloud provider's ingress-uid ConfigMap when it runs one, `nodes`."""
    kube.upsert(kube_builders.namespace("kube-system", kube_system_uid))
    for name in namespaces:
        kube.upsert(kube_builders.namespace(name))
    if cloud_provider_uid is not None:
        kube.upsert(kube_builders.ingress_uid_config_map(cloud_provider_uid))
    for node in nodes:
        kube.upsert(node)
    return kube


def instance_url(node: str, project: str = PROJECT, zone: str = f"{REGION}-a") -> str:
    """The VM behind a node of the builders' cluster (their providerIDs name us-central1-a)."""
    return f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances/{node}"


def add_load_balancer(
    compute: ComputeFake,
    name: str,
    service_key: str,
    *,
    nodes: Iterable[str] = ("node-1",),
    health_checks: Iterable[str] = (),
    project: str = PROJECT,
    region: str = REGION,
) -> str:
    """A target pool over `nodes` carrying `health_checks`, and its forwarding rule, named and
    described as the cloud provider makes them for the Service `service_key` (namespace/name);
    for worlds that need a pool's contents exactly, where make_load_balancer follows the API."""
    description = service_description(service_key)
    instances = [instance_url(n, project, f"{region}-a") for n in nodes]
    created = compute.add_target_pool(
        project,
        region,
        name,
        description=description,
        instances=instances,
        health_checks=tuple(health_checks),
    )
    compute.add_forwarding_rule(
        project, region, name, target=created["selfLink"], description=description
    )
    return name


def nodes_in(kube: KubeFake) -> list[Node]:
    """The nodes the API holds now, as lbhc (and the cloud provider) decode them."""
    return [Node.model_validate(n) for n in kube.objects("Node")]


def make_load_balancer(
    kube: KubeFake, compute: ComputeFake, svc: Service, project: str = PROJECT, region: str = REGION
) -> str:
    """The pool and forwarding rule the cloud provider makes for `svc` over the nodes the API
    holds now (lbhc.sandbox.cloud_provider, after cloud-provider-gcp's ensureExternal
    LoadBalancer); the pool's name (none is made for a Service of another type or class)."""
    provision_load_balancers(compute, project, region, [svc], nodes_in(kube))
    return target_pool_name(svc.metadata.uid)


def add_load_balanced_service(
    kube: KubeFake,
    compute: ComputeFake,
    obj: dict[str, Any],
    project: str = PROJECT,
    region: str = REGION,
) -> str:
    """`obj` (a LoadBalancer Service) in the API, then its load balancer, as the service
    controller makes it once it sees the Service; the pool's name."""
    svc = Service.model_validate(kube.upsert(obj))
    return make_load_balancer(kube, compute, svc, project, region)
