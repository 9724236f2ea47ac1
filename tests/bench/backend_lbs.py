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
from lbhc.sandbox.upstream.ingress_gce.names import L4Namer

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
    first_ip: int,
) -> list[str]:
    """The load balancers of `services` (Service dicts, annotated here); returns the
    backend services' names."""
    zone = f"{region}-a"
    vms = [instance_url(node, project, zone) for node in nodes]
    for url in vms:  # an instance group holds VMs that exist
        _, vm_project, _, vm_zone, _, name = resource_path(url).split("/")
        fake.add_instance(vm_project, vm_zone, name)
    group = fake.add_instance_group(project, zone, namer.instance_group, instances=vms)
    check = fake.add_health_check(
        project,
        namer.health_check("", "", shared=True),
        region=region,
        type="HTTP",
        httpHealthCheck={"port": 10256, "requestPath": "/healthz"},
        checkIntervalSec=8,
        timeoutSec=1,
        healthyThreshold=1,
        unhealthyThreshold=3,
    )
    made: list[str] = []
    for index, obj in enumerate(services):
        meta = obj["metadata"]
        name = namer.backend(meta["namespace"], meta["name"])
        own = check
        if obj["spec"].get("externalTrafficPolicy") == "Local":  # its own, 3 s x 2
            own = fake.add_health_check(
                project,
                name,
                region=region,
                type="HTTP",
                httpHealthCheck={"port": 30000 + index % 2000, "requestPath": "/healthz"},
                checkIntervalSec=3,
                timeoutSec=1,
                healthyThreshold=1,
                unhealthyThreshold=2,
            )
        backend = fake.add_backend_service(
            project,
            region,
            name,
            protocol="TCP",
            healthChecks=[own["selfLink"]],
            backends=[{"group": group["selfLink"]}],
            connectionDraining={"drainingTimeoutSec": 30},
        )
        fake.add_forwarding_rule(
            project,
            region,
            "a" + meta["uid"].replace("-", "")[:31],  # l4netlb.go frName: the pool's name
            backend_service=backend["selfLink"],
            ip_address=_ip(first_ip + index),
        )
        meta["annotations"][BACKEND_SERVICE_ANNOTATION] = name
        made.append(name)
    return made


def _ip(index: int) -> str:
    return f"34.{100 + index // 65536}.{index // 256 % 256}.{index % 256}"
