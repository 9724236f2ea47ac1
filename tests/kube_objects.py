"""Kubernetes API objects as an API server serves them (plain dicts): Nodes, Services, Pods,
Namespaces, and the helpers to seed the fake API server with them, read its answers and
point kubectl at it. For tests over HTTP; tests/builders.py builds lbhc's own projections."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lbhc.sandbox.kube_fake import KubeFake

KUBE_SYSTEM_UID = "0b7c3c5e-1111-2222-3333-444455556666"
KUBE_PROXY_LABELS = {"k8s-app": "kube-proxy"}


def node(
    name: str,
    *,
    kubelet: str = "v1.31.4",
    kube_proxy: str | None = None,
    labels: dict[str, str] | None = None,
    taints: tuple[tuple[str, str, str], ...] = (),
    deleting: bool = False,
) -> dict[str, Any]:
    """`taints` are (key, value, effect); `kube_proxy` None leaves the field out (1.33+)."""
    metadata: dict[str, Any] = {"name": name, "labels": labels or {"kubernetes.io/os": "linux"}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-22T00:00:00Z"
        metadata["finalizers"] = ["example.com/hold"]  # an object with a deletionTimestamp has some
    node_info: dict[str, Any] = {"kubeletVersion": kubelet, "osImage": "Container-Optimized OS"}
    if kube_proxy is not None:
        node_info["kubeProxyVersion"] = kube_proxy
    spec: dict[str, Any] = {"providerID": f"gce://proj/us-central1-a/{name}"}
    if taints:
        spec["taints"] = [{"key": k, "value": v, "effect": e} for k, v, e in taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {"nodeInfo": node_info, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def service(
    name: str,
    namespace: str = "default",
    *,
    type: str = "LoadBalancer",
    etp: str | None = "Cluster",
    lb_class: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`etp` None leaves externalTrafficPolicy out, as older objects and dumps may."""
    spec: dict[str, Any] = {
        "type": type,
        "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP", "nodePort": 30080}],
        "selector": {"app": name},
    }
    if etp is not None:
        spec["externalTrafficPolicy"] = etp
    if lb_class is not None:
        spec["loadBalancerClass"] = lb_class
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def pod(
    name: str,
    namespace: str = "kube-system",
    *,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    container: str = "kube-proxy",
    image: str = "registry.k8s.io/kube-proxy:v1.31.4",
    phase: str = "Running",
    ready: bool | None = None,
    owner_uid: str = "",
) -> dict[str, Any]:
    """`ready` None leaves the conditions out; `owner_uid` names an owning DaemonSet."""
    spec: dict[str, Any] = {"containers": [{"name": container, "image": image}]}
    if node_name:
        spec["nodeName"] = node_name
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "kube-proxy", "uid": owner_uid}
        ]
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def kube_proxy_pod(node_name: str, version: str = "v1.31.4", **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "node_name": node_name,
        "labels": dict(KUBE_PROXY_LABELS),
        "image": f"registry.k8s.io/kube-proxy:{version}",
    }
    values.update(overrides)
    return pod(f"kube-proxy-{node_name}", **values)


def namespace(name: str, uid: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if uid:
        metadata["uid"] = uid
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def seed(fake: KubeFake, *objects: dict[str, Any]) -> None:
    for obj in objects:
        fake.upsert(obj)


def raw(response: Any) -> Any:
    """The JSON body of a `_preload_content=False` response."""
    return json.loads(response.data)


def status_body(exc: ApiException) -> dict[str, Any]:
    """The Status object an error response carried."""
    assert exc.body is not None
    body: dict[str, Any] = json.loads(exc.body)
    return body


# -- kubectl --------------------------------------------------------------------------------


def write_kubeconfig(directory: Path, server_url: str) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server_url}}],
                "users": [{"name": "anonymous", "user": {}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "anonymous"}}],
                "current-context": "fake",
            }
        ),
        encoding="utf-8",
    )
    return path


def run_kubectl(directory: Path, server_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: cannot check the fake against a real kubectl")
    kubeconfig = write_kubeconfig(directory, server_url)
    # Own HOME and cache dir: no discovery cache or config from the machine leaks in or out.
    env = {**os.environ, "HOME": str(directory), "KUBECONFIG": str(kubeconfig)}
    return subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "--cache-dir", str(directory / "cache"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
