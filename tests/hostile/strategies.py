"""Hypothesis strategies for hostile input, built as raw JSON the way the API sends it (never
from the model classes: the projections must be validated by their own decode path).

- `json_values`: anything JSON can hold, for "decodes or fails clearly".
- `raw_node` / `raw_service` / `raw_pod` / `raw_daemonset`: objects a real API server could
  serve, with odd but admissible values; `mutated` breaks one of them somewhere.
- `planner_settings`: keyword arguments the Settings validation accepts.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from lbhc.planner.config import HEALTH_CHECKER_RANGES

Json = Any

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values: st.SearchStrategy[Json] = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)

dns_label = st.from_regex(r"[a-z]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True)
names = dns_label | st.sampled_from(["n" * 63, "node-0", "node-1", "web", "kube-proxy"])
node_names = st.sampled_from(["node-0", "node-1", "node-2", "a" * 63 + ".b"])
odd_text = st.text(max_size=40) | st.sampled_from(["", " ", "\n", "x" * 10_000, "ü" * 300])
version_text = (
    st.sampled_from(
        [
            "v1.31.4",
            "v1.31.4-gke.1072000",
            "v1.30.0+k3s1",
            "v1.29.0-eks-5e0fdde",
            "1.7.2",
            "v1.6.13",
            "v1.28",
            "latest",
            "",
            "v1.31.4_coreos.0",
            "v1.99999999999.0",
        ]
    )
    | st.from_regex(
        r"v?[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,3})?([-+_][a-z0-9.]{0,12})?", fullmatch=True
    )
    | odd_text
)
images = st.one_of(
    version_text.map(lambda tag: f"registry.k8s.io/kube-proxy:{tag}"),
    st.just("registry.k8s.io/kube-proxy@sha256:" + "a" * 64),
    st.just("localhost:5000/kube-proxy"),
    odd_text,
)
label_maps = st.dictionaries(
    st.sampled_from(
        [
            "k8s-app",
            "node.kubernetes.io/exclude-from-external-load-balancers",
            "kubernetes.io/os",
            "x" * 63,
        ]
    )
    | st.text(max_size=10),
    st.sampled_from(["kube-proxy", "true", "", "linux"]) | st.text(max_size=10),
    max_size=4,
)
# Mostly absent: an object being deleted is the exception, and blocks most decisions.
timestamps = st.sampled_from([None] * 6 + ["2026-11-22T00:00:00Z", "not-a-time", ""])


def _meta(draw: st.DrawFn, name: str, namespace: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(draw(st.integers(1, 10**6)))}
    if namespace is not None:
        meta["namespace"] = namespace
    deletion = draw(timestamps)
    if deletion is not None:
        meta["deletionTimestamp"] = deletion
    if draw(st.booleans()):
        meta["creationTimestamp"] = draw(st.sampled_from(["2020-01-01T00:00:00Z", "garbage"]))
    return meta


def mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`common` nine times in ten: one odd value among many plain ones is what a cluster
    looks like, and what lets the rest of a world still reach every decision."""
    return st.sampled_from([common] * 9 + [rare]).flatmap(lambda chosen: chosen)


sane_versions = mostly(st.sampled_from(["v1.31.4", "v1.31.4-gke.100", "v1.30.2"]), version_text)


@st.composite
def raw_node(
    draw: st.DrawFn, name: str | None = None, versions: st.SearchStrategy[str] = version_text
) -> dict[str, Any]:
    meta = _meta(draw, name or draw(node_names), None)
    meta["labels"] = draw(label_maps)
    taints = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(
                        ["ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler"]
                    )
                    | st.text(min_size=1, max_size=10),
                    "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", ""]),
                    "value": odd_text,
                }
            ),
            max_size=2,
        )
    )
    spec: dict[str, Any] = {"taints": taints}
    provider = draw(
        st.none()
        | st.sampled_from(["gce://proj/us-central1-a/vm", "aws:///us-east-1a/i-1", "gce://", ""])
    )
    if provider is not None:
        spec["providerID"] = provider
    info: dict[str, Any] = {"kubeletVersion": draw(versions)}
    if draw(st.booleans()):
        info["kubeProxyVersion"] = draw(versions)
    status: dict[str, Any] = {"nodeInfo": info}
    if draw(st.booleans()):
        status["addresses"] = [{"type": "InternalIP", "address": "10.0.0.1"}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


OPT_OUT_VALUES = st.sampled_from(["true", "TRUE ", "yes", "1", "false", "maybe", ""])


@st.composite
def raw_service(draw: st.DrawFn, name: str | None = None) -> dict[str, Any]:
    namespace = draw(st.sampled_from(["default", "prod", "n" * 63]))
    meta = _meta(draw, name or draw(names), namespace)
    meta["uid"] = draw(
        mostly(st.uuids().map(str), st.sampled_from(["", "0" * 253, "UPPER-CASE-UID", "ü-uid"]))
    )
    annotations: dict[str, str] = {}
    if draw(mostly(st.just(False), st.just(True))):
        annotations["lbhc.dev/ignore"] = draw(OPT_OUT_VALUES)
    if draw(st.booleans()):
        annotations["x"] = draw(odd_text)
    meta["annotations"] = annotations
    spec: dict[str, Any] = {
        "type": draw(mostly(st.just("LoadBalancer"), st.sampled_from(["ClusterIP", "Weird", ""])))
    }
    policy = draw(mostly(st.just("Cluster"), st.sampled_from(["Local", None, "cluster"])))
    if policy is not None:
        spec["externalTrafficPolicy"] = policy
    lb_class = draw(mostly(st.none(), st.sampled_from(["example.com/mine", "other.io/lb"])))
    if lb_class is not None:
        spec["loadBalancerClass"] = lb_class
    ports = draw(st.integers(0, 3))
    if ports:
        spec["ports"] = [{"port": 80 + i, "protocol": "TCP"} for i in range(ports)]
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def _probe(draw: st.DrawFn) -> dict[str, Any] | None:
    if not draw(st.booleans()):
        return None
    return {
        "httpGet": {
            "path": draw(st.sampled_from(["/healthz", "/livez", "/", ""])),
            "port": draw(st.sampled_from([10256, "10256", 8080, "metrics"])),
        }
    }


def _container(draw: st.DrawFn, image: st.SearchStrategy[str] = images) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": draw(st.sampled_from(["kube-proxy", "sidecar", ""])),
        "image": draw(image),
    }
    for field in ("readinessProbe", "livenessProbe"):
        probe = _probe(draw)
        if probe is not None:
            container[field] = probe
    return container


