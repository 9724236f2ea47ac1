# ruff: noqa: E501  -- literal object fixtures read better unwrapped
"""Realistic Kubernetes objects for benchmarks: the size and shape a real API server returns
(managedFields, conditions, images), so decode and memory figures mean something."""

from __future__ import annotations

import json
import uuid
from typing import Any

# The GCP project of the nodes' VMs: the bench world's (tests/bench/world.py PROJECT), so a
# node's providerID names a VM the Compute fake holds.
PROJECT = "bench-project"


def node(i: int, kubelet: str = "v1.31.4-gke.1072000") -> dict[str, Any]:
    name = f"gke-bench-pool-{i // 1000}-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-11-01T09:00:00Z",
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": "e2-standard-4",
                "beta.kubernetes.io/os": "linux",
                "cloud.google.com/gke-boot-disk": "pd-balanced",
                "cloud.google.com/gke-container-runtime": "containerd",
                "cloud.google.com/gke-nodepool": f"pool-{i // 1000}",
                "cloud.google.com/gke-os-distribution": "cos",
                "cloud.google.com/machine-family": "e2",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "e2-standard-4",
                "topology.gke.io/zone": "us-central1-a",
                "topology.kubernetes.io/region": "us-central1",
                "topology.kubernetes.io/zone": "us-central1-a",
            },
            "annotations": {
                "container.googleapis.com/instance_id": str(10**18 + i),
                "csi.volume.kubernetes.io/nodeid": json.dumps(
                    {
                        "pd.csi.storage.gke.io": f"projects/{PROJECT}/zones/us-central1-a/instances/{name}"
                    }
                ),
                "node.alpha.kubernetes.io/ttl": "0",
                "node.gke.io/last-applied-node-labels": "cloud.google.com/gke-boot-disk=pd-balanced,cloud.google.com/gke-nodepool=pool",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-22T02:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": {
                                f'k:{{"type":"{t}"}}': {".": {}, "f:lastHeartbeatTime": {}}
                                for t in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
                            }
                        }
                    },
                }
            ],
        },
        "spec": {
            "podCIDR": f"10.{i // 250}.{i % 250}.0/24",
            "podCIDRs": [f"10.{i // 250}.{i % 250}.0/24"],
            "providerID": f"gce://{PROJECT}/us-central1-a/{name}",
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": f"10.128.{i // 250}.{i % 250}"},
                {"type": "ExternalIP", "address": f"34.1.{i // 250}.{i % 250}"},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": {
                "cpu": "3920m",
                "ephemeral-storage": "47060071478",
                "memory": "13365204Ki",
                "pods": "110",
            },
            "capacity": {
                "cpu": "4",
                "ephemeral-storage": "98831908Ki",
                "memory": "16393684Ki",
                "pods": "110",
            },
            "conditions": [
                {
                    "type": t,
                    "status": "False" if t != "Ready" else "True",
                    "reason": f"Kubelet{t}",
                    "message": f"kubelet reports {t}",
                    "lastHeartbeatTime": "2026-11-22T02:00:00Z",
                    "lastTransitionTime": "2026-11-01T09:00:00Z",
                }
                for t in (
                    "MemoryPressure",
                    "DiskPressure",
                    "PIDPressure",
                    "Ready",
                    "FrequentKubeletRestart",
                )
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [
                {
                    "names": [
                        f"gke.gcr.io/image-{j}@sha256:{uuid.uuid5(uuid.NAMESPACE_DNS, str(j)).hex}{uuid.uuid5(uuid.NAMESPACE_DNS, str(j)).hex}",
                        f"gke.gcr.io/image-{j}:v1.{j}.0",
                    ],
                    "sizeBytes": 10_000_000 + j,
                }
                for j in range(20)
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": str(uuid.uuid4()),
                "containerRuntimeVersion": "containerd://1.7.24",
                "kernelVersion": "6.1.100+",
                "kubeProxyVersion": "",
                "kubeletVersion": kubelet,
                "machineID": uuid.uuid4().hex,
                "operatingSystem": "linux",
                "osImage": "Container-Optimized OS from Google",
                "systemUUID": str(uuid.uuid4()),
            },
        },
    }


