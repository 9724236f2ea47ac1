"""Reading a sandbox's backend-service load balancers as any client would: plain REST calls
to its Compute API over its socket (get, list members, getHealth), by Service."""

from __future__ import annotations

from typing import Any

import requests

from lbhc.sandbox.sandbox import Sandbox
from lbhc.sandbox.upstream.names import load_balancer_name

BACKEND_ANNOTATION = "service.kubernetes.io/backend-service"


def _url(sandbox: Sandbox, path: str) -> str:
    return f"{sandbox.compute_url}/compute/v1/projects/{sandbox.spec.project}/{path}"


def get(sandbox: Sandbox, path: str) -> dict[str, Any]:
    """GET projects/P/<path>; {} for a 404."""
    response = requests.get(_url(sandbox, path), timeout=10)
    if response.status_code == 404:
        return {}
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def post(sandbox: Sandbox, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(_url(sandbox, path), json=body, timeout=10)
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


def regional(sandbox: Sandbox, collection: str, name: str) -> dict[str, Any]:
    return get(sandbox, f"regions/{sandbox.spec.region}/{collection}/{name}")


def service(sandbox: Sandbox, name: str) -> dict[str, Any]:
    found = sandbox.kube.get("Service", sandbox.spec.namespace, name)
    assert found is not None, f"Service {name}"
    return found


def backend_name(sandbox: Sandbox, name: str) -> str:
    """The Service's backend service: ingress-gce records it; the cloud provider's is
    named like the Service's load balancer."""
    obj = service(sandbox, name)
    annotations = obj["metadata"].get("annotations") or {}
    return annotations.get(BACKEND_ANNOTATION) or load_balancer_name(obj["metadata"]["uid"])


def backend_service(sandbox: Sandbox, name: str) -> dict[str, Any]:
    return regional(sandbox, "backendServices", backend_name(sandbox, name))


def groups(sandbox: Sandbox, name: str) -> list[str]:
    return [b["group"] for b in backend_service(sandbox, name).get("backends", [])]


def path_of(url: str) -> str:
    """A resource URL's path after projects/P/."""
    return url.split("/projects/", 1)[1].split("/", 1)[1]


def members(sandbox: Sandbox, group_url: str) -> set[str]:
    """The node names in an instance group (listInstances) or a NEG (listNetworkEndpoints)."""
    if "/networkEndpointGroups/" in group_url:
        body = post(sandbox, f"{path_of(group_url)}/listNetworkEndpoints", {})
        return {i["networkEndpoint"]["instance"] for i in body.get("items", [])}
    body = post(sandbox, f"{path_of(group_url)}/listInstances", {})
    return {i["instance"].rsplit("/", 1)[-1] for i in body.get("items", [])}


def health(sandbox: Sandbox, name: str) -> dict[str, str]:
    """regionBackendServices.getHealth of every backend group of the Service's backend
    service: node name -> state (one forwarding rule points at each)."""
    backend = backend_name(sandbox, name)
    states: dict[str, str] = {}
    for group in groups(sandbox, name):
        path = f"regions/{sandbox.spec.region}/backendServices/{backend}/getHealth"
        for status in post(sandbox, path, {"group": group}).get("healthStatus", []):
            states[status["instance"].rsplit("/", 1)[-1]] = status["healthState"]
    return states
