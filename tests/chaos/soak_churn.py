"""Seeded random cluster churn, as the cluster's other actors make it: Services created
(Cluster or Local), deleted, flipped between policies; nodes added, tainted by the
autoscaler (one, or all at once), untainted, deleted (first marked: deletionTimestamp while
a finalizer holds it, then gone with its kube-proxy); a node's kube-proxy upgraded or
downgraded, also to a version too old to serve /healthz, or to an unparsable tag (both mean
fallback), and back.

Every decision comes from `random.Random(seed)` over state read back from the kube fake in
a stable order, so a seed replays the same choices (timing may still differ)."""

from __future__ import annotations

import copy
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

from lbhc.planner.names import target_pool_name
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.kube_proxy import image_version
from lbhc.sandbox.seed import LB_CLEANUP_FINALIZER, SandboxSpec, kube_proxy_pod, node, node_name
from tests.builders import kube as kube_builders

TAINT = "ToBeDeletedByClusterAutoscaler"
HOLD = "soak.lbhc.dev/vm"  # holds a deleted Node (deletionTimestamp set) until its VM goes
MODERN = ("v1.31.4", "v1.30.2", "v1.33.1", "v1.29.6", "v1.27.9")
TOO_OLD = "v1.6.13"  # before 1.7.2: no /healthz a remote checker can reach
UNPARSABLE = "latest"  # an unknown version: fallback under the default policy
Object = dict[str, Any]


