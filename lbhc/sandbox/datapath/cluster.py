"""The data path of a sandbox's cluster: each LoadBalancer Service's NodePort on every Node
(NodeBackends), kept in line with the Kubernetes fake, behind the forwarding rules' listeners
(DataPath).

- Nodes: every Node gets a backend in every Service's NodeBackends as soon as it is seen; a
  Node deleted from the apiserver vanishes: its connections are dropped from then on. So does
  one whose VM is deleted first (`vanish`, as cluster-autoscaler deletes the VM through the
  cloud provider before the cloud node lifecycle controller deletes the Node object).
- Instance to node: each Node's VM as the cloud provider derives it (lbhc.model.cloud
  instance_url: from its providerID gce://PROJECT/ZONE/NAME, else a VM of its name in the
  cluster's zone). A deleted node's VM is remembered: its instance stays in the pools until
  the service controller's node sync cuts it.
- Policy, per Service: externalTrafficPolicy Cluster, every node answers; Local, only nodes
  running a ready Pod the Service selects (kube-proxy's local endpoints: Running, Ready, not
  terminating), read from the apiserver fake. The sandbox seeds no such Pods: its Local
  Services answer on no node until a test or the demo adds some.

The Kubernetes fake is reread every `sync_sec` when its resourceVersion moved (cheap when
nothing changed).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from functools import partial
from typing import Any, Self

from lbhc.model.cloud import instance_url, resource_path
from lbhc.model.cluster import Node
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.datapath.backends import NodeBackends
from lbhc.sandbox.datapath.datapath import DataPath
from lbhc.sandbox.datapath.frontends import Frontend
from lbhc.sandbox.datapath.records import FlowRecord
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.lifecycle import StartedInWith

log = logging.getLogger(__name__)


class SandboxDataPath(StartedInWith):
    def __init__(
        self,
        kube: KubeFake,
        compute: ComputeFake,
        *,
        project: str,
        zone: str,
        keep_established: bool = True,
        poll_sec: float = 0.05,
        sync_sec: float = 0.05,
    ) -> None:
        self._kube = kube
        self._project, self._zone, self._sync_sec = project, zone, sync_sec
        self._lock = threading.Lock()  # the maps below
        self._backends: dict[str, NodeBackends] = {}  # by Service "namespace/name"
        self._local: dict[str, frozenset[str] | None] = {}  # None: Cluster (every node)
        self._nodes: set[str] = set()  # seen, vanished ones included
        self._vanished: set[str] = set()
        self._by_instance: dict[str, str] = {}  # VM URL path (projects/...) -> node
        self._seen_version = ""
        self._sync_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.path = DataPath(
            compute,
            self.backends_for,
            node_of=self.node_of,
            keep_established=keep_established,
            poll_sec=poll_sec,
        )

    # -- queries ------------------------------------------------------------------------------

    def address(self, rule_name: str) -> tuple[str, int] | None:
        """Where the forwarding rule's listener is (DataPath.address)."""
        return self.path.address(rule_name)

    def flows(self) -> list[FlowRecord]:
        return self.path.flows()

    def backends(self, service: str) -> NodeBackends | None:
        """The NodePort of Service "namespace/name" on every node."""
        with self._lock:
            return self._backends.get(service)

    def rule_names(self, service: str) -> list[str]:
        """The forwarding rules of Service "namespace/name" the data path serves, by name."""
        return sorted(n for n, f in self.path.frontends().items() if f.service == service)

    def backends_for(self, frontend: Frontend) -> NodeBackends | None:
        return self.backends(frontend.service)

    def node_of(self, instance_url: str) -> str | None:
        """The node whose VM the instance is (a deleted one included); None if none is."""
        with self._lock:
            return self._by_instance.get(resource_path(instance_url))

    def listening(self) -> list[tuple[str, int]]:
        """Every listening socket of the data path and of every NodeBackends."""
        with self._lock:
            backends = list(self._backends.values())
        found = self.path.listening()
        for each in backends:
            found += each.listening().values()
        return found

    def vanish(self, node: str) -> None:
        """The node's VM is gone (cluster-autoscaler deletes it through the cloud provider
        before the Node object goes): every Service's NodePort on it drops connections from
        now on, while its instance may still be a member of the load balancers. A node whose
        Node object is deleted vanishes by itself."""
        with self._lock:
            self._vanished.add(node)
            every = list(self._backends.values())
        for each in every:
            each.vanish(node)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """Backends for the cluster there is now, the listeners, then follow the cluster."""
        try:
            self.sync()
            self.path.start()
        except BaseException:
            self.close()
            raise
        self._thread = threading.Thread(target=self._run, name="data-path-nodes", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.path.close()
        with self._sync_lock, self._lock:
            backends, self._backends = list(self._backends.values()), {}
        for each in backends:
            each.close()

    def _run(self) -> None:
        while not self._stop.wait(self._sync_sec):
            try:
                self.sync()
            except Exception:  # keep what runs; a later sync may succeed
                log.exception("data path: following the cluster failed")

    # -- following the cluster ----------------------------------------------------------------

    def sync(self) -> None:
        """Bring the backends in line with the Nodes, Services and Pods now in the fake."""
        with self._sync_lock:
            version = self._kube.resource_version
            if version == self._seen_version or self._stop.is_set():
                return
            self._seen_version = version
            nodes = {str(n["metadata"]["name"]): n for n in self._kube.objects("Node")}
            services = {
                _key(s): s
                for s in self._kube.objects("Service")
                if (s.get("spec") or {}).get("type") == "LoadBalancer"
            }
            pods = self._kube.objects("Pod")
            local = {key: _local_nodes(s, pods) for key, s in services.items()}
            with self._lock:
                gone = self._nodes - nodes.keys() - self._vanished
                self._vanished |= gone
                self._nodes |= nodes.keys()
                for name, node in nodes.items():
                    vm = instance_url(Node.model_validate(node), self._project, self._zone)
                    self._by_instance[resource_path(vm)] = name
                self._local = local
                retired = [self._backends.pop(k) for k in set(self._backends) - services.keys()]
                for key in services.keys() - self._backends.keys():
                    self._backends[key] = NodeBackends(partial(self._serves, key), name=key)
                every = list(self._backends.values())
                live = nodes.keys() - self._vanished
            for each in retired:
                each.close()
            for each in every:
                for name in live:
                    each.add(name)
                for name in gone:
                    each.vanish(name)

    def _serves(self, service: str, node: str) -> bool:
        with self._lock:
            local = self._local.get(service)
        return local is None or node in local


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _local_nodes(service: Mapping[str, Any], pods: list[dict[str, Any]]) -> frozenset[str] | None:
    """The nodes with a ready endpoint of a Local Service; None for a Cluster one."""
    spec = service.get("spec") or {}
    if spec.get("externalTrafficPolicy") != "Local":
        return None
    selector: Mapping[str, str] = spec.get("selector") or {}
    namespace = (service.get("metadata") or {}).get("namespace")
    found: set[str] = set()
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        labels = meta.get("labels") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        if (
            selector
            and meta.get("namespace") == namespace
            and all(labels.get(k) == v for k, v in selector.items())
            and status.get("phase") == "Running"
            and ready
            and not meta.get("deletionTimestamp")
            and (node := (pod.get("spec") or {}).get("nodeName"))
        ):
            found.add(str(node))
    return frozenset(found)
