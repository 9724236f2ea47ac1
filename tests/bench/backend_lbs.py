"""Backend-service load balancers at benchmark scale, as ingress-gce's L4 controller makes RBS
ones (names from the sandbox's emulated namer, after kubernetes/ingress-gce pkg/utils/namer):
one shared regional check on kube-proxy's /healthz, one shared instance group per zone
holding every node, and per Service a regional backend service and a forwarding rule, the
Service annotated with its backend service's name. Seeded straight into the Compute fake, as
the bench world seeds target pools: the sandbox's emulated controller would make the same
through the API, far slower than a benchmark's set-up may take."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbhc.model.cloud import instance_url, resource_path
from lbhc.model.cluster import Node
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.upstream.ingress_gce import shapes
from lbhc.sandbox.upstream.ingress_gce.names import XLB, L4Namer
from lbhc.sandbox.upstream.services import ServiceView

RBS_ANNOTATION = "cloud.google.com/l4-rbs"
BACKEND_SERVICE_ANNOTATION = "service.kubernetes.io/backend-service"


def make_rbs(services: Sequence[dict[str, Any]], every: int) -> list[dict[str, Any]]:
    """Every `every`-th Service becomes an RBS one (annotated before it is stored); returns
    them."""
    chosen = [s for i, s in enumerate(services) if every and i % every == every - 1]
    for obj in chosen:
        obj["metadata"]["annotations"][RBS_ANNOTATION] = "enabled"
    return chosen


def provision_backend_lbs(
    fake: ComputeFake,
    project: str,
    region: str,
    services: Sequence[dict[str, Any]],
    nodes: Sequence[Node],
    namer: L4Namer,
) -> list[str]:
    """The load balancers of `services` (Service dicts, annotated here); returns the
    backend services' names."""
    zone = f"{region}-a"
    vms = [instance_url(node, project, zone) for node in nodes]
    for node, url in zip(nodes, vms, strict=True):  # an instance group holds VMs that exist
        _, vm_project, _, vm_zone, _, name = resource_path(url).split("/")
        fake.add_instance(vm_project, vm_zone, name, network_ip=node.internal_ip or None)
    group = fake.add_instance_group(project, zone, namer.instance_group, instances=vms)
    checks: dict[str, str] = {}  # name -> selfLink: the shared one made once
    made: list[str] = []
    for obj in services:
        service = ServiceView.of(obj)
        wanted = shapes.health_check(namer, service, XLB)
        name = wanted.pop("name")
        if name not in checks:
            checks[name] = fake.add_health_check(project, name, region=region, **wanted)["selfLink"]
        backend = fake.add_backend_service(
            project,
            region,
            namer.backend(service.namespace, service.name),
            protocol="TCP",
            healthChecks=[checks[name]],
            backends=[{"group": group["selfLink"]}],
            connectionDraining={"drainingTimeoutSec": 30},
        )
        fake.add_forwarding_rule(
            project,
            region,
            service.lb_name,  # l4netlb.go frName: the cloud provider's name, "a" + UID
            backend_service=backend["selfLink"],
            ip_address=obj["status"]["loadBalancer"]["ingress"][0]["ip"],
        )
        obj["metadata"]["annotations"][BACKEND_SERVICE_ANNOTATION] = backend["name"]
        made.append(backend["name"])
    return made