class Churn:
    def __init__(
        self,
        kube: KubeFake,
        spec: SandboxSpec,
        rng: random.Random,
        *,
        max_services: int = 8,
        min_nodes: int = 2,
        max_nodes: int = 7,
    ) -> None:
        self._kube, self._spec, self._rng = kube, spec, rng
        self._max_services, self._min_nodes, self._max_nodes = max_services, min_nodes, max_nodes
        self._next_service = 0
        self._next_node = spec.nodes
        # Every pool a Service of this cluster has had: lbhc may attach/detach only these.
        self.service_pools = {target_pool_name(s["metadata"]["uid"]) for s in self._services()}

    def step(self) -> list[str]:
        """One to three actions; what each did, for the log."""
        return [self._one() for _ in range(self._rng.choice((1, 1, 2, 3)))]

    def _one(self) -> str:
        services, live, deleting = self._services(), self._live_nodes(), self._deleting_nodes()
        tainted = [n for n in live if _tainted(n)]
        menu: list[tuple[int, Callable[[], str], bool]] = [
            (3, self.add_service, len(services) < self._max_services),
            (2, lambda: self.delete_service(services), bool(services)),
            (2, lambda: self.flip_service(services), bool(services)),
            (2, self.add_node, len(live) < self._max_nodes),
            (3, lambda: self.taint([n for n in live if not _tainted(n)]), len(tainted) < len(live)),
            (1, lambda: self.taint_all(live), len(tainted) < len(live)),
            (3, lambda: self.untaint(tainted), bool(tainted)),
            (2, lambda: self.begin_node_deletion(live), len(live) > self._min_nodes),
            (3, lambda: self.finish_node_deletion(deleting), bool(deleting)),
            (3, lambda: self.change_version(live), bool(live)),
        ]
        choices = [(weight, act) for weight, act, possible in menu if possible]
        act = self._rng.choices([a for _, a in choices], [w for w, _ in choices])[0]
        return act()

    # -- Services -------------------------------------------------------------------------

    def add_service(self) -> str:
        index = self._next_service
        self._next_service += 1
        policy = "Local" if self._rng.random() < 0.25 else "Cluster"
        name = f"soak-{index}"
        uid = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"soak/{self._spec.namespace}/{name}"))
        self._kube.upsert(
            kube_builders.service(
                name,
                kube_builders.with_finalizers(LB_CLEANUP_FINALIZER),
                kube_builders.with_port(80, node_port=31000 + index % 2000),
                namespace=self._spec.namespace,
                policy=policy,
                uid=uid,
            )
        )
        self.service_pools.add(target_pool_name(uid))
        return f"Service {name} created ({policy})"

    def delete_service(self, services: list[Object]) -> str:
        meta = self._rng.choice(services)["metadata"]
        self._kube.delete("Service", meta["namespace"], meta["name"])
        return f"Service {meta['name']} deleted"

    def flip_service(self, services: list[Object]) -> str:
        service = self._rng.choice(services)
        meta = service["metadata"]
        policy = "Local" if _policy(service) == "Cluster" else "Cluster"
        patch = {"spec": {"externalTrafficPolicy": policy}}
        self._kube.patch("Service", meta["namespace"], meta["name"], patch)
        return f"Service {meta['name']} flipped to {policy}"

    # -- nodes ----------------------------------------------------------------------------

    def add_node(self) -> str:
        index = self._next_node
        self._next_node += 1
        version = self._version()
        kubelet = version if image_version(f"kube-proxy:{version}") else MODERN[0]
        obj = node(self._spec, index, kubelet)
        obj["metadata"]["finalizers"] = [HOLD]
        self._kube.upsert(obj)
        self._kube.upsert(kube_proxy_pod(node_name(index), version, "/livez"))
        return f"node {node_name(index)} added with kube-proxy {version}"

    def taint(self, nodes: list[Object]) -> str:
        name = self._rng.choice(nodes)["metadata"]["name"]
        self._kube.taint(name, TAINT, str(int(time.time())), "NoSchedule")
        return f"node {name} tainted {TAINT}"

    def taint_all(self, nodes: list[Object]) -> str:
        """The autoscaler scales the whole node pool down: every pool drains at once (all
        UNHEALTHY, failing open: the monitor must not count it)."""
        for name in _names(nodes):
            self._kube.taint(name, TAINT, str(int(time.time())), "NoSchedule")
        return f"every node ({len(nodes)}) tainted {TAINT}"

    def untaint(self, nodes: list[Object]) -> str:
        name = self._rng.choice(nodes)["metadata"]["name"]
        self._kube.untaint(name, TAINT)
        return f"node {name} untainted"

    def begin_node_deletion(self, nodes: list[Object]) -> str:
        """The Node gets a deletionTimestamp (its kube-proxy fails /healthz from now on)."""
        name = self._rng.choice(nodes)["metadata"]["name"]
        finalizers = self._kube.get("Node", None, name)["metadata"].get("finalizers") or []  # type: ignore[index]
        if HOLD not in finalizers:
            self._kube.patch("Node", None, name, {"metadata": {"finalizers": [*finalizers, HOLD]}})
        self._kube.delete("Node", None, name)
        return f"node {name} being deleted"

    def finish_node_deletion(self, nodes: list[Object]) -> str:
        """The VM is gone: the Node object goes, and its kube-proxy (and its Pod) with it."""
        name = self._rng.choice(nodes)["metadata"]["name"]
        self._kube.patch("Node", None, name, {"metadata": {"finalizers": None}})
        if self._kube.get("Pod", "kube-system", f"kube-proxy-{name}") is not None:
            self._kube.delete("Pod", "kube-system", f"kube-proxy-{name}")
        return f"node {name} gone"

    def change_version(self, nodes: list[Object]) -> str:
        """Mostly a healthy upgrade; an old or unknown kube-proxy is usually healed next."""
        pods = {n: self._kube.get("Pod", "kube-system", f"kube-proxy-{n}") for n in _names(nodes)}
        broken = sorted(n for n, pod in pods.items() if pod and not _modern(_image(pod)))
        if broken and self._rng.random() < 0.7:
            name, version = self._rng.choice(broken), self._rng.choice(MODERN)
        else:
            name, version = self._rng.choice(sorted(pods)), self._version()
        pod = pods[name]
        if pod is None:
            self._kube.upsert(kube_proxy_pod(name, version, "/livez"))
        else:
            updated = copy.deepcopy(pod)
            updated["spec"]["containers"][0]["image"] = f"registry.k8s.io/kube-proxy:{version}"
            self._kube.upsert(updated)
        return f"node {name}: kube-proxy now {version}"

    def _version(self) -> str:
        roll = self._rng.random()
        if roll < 0.12:
            return TOO_OLD
        if roll < 0.16:
            return UNPARSABLE
        return self._rng.choice(MODERN)

    # -- reading the cluster back ---------------------------------------------------------

    def _services(self) -> list[Object]:
        return sorted(
            (
                s
                for s in self._kube.objects("Service")
                if s.get("spec", {}).get("type") == "LoadBalancer"
                and not s["metadata"].get("deletionTimestamp")
            ),
            key=lambda s: str(s["metadata"]["name"]),
        )

    def _live_nodes(self) -> list[Object]:
        return sorted(
            (n for n in self._kube.objects("Node") if not n["metadata"].get("deletionTimestamp")),
            key=lambda n: str(n["metadata"]["name"]),
        )

    def _deleting_nodes(self) -> list[Object]:
        return sorted(
            (n for n in self._kube.objects("Node") if n["metadata"].get("deletionTimestamp")),
            key=lambda n: str(n["metadata"]["name"]),
        )


def _tainted(node_obj: Object) -> bool:
    return any(t.get("key") == TAINT for t in node_obj.get("spec", {}).get("taints") or [])


def _policy(service: Object) -> str:
    return str(service.get("spec", {}).get("externalTrafficPolicy") or "Cluster")


def _names(nodes: list[Object]) -> list[str]:
    return [str(n["metadata"]["name"]) for n in nodes]


def _image(pod: Object) -> str:
    return str(pod["spec"]["containers"][0].get("image") or "")


def _modern(image: str) -> bool:
    version = image_version(image)
    return version is not None and version >= (1, 7, 2)