@st.composite
def raw_pod(draw: st.DrawFn, image: st.SearchStrategy[str] = images) -> dict[str, Any]:
    meta = _meta(
        draw, "kube-proxy-" + draw(dns_label), draw(st.sampled_from(["kube-system"] * 3 + ["x"]))
    )
    meta["labels"] = draw(st.sampled_from([{"k8s-app": "kube-proxy"}] * 3 + [{}])) | draw(
        label_maps
    )
    if draw(st.booleans()):
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": "kube-proxy", "uid": "ds-1"}]
    spec: dict[str, Any] = {
        "containers": [_container(draw, image) for _ in range(draw(st.integers(0, 2)))]
    }
    node = draw(st.none() | node_names)
    if node is not None:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": draw(st.sampled_from(["Running", "Pending", "Failed", ""]))}
    ready = draw(st.sampled_from(["True", "False", None]))
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


@st.composite
def raw_daemonset(draw: st.DrawFn) -> dict[str, Any]:
    meta = _meta(draw, draw(st.sampled_from(["kube-proxy", "other"])), "kube-system")
    meta["labels"] = draw(st.sampled_from([{"k8s-app": "kube-proxy"}, {}]))
    template = {
        "metadata": {"labels": {"k8s-app": "kube-proxy"}},
        "spec": {
            "containers": [_container(draw) for _ in range(draw(st.integers(0, 2)))],
            "nodeSelector": draw(label_maps),
        },
    }
    spec = {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": spec}


RAW = {
    "Node": raw_node(),
    "Service": raw_service(),
    "Pod": raw_pod(),
    "DaemonSet": raw_daemonset(),
    "Namespace": st.builds(
        lambda name, uid: {"kind": "Namespace", "metadata": {"name": name, "uid": uid}},
        st.sampled_from(["kube-system", "default"]),
        st.uuids().map(str),
    ),
}


def _paths(value: Json, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> Json:
    """A valid raw object with one spot broken: a value replaced by any JSON, or a key
    removed. Most results are near-valid; some are still valid."""
    obj = copy.deepcopy(draw(base))
    path = draw(st.sampled_from(_paths(obj)))
    if not path:
        return draw(json_values)
    parent: Any = obj
    for part in path[:-1]:
        parent = parent[part]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    return obj


# ---- settings the Settings validation accepts -------------------------------------------
ports = st.integers(1, 65535)
timings = st.tuples(st.integers(1, 300), st.integers(1, 300)).map(
    lambda pair: (max(pair), min(pair))  # interval >= timeout, as GCE requires
)


@st.composite
def planner_settings(draw: st.DrawFn) -> dict[str, Any]:
    interval, timeout = draw(timings)
    return {
        "project": draw(st.sampled_from(["proj", "my-project-123", "example.com:proj"])),
        "region": "us-central1",
        "network": draw(
            st.sampled_from(["default", "vpc-1", "projects/proj/global/networks/shared"])
        ),
        "node_tags": ",".join(draw(st.lists(dns_label, min_size=1, max_size=3))),
        "cluster_id": draw(
            st.none()
            | st.sampled_from(["c1", "prod-7", "b" * 32])  # the longest, to meet base_name's
            | st.from_regex(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?", fullmatch=True)
        ),
        "base_name": draw(st.sampled_from(["k8s-l4-healthcheck", "hc", "a" * 42])),
        "port": draw(ports),
        "request_path": draw(st.sampled_from(["/healthz", "/livez", "/", "/a/b?c=d"])),
        "check_interval_sec": interval,
        "timeout_sec": timeout,
        "healthy_threshold": draw(st.integers(1, 10)),
        "unhealthy_threshold": draw(st.integers(1, 10)),
        "raise_only_timings": draw(st.booleans()),
        "health_check_mode": draw(st.sampled_from(["coexist", "takeover"])),
        "load_balancer_classes": draw(st.sampled_from(["", "example.com/mine"])),
        "unknown_version_policy": draw(st.sampled_from(["fallback", "assume-supported"])),
        "fallback_policy": draw(
            st.sampled_from(["any-old-node"] * 3 + ["never", "assume-version v1.31.0"])
        ),
        "kube_proxy_draining_gate": draw(st.sampled_from(["unknown", "enabled", "disabled"])),
    }


SOURCE_RANGES = st.lists(
    st.sampled_from([*HEALTH_CHECKER_RANGES, "0.0.0.0/0", "130.211.0.0/22", "10.0.0.0/8"]),
    max_size=4,
    unique=True,
)
