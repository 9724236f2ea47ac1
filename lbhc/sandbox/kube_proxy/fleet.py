"""A kube-proxy health server for every node in a KubeFake, on real loopback sockets.

Each node gets its own 127.0.0.x address, so a health checker probes "node-7:10256" much as
GCE probes each instance. The fleet follows the apiserver fake: the kube-proxy Pod's image
tag says which version answers, and the live Node object says whether it is being deleted.
A node with no kube-proxy Pod in a cluster running Cilium's kube-proxy replacement (DaemonSet
kube-system/cilium) gets Cilium's health server instead, if ConfigMap kube-system/cilium-config
sets its healthz bind address; otherwise nothing listens there, as on a real node.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from lbhc.sandbox.kube_fake import KubeFake

from .behaviour import CILIUM_HEALTHZ_BIND_KEY, Version, reachable
from .server import KubeProxyServer, NodeState, utc_now

KUBE_PROXY_PORT = 10256
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
DEFAULT_SELECTOR: Mapping[str, str] = {"k8s-app": "kube-proxy"}

_TAG_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$")
_INSTANCE = re.compile(r"/projects/([^/]+)/zones/([^/]+)/instances/([^/]+)$")
_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
_FIRST_FREE = int(ipaddress.IPv4Address("127.0.0.2"))
_LAST_FREE = int(ipaddress.IPv4Address("127.255.255.254"))
_BIND_ATTEMPTS = 5
_FINISHED_PHASES = frozenset({"Pending", "Succeeded", "Failed"})  # no container running


CILIUM = "cilium"  # the DaemonSet and the prefix of its ConfigMap, in kube-system


@dataclass(frozen=True)
class _Wanted:
    version: Version | None  # None: Cilium's kube-proxy replacement
    host: str


def node_eligible(node: Mapping[str, Any]) -> bool:
    """kube-proxy's test: no deletionTimestamp and no ToBeDeletedByClusterAutoscaler taint
    (any value, any effect). Cordoning, DeletionCandidateOfClusterAutoscaler and
    karpenter.sh/disrupted do not count."""
    if (node.get("metadata") or {}).get("deletionTimestamp"):
        return False
    taints = (node.get("spec") or {}).get("taints") or []
    return not any(taint.get("key") == TO_BE_DELETED_TAINT for taint in taints)


def image_version(image: str) -> Version | None:
    """`registry.k8s.io/kube-proxy:v1.31.4(-gke.1072000)` -> (1, 31, 4); None for a
    digest-only, untagged or unparsable reference."""
    reference = image.split("@", 1)[0]
    name = reference.rsplit("/", 1)[-1]
    if ":" not in name:
        return None
    match = _TAG_VERSION.match(name.split(":", 1)[1])
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


class KubeProxyFleet:
    """Health servers for the nodes of `kube`, brought in line by sync() (or start()'s
    thread every `interval` seconds); close() or `with` stops them all.

    port: None tries 10256 on every address and, if it is taken anywhere, moves every node
    to one shared ephemeral port; 0 uses a shared ephemeral port from the start; any other
    value is kube-proxy's `--healthz-bind-address` port and must be free (OSError if not).
    """

    def __init__(
        self,
        kube: KubeFake,
        *,
        port: int | None = None,
        namespace: str = "kube-system",
        selector: Mapping[str, str] | None = None,
        draining_gate: bool | None = None,
        interval: float = 0.2,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._kube = kube
        self._fixed_port = bool(port)
        # The port a real kube-proxy would listen on; health checks name this one.
        self.emulated_port = port or KUBE_PROXY_PORT
        self._port: int | None = port or None  # shared by every server once known
        self._fallen_back = port == 0
        self._namespace = namespace
        self._selector = dict(DEFAULT_SELECTOR if selector is None else selector)
        self._draining_gate = draining_gate
        self._interval = interval
        self._clock = clock
        self._servers: dict[str, KubeProxyServer] = {}
        self._addresses: dict[str, str] = {}  # allocated (not InternalIP) address per node
        self._cursor = _FIRST_FREE
        self._by_provider_id: dict[str, str] = {}
        self._nodes: frozenset[str] = frozenset()
        self._stale_since: dict[str, datetime] = {}  # broken proxier: when it last synced
        self._retired_requests: dict[str, int] = {}
        self._gone: set[str] = set()  # nodes whose VM was deleted: nothing answers there
        self._lock = threading.Lock()  # the maps above
        self._sync_lock = threading.Lock()  # one sync at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.last_error: BaseException | None = None  # of the background thread's last sync

    # -- queries ----------------------------------------------------------------------------

    @property
    def port(self) -> int | None:
        """The port every server listens on (None before the first one started)."""
        return self._port

    def endpoint(self, node_name: str) -> tuple[str, int] | None:
        """Where `node_name`'s kube-proxy answers, or None when nothing listens for it."""
        with self._lock:
            server = self._servers.get(node_name)
        return None if server is None else server.endpoint

    def endpoints(self) -> dict[str, tuple[str, int]]:
        with self._lock:
            servers = dict(self._servers)
        return {name: server.endpoint for name, server in servers.items()}

    def endpoint_for_instance(self, instance_url: str, port: int) -> tuple[str, int] | None:
        """Where a health check on `port` of a GCE instance lands: the node whose providerID
        is gce://P/Z/NAME (else the node called NAME). A port other than the emulated
        kube-proxy port finds nothing listening, as on a real node. The address returned may
        use another port than `port`: loopback emulation can give every node its own 10256
        only while 10256 is free on every address, and falls back to a shared ephemeral one."""
        match = _INSTANCE.search(urlsplit(instance_url).path)
        if match is None or port != self.emulated_port:
            return None
        project, zone, name = match.groups()
        with self._lock:
            node = self._by_provider_id.get(f"gce://{project}/{zone}/{name}")
            if node is None and name in self._nodes:
                node = name
        return None if node is None else self.endpoint(node)

    def requests(self, node_name: str) -> int:
        """Requests the node's health servers answered, across restarts."""
        with self._lock:
            server = self._servers.get(node_name)
            retired = self._retired_requests.get(node_name, 0)
        return retired + (0 if server is None else server.requests)

    # -- faults -----------------------------------------------------------------------------

    def set_proxier_healthy(self, node_name: str, healthy: bool) -> None:
        """A broken proxier (rules not synced within 2 x syncPeriod) fails /healthz and
        /livez alike: the real failure a health check exists for. It sticks to the node
        name, across kube-proxy restarts, until set healthy again."""
        with self._lock:
            if healthy:
                self._stale_since.pop(node_name, None)
            else:
                self._stale_since.setdefault(node_name, self._clock())

    def _state(self, node_name: str) -> NodeState:
        node = self._kube.get("Node", None, node_name)
        with self._lock:
            stale_since = self._stale_since.get(node_name)
        # A Node gone from the apiserver is one being deleted (kube-proxy 1.33 says the same).
        eligible = node is not None and node_eligible(node)
        deleted = node is None or bool((node.get("metadata") or {}).get("deletionTimestamp"))
        return NodeState(eligible, stale_since is None, stale_since, deleted)

    # -- lifecycle --------------------------------------------------------------------------

    def sync(self) -> None:
        """Start, restart and stop servers to match the Nodes and kube-proxy Pods now in the
        fake. OSError if a fixed port is taken."""
        with self._sync_lock:
            if self._closed:
                raise RuntimeError("the kube-proxy fleet is closed")
            self._sync()

    def start(self) -> Self:
        """Sync now, then keep syncing on a daemon thread every `interval` seconds."""
        self.sync()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="kube-proxy-fleet", daemon=True
                )
                self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.sync()
            except RuntimeError:
                return  # closed under us
            except Exception as exc:  # keep serving what runs; the test reads last_error
                self.last_error = exc

    def close(self) -> None:
        """Stop the sync thread and every server. Idempotent."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        with self._sync_lock:
            self._closed = True
            for name in list(self._servers):
                self._stop_server(name)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- sync -------------------------------------------------------------------------------

    def _sync(self) -> None:
        nodes = {node["metadata"]["name"]: node for node in self._kube.objects("Node")}
        versions: dict[str, Version | None] = dict(self._versions(set(nodes)))
        if self._cilium_serves_healthz():
            versions.update({name: None for name in nodes if name not in versions})
        with self._lock:
            for name in self._gone:
                versions.pop(name, None)
        wanted = self._plan_hosts(nodes, versions)
        with self._lock:
            self._nodes = frozenset(nodes)
            self._by_provider_id = {
                provider_id: name
                for name, node in nodes.items()
                if (provider_id := (node.get("spec") or {}).get("providerID"))
            }
            running = {name: _Wanted(s.version, s.host) for name, s in self._servers.items()}
        for name, current in running.items():
            if wanted.get(name) != current:
                self._stop_server(name)
        self._start_missing(wanted)

    def vm_gone(self, node_name: str) -> None:
        """The node's VM was deleted (the autoscaler's delete, before the Node object goes):
        its kube-proxy stops answering at once and is not started again, so health checks
        probing it fail as they do against a VM that no longer exists."""
        # Under the sync lock: a sync in flight planned from before the VM went and would
        # start its server again.
        with self._sync_lock:
            with self._lock:
                self._gone.add(node_name)
            self._stop_server(node_name)

    def _cilium_serves_healthz(self) -> bool:
        """Cilium runs as the kube-proxy replacement and its healthz bind address is set."""
        if self._kube.get("DaemonSet", self._namespace, CILIUM) is None:
            return False
        config = self._kube.get("ConfigMap", self._namespace, f"{CILIUM}-config") or {}
        data = config.get("data") or {}
        return bool(data.get(CILIUM_HEALTHZ_BIND_KEY)) and data.get("kube-proxy-replacement") in (
            "true",
            "strict",
        )

    def _versions(self, node_names: set[str]) -> dict[str, Version]:
        """The reachable kube-proxy version running on each node that has one."""
        found: dict[str, tuple[bool, str, str, Version]] = {}
        for pod in self._kube.objects("Pod"):
            metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
            node_name = spec.get("nodeName") or ""
            labels = metadata.get("labels") or {}
            if (
                node_name not in node_names
                or metadata.get("namespace") != self._namespace
                or any(labels.get(key) != value for key, value in self._selector.items())
                or (pod.get("status") or {}).get("phase") in _FINISHED_PHASES
            ):
                continue
            version = image_version(_kube_proxy_image(spec))
            if version is None:
                continue
            # During a rollout the new pod wins over the terminating one.
            rank = (
                not metadata.get("deletionTimestamp"),
                str(metadata.get("creationTimestamp") or ""),  # RFC 3339 sorts as time
                str(metadata.get("name") or ""),
                version,
            )
            if node_name not in found or rank > found[node_name]:
                found[node_name] = rank
        return {name: rank[3] for name, rank in found.items() if reachable(rank[3])}

    def _plan_hosts(
        self, nodes: Mapping[str, Mapping[str, Any]], versions: Mapping[str, Version | None]
    ) -> dict[str, _Wanted]:
        """Each serving node's address: its loopback InternalIP, else one allocated once and
        kept while the node exists. No two nodes share an address."""
        internal = {
            name: address
            for name in sorted(nodes)
            if (address := _loopback_internal_ip(nodes[name])) is not None
        }
        claimed: dict[str, str] = {}
        for name in sorted(versions):
            address = internal.get(name)
            if address is not None and address not in claimed:
                claimed[address] = name
        hosts = {name: address for address, name in claimed.items()}
        with self._lock:
            allocated = {n: a for n, a in self._addresses.items() if n in nodes}
        # Every node's own address stays free, even where nothing listens (a probe there is
        # refused); so do allocations of nodes that stopped serving, to come back there.
        reserved = set(internal.values()) | {a for n, a in allocated.items() if n not in versions}
        for name in sorted(versions):
            if name in hosts:
                continue
            address = allocated.get(name)
            if address is None or address in reserved:
                address = self._allocate(reserved)
                allocated[name] = address
            reserved.add(address)
            hosts[name] = address
        with self._lock:
            self._addresses = allocated
        return {name: _Wanted(versions[name], hosts[name]) for name in versions}

    def _allocate(self, taken: set[str]) -> str:
        for _ in range(_LAST_FREE - _FIRST_FREE + 1):
            address = str(ipaddress.IPv4Address(self._cursor))
            self._cursor = _FIRST_FREE if self._cursor >= _LAST_FREE else self._cursor + 1
            if address not in taken:
                return address
        raise RuntimeError("no loopback address left")

    def _start_missing(self, wanted: Mapping[str, _Wanted]) -> None:
        """Start the servers not running yet. If the shared port is taken on some address,
        move every server to a fresh ephemeral port (all nodes keep one port, as on GCE)."""
        for _ in range(_BIND_ATTEMPTS):
            try:
                for name, want in wanted.items():
                    with self._lock:
                        running = name in self._servers
                    if not running:
                        self._start_server(name, want)
                return
            except OSError:
                if self._fixed_port:
                    raise
                self._fallen_back, self._port = True, None
                for name in list(self._servers):
                    self._stop_server(name)
        raise OSError("found no port free on every node address")

    def _start_server(self, name: str, want: _Wanted) -> None:
        port = self._port
        if port is None:
            port = 0 if self._fallen_back else KUBE_PROXY_PORT
        server = KubeProxyServer(
            want.version,
            lambda: self._state(name),
            host=want.host,
            port=port,
            draining_gate=self._draining_gate,
            clock=self._clock,
            name=f"kube-proxy-{name}",
        ).start()
        with self._lock:
            self._servers[name] = server
            if self._port is None:
                self._port = server.port

    def _stop_server(self, name: str) -> None:
        # Taken out under the lock first: the fleet's own sync and vm_gone may stop the same
        # server at once, and only one of them may stop and count it.
        with self._lock:
            server = self._servers.pop(name, None)
        if server is None:
            return
        server.stop()  # a prober may still get its endpoint meanwhile: refused, as in a restart
        with self._lock:
            self._retired_requests[name] = self._retired_requests.get(name, 0) + server.requests


def _kube_proxy_image(spec: Mapping[str, Any]) -> str:
    """The container named kube-proxy, else the only container."""
    containers = spec.get("containers") or []
    for container in containers:
        if container.get("name") == "kube-proxy":
            return str(container.get("image") or "")
    return str(containers[0].get("image") or "") if len(containers) == 1 else ""


def _loopback_internal_ip(node: Mapping[str, Any]) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") != "InternalIP":
            continue
        try:
            ip = ipaddress.ip_address(address.get("address") or "")
        except ValueError:
            continue
        if ip.version == 4 and ip in _LOOPBACK:
            return str(ip)
    return None
