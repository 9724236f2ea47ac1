"""apps/v1 DaemonSets and coordination.k8s.io/v1 Leases: generation, optimistic concurrency
between two electors, and the Lease's MicroTime fields."""

from __future__ import annotations

from typing import Any

import pytest

from lbhc.sandbox.kube_fake import KubeFakeServer
from tests.sandbox.kube_fake.support import request

# -- apps/v1 and coordination.k8s.io/v1 ---------------------------------------------------------

DS = "/apis/apps/v1/namespaces/kube-system/daemonsets"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def test_daemonset_generation_follows_the_spec(kube_server: KubeFakeServer) -> None:
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "kube-proxy"}}
    ds["spec"] = {"template": {"spec": {"containers": [{"name": "kube-proxy", "image": "a"}]}}}

    created = request(kube_server, "POST", DS, ds)[1]
    labelled = request(
        kube_server,
        "PATCH",
        f"{DS}/kube-proxy",
        {"metadata": {"labels": {"a": "b"}}},
        "application/strategic-merge-patch+json",
    )[1]
    rolled = request(
        kube_server,
        "PATCH",
        f"{DS}/kube-proxy",
        {"spec": {"template": {"spec": {"containers": [{"name": "kube-proxy", "image": "b"}]}}}},
        "application/strategic-merge-patch+json",
    )[1]

    assert [o["metadata"]["generation"] for o in (created, labelled, rolled)] == [1, 1, 2]
    assert rolled["spec"]["template"]["spec"]["containers"] == [
        {"name": "kube-proxy", "image": "b"}
    ]
    assert created["status"]["numberReady"] == 0


def lease(holder: str, rv: str | None = None, renew: str = "2026-11-22T02:51:19.123456Z") -> Any:
    metadata: dict[str, Any] = {"name": "lbhc", "namespace": "kube-system"}
    if rv:
        metadata["resourceVersion"] = rv
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": renew},
    }


def test_two_electors_racing_on_a_lease_one_wins(kube_server: KubeFakeServer) -> None:
    created = request(kube_server, "POST", LEASES, lease("a"))[1]
    rv = created["metadata"]["resourceVersion"]

    renewed = "2026-11-22T02:51:21.000000Z"  # a real change: a no-op keeps the version
    a = request(kube_server, "PUT", f"{LEASES}/lbhc", lease("a", rv, renewed))
    b = request(kube_server, "PUT", f"{LEASES}/lbhc", lease("b", rv))
    again = request(kube_server, "POST", LEASES, lease("b"))

    assert a[0] == 200 and a[1]["spec"]["holderIdentity"] == "a"
    assert (b[0], b[1]["reason"]) == (409, "Conflict")
    assert b[1]["message"].startswith(
        'Operation cannot be fulfilled on leases.coordination.k8s.io "lbhc": '
    )
    assert b[1]["details"] == {"name": "lbhc", "group": "coordination.k8s.io", "kind": "leases"}
    assert (again[0], again[1]["reason"]) == (409, "AlreadyExists")


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"renewTime": "2026-11-22T02:51:19.123456+01:00"}, 201),
        ({"renewTime": "2026-11-22T02:51:19.123Z"}, 400),  # not a MicroTime
        ({"acquireTime": "2026-11-22T02:51:19Z"}, 400),
        ({"leaseDurationSeconds": 0}, 422),
        ({"leaseTransitions": -1}, 422),
    ],
)
def test_lease_fields(kube_server: KubeFakeServer, spec: dict[str, Any], code: int) -> None:
    body = lease("a")
    body["spec"] = spec
    assert request(kube_server, "POST", LEASES, body)[0] == code