def service(i: int, policy: str) -> dict[str, Any]:
    name, namespace = f"svc-{i:05d}", f"ns-{i % 100}"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{namespace}/{name}")),
            "resourceVersion": str(50_000 + i),
            "creationTimestamp": "2026-11-01T09:00:00Z",
            "labels": {"app": name, "team": f"team-{i % 20}"},
            "annotations": {"cloud.google.com/neg": '{"ingress":true}'},
            "finalizers": ["service.kubernetes.io/load-balancer-cleanup"],
        },
        "spec": {
            "type": "LoadBalancer",
            "externalTrafficPolicy": policy,
            "selector": {"app": name},
            "ports": [
                {
                    "name": "http",
                    "port": 80,
                    "protocol": "TCP",
                    "targetPort": 8080,
                    "nodePort": 30000 + i % 2000,
                }
            ],
            "clusterIP": f"10.12.{i // 250}.{i % 250}",
            "clusterIPs": [f"10.12.{i // 250}.{i % 250}"],
            "sessionAffinity": "None",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "allocateLoadBalancerNodePorts": True,
            "internalTrafficPolicy": "Cluster",
            **({"healthCheckNodePort": 32000 + i % 700} if policy == "Local" else {}),
        },
        "status": {
            "loadBalancer": {"ingress": [{"ip": f"34.2.{i // 250}.{i % 250}", "ipMode": "VIP"}]}
        },
    }


def kube_proxy_pod(i: int, node_name: str, tag: str = "v1.31.4-gke.1072000") -> dict[str, Any]:
    name = f"kube-proxy-{node_name}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "resourceVersion": str(90_000 + i),
            "labels": {"k8s-app": "kube-proxy", "component": "kube-proxy", "tier": "node"},
            "annotations": {
                "kubernetes.io/config.hash": uuid.uuid4().hex,
                "kubernetes.io/config.source": "file",
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node_name,
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node_name,
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "containers": [
                {
                    "name": "kube-proxy",
                    "image": f"gke.gcr.io/kube-proxy-amd64:{tag}",
                    "command": [
                        "/bin/sh",
                        "-c",
                        "exec kube-proxy --master=https://10.0.0.2 --kubeconfig=/var/lib/kube-proxy/kubeconfig --cluster-cidr=10.8.0.0/14 --oom-score-adj=-998 --v=2 --iptables-sync-period=1m --iptables-min-sync-period=10s --ipvs-sync-period=1m --ipvs-min-sync-period=10s --detect-local-mode=NodeCIDR",
                    ],
                    "resources": {"requests": {"cpu": "100m"}},
                    "securityContext": {"privileged": True},
                    "volumeMounts": [
                        {"name": n, "mountPath": f"/{n}"}
                        for n in (
                            "etc-ssl-certs",
                            "usr-ca-certs",
                            "varlog",
                            "kubeconfig",
                            "iptableslock",
                            "lib-modules",
                        )
                    ],
                }
            ],
            "volumes": [
                {"name": n, "hostPath": {"path": f"/{n}", "type": ""}}
                for n in (
                    "etc-ssl-certs",
                    "usr-ca-certs",
                    "varlog",
                    "kubeconfig",
                    "iptableslock",
                    "lib-modules",
                )
            ],
            "tolerations": [
                {"operator": "Exists", "effect": "NoExecute"},
                {"operator": "Exists", "effect": "NoSchedule"},
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.128.{i // 250}.{i % 250}",
            "hostIP": f"10.128.{i // 250}.{i % 250}",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2026-11-01T09:00:00Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "kube-proxy",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": f"gke.gcr.io/kube-proxy-amd64:{tag}",
                    "imageID": "sha256:" + uuid.uuid4().hex * 2,
                    "containerID": "containerd://" + uuid.uuid4().hex * 2,
                    "state": {"running": {"startedAt": "2026-11-01T09:00:10Z"}},
                }
            ],
        },
    }


def cluster(
    nodes: int, services: int, local_share: float = 0.2
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    node_objs = [node(i) for i in range(nodes)]
    local_every = int(1 / local_share) if local_share else 0
    svc_objs = [
        service(i, "Local" if local_every and i % local_every == 0 else "Cluster")
        for i in range(services)
    ]
    pod_objs = [kube_proxy_pod(i, n["metadata"]["name"]) for i, n in enumerate(node_objs)]
    return node_objs, svc_objs, pod_objs
