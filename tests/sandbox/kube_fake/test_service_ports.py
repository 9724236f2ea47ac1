"""spec.healthCheckNodePort as the apiserver manages it: allocated for a LoadBalancer Service
with externalTrafficPolicy Local (on create, or when an update makes it so), kept across
writes that leave it Local, cleared when it stops being LoadBalancer + Local; a requested port
kept if free, refused if taken."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from lbhc.sandbox.kube_fake.service_ports import NODE_PORT_RANGE
from tests.builders.kube import service
from tests.sandbox.kube_fake.support import request

SVC = "/api/v1/namespaces/default/services"
MERGE = "application/merge-patch+json"


@dataclass(frozen=True)
class Write:
    method: str  # POST (create), PUT (the stored object with `spec` laid over) or PATCH (merge)
    name: str
    spec: dict[str, Any]


def create(name: str, **spec: Any) -> Write:
    return Write("POST", name, spec)


def patch(name: str, **spec: Any) -> Write:
    return Write("PATCH", name, spec)


def put(name: str, **spec: Any) -> Write:
    return Write("PUT", name, spec)


def send(server: KubeFakeServer, fake: KubeFake, write: Write) -> tuple[int, dict[str, Any]]:
    if write.method == "POST":
        body = service(write.name)
        body["spec"].update(write.spec)
        return request(server, "POST", SVC, body)
    path = f"{SVC}/{write.name}"
    if write.method == "PATCH":
        return request(server, "PATCH", path, {"spec": write.spec}, MERGE)
    stored = fake.get("Service", "default", write.name)
    assert stored is not None
    stored["spec"] = {k: v for k, v in {**stored["spec"], **write.spec}.items() if v is not None}
    return request(server, "PUT", path, stored)


def port_of(fake: KubeFake, name: str) -> int | None:
    obj = fake.get("Service", "default", name)
    assert obj is not None
    port = obj["spec"].get("healthCheckNodePort")
    return None if port is None else int(port)


LOCAL = {"externalTrafficPolicy": "Local"}
CLUSTER = {"externalTrafficPolicy": "Cluster"}

# (writes, expected ports by Service: "any" is some port of the range, None is none)
CASES: dict[str, tuple[list[Write], dict[str, Any]]] = {
    "create Local gets a port": ([create("a", **LOCAL)], {"a": "any"}),
    "create Cluster gets none": ([create("a", **CLUSTER)], {"a": None}),
    "create NodePort Local gets none": (
        [create("a", type="NodePort", **LOCAL)],
        {"a": None},
    ),
    "flip Local to Cluster clears it": (
        [create("a", **LOCAL), patch("a", **CLUSTER)],
        {"a": None},
    ),
    "flip Cluster to Local assigns one": (
        [create("a", **CLUSTER), patch("a", **LOCAL)],
        {"a": "any"},
    ),
    "LoadBalancer to ClusterIP clears it": (
        [create("a", **LOCAL), put("a", type="ClusterIP", ports=[{"port": 80}])],
        {"a": None},
    ),
    "two Local Services get distinct ports": (
        [create("a", **LOCAL), create("b", **LOCAL)],
        {"a": "any", "b": "any"},
    ),
    "a requested port is kept": (
        [create("a", healthCheckNodePort=32100, **LOCAL)],
        {"a": 32100},
    ),
    "a requested port is kept on a flip to Local": (
        [create("a", **CLUSTER), patch("a", healthCheckNodePort=32101, **LOCAL)],
        {"a": 32101},
    ),
    "a PUT that omits it keeps it": (
        [create("a", healthCheckNodePort=32100, **LOCAL), put("a", healthCheckNodePort=None)],
        {"a": 32100},
    ),
    "a port freed by a flip is taken again": (
        [
            create("a", healthCheckNodePort=32100, **LOCAL),
            patch("a", **CLUSTER),
            create("b", healthCheckNodePort=32100, **LOCAL),
        ],
        {"a": None, "b": 32100},
    ),
}


@pytest.mark.parametrize("writes, expected", CASES.values(), ids=CASES.keys())
def test_health_check_node_port(
    kube_fake: KubeFake, kube_server: KubeFakeServer, writes: list[Write], expected: dict[str, Any]
) -> None:
    for write in writes:
        status, body = send(kube_server, kube_fake, write)
        assert status in (200, 201), body
    ports = {name: port_of(kube_fake, name) for name in expected}
    for name, wanted in expected.items():
        if wanted == "any":
            assert ports[name] in NODE_PORT_RANGE, ports
        else:
            assert ports[name] == wanted, ports
    allocated = [p for p in ports.values() if p is not None]
    assert len(allocated) == len(set(allocated))
    assert not set(allocated) & {30080}, "never a port a nodePort holds"


REFUSED: dict[str, tuple[list[Write], Write, int, str]] = {
    "a requested port another Service holds": (
        [create("a", healthCheckNodePort=32100, **LOCAL)],
        create("b", healthCheckNodePort=32100, **LOCAL),
        500,
        "Internal error occurred: failed to allocate requested HealthCheck NodePort 32100: "
        "provided port is already allocated",
    ),
    "a requested port a nodePort holds": (
        [],
        create("a", healthCheckNodePort=30080, **LOCAL),
        500,
        "Internal error occurred: failed to allocate requested HealthCheck NodePort 30080: "
        "provided port is already allocated",
    ),
    "a requested port out of the range": (
        [],
        create("a", healthCheckNodePort=10256, **LOCAL),
        500,
        "Internal error occurred: failed to allocate requested HealthCheck NodePort 10256: "
        "provided port is not in the valid range. The range of valid ports is 30000-32767",
    ),
    "a port on a Cluster Service": (
        [],
        create("a", healthCheckNodePort=32100, **CLUSTER),
        422,
        'Service "a" is invalid: spec.healthCheckNodePort: Invalid value: 32100: may only be '
        "set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
    ),
    "a changed port on a Local Service": (
        [create("a", healthCheckNodePort=32100, **LOCAL)],
        patch("a", healthCheckNodePort=32101),
        422,
        'Service "a" is invalid: spec.healthCheckNodePort: Forbidden: field is immutable',
    ),
}


@pytest.mark.parametrize("writes, refused, code, message", REFUSED.values(), ids=REFUSED.keys())
def test_health_check_node_port_refused(
    kube_fake: KubeFake,
    kube_server: KubeFakeServer,
    writes: list[Write],
    refused: Write,
    code: int,
    message: str,
) -> None:
    for write in writes:
        assert send(kube_server, kube_fake, write)[0] in (200, 201)
    before = kube_fake.resource_version

    status, body = send(kube_server, kube_fake, refused)

    assert (status, body["code"], body["message"]) == (code, code, message)
    assert kube_fake.resource_version == before  # nothing stored


def test_the_fakes_helpers_go_through_the_same_rules(kube_fake: KubeFake) -> None:
    """KubeFake.patch (what the sandbox's set_traffic_policy uses) allocates and clears too;
    upsert stores a seeded object as given."""
    local = service("a", policy="Local")
    kube_fake.upsert(local)
    assert port_of(kube_fake, "a") is None
    kube_fake.patch("Service", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    assert port_of(kube_fake, "a") in NODE_PORT_RANGE
    kube_fake.patch("Service", "default", "a", {"spec": CLUSTER})
    assert port_of(kube_fake, "a") is None
