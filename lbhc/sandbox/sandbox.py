"""Sandbox: everything lbhc talks to, in one process, on real sockets: the kube-apiserver
fake (seeded with a small cluster), the Compute fake (seeded with the load balancers a cloud
provider would have made) with its HTTP health prober behind getHealth (target pools and
backend services alike), one emulated kube-proxy health server per node, the kubelet's
readiness probing of kube-proxy Pods, and the service controller's load-balancer lifecycle,
as the legacy or the current GCE cloud provider does it (SandboxSpec.cloud_provider); the
current profile adds GKE's ingress-gce L4 controllers and the nodes' VMs; with
SandboxOptions.data_path, the load balancers' data path too (lbhc.sandbox.datapath). `lbhc
sandbox` serves it; `lbhc demo` and tests drive it.

In the current profile the emulated controllers make the backend-service load balancers
themselves, in their first pass, before the sandbox is handed over: with operations
completing at once, and the Compute fake's journal cleared after it, so the sandbox starts
as a cluster whose load balancers were made long ago (the target pools are seeded directly,
upstream.seed, as some were made by an older cloud provider)."""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from lbhc.model.cloud import instance_url
from lbhc.model.cluster import Node, Service
from lbhc.sandbox.cloud_provider import provision_load_balancers
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer, HealthProber
from lbhc.sandbox.datapath import SandboxDataPath
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from lbhc.sandbox.kube_proxy import KubeProxyFleet
from lbhc.sandbox.kubelet import KubeletEmulator
from lbhc.sandbox.lifecycle import StartedInWith
from lbhc.sandbox.seed import (
    KUBE_SYSTEM_UID,
    SandboxSpec,
    cluster_objects,
    old_provider_services,
)
from lbhc.sandbox.service_controller import ServiceControllerEmulator
from lbhc.sandbox.upstream import names as upstream
from lbhc.sandbox.upstream import seed as upstream_seed
from lbhc.sandbox.upstream.netlb import Project, Recreation

NODE_TAG = "gke-sandbox-node"


@dataclass(frozen=True)
class SandboxOptions:
    spec: SandboxSpec = field(default_factory=SandboxSpec)
    operation_latency: float = 0.2  # seconds each GCE operation stays PENDING/RUNNING
    # Health checking (GCE's prober, the kubelet) runs this much faster than real time: 0.1
    # turns the default 8 s check interval into 0.8 s. lbhc's own logic is unchanged.
    time_scale: float = 1.0
    directory: Path | None = None  # where the kubeconfig goes (a temporary one if None)
    kube_port: int = 0
    compute_port: int = 0
    # The emulated kube-proxies' port (KubeProxyFleet's `port`): None tries 10256 on every
    # node address; 0 takes one shared ephemeral port from the start, so sandboxes in other
    # processes never make the fleet move every server mid-run.
    kube_proxy_port: int | None = None
    # The emulated load-balancer data path (lbhc.sandbox.datapath): a loopback listener per
    # forwarding rule relaying to the nodes' NodePorts, following pools, health and Nodes.
    # Off by default: nothing else listens or changes without it.
    data_path: bool = False
    data_path_keep_established: bool = True  # established flows stay on an UNHEALTHY member

    def __post_init__(self) -> None:
        if not 0 < self.time_scale <= 1:
            raise ValueError(f"time scale: got {self.time_scale}; expected more than 0, at most 1")
        if not 0 <= self.operation_latency <= 60:
            raise ValueError(
                f"operation latency: got {self.operation_latency}; expected 0 to 60 seconds"
            )


class Sandbox(StartedInWith):
    def __init__(self, options: SandboxOptions | None = None) -> None:
        self.options = options or SandboxOptions()
        self.spec = self.options.spec
        self.kube = KubeFake()
        self.compute = ComputeFake(operation_latency=self.options.operation_latency)
        self._stack = contextlib.ExitStack()
        self.kube_server: KubeFakeServer | None = None
        self.compute_server: ComputeFakeServer | None = None
        self.fleet: KubeProxyFleet | None = None
        self.prober: HealthProber | None = None
        self.service_controller: ServiceControllerEmulator | None = None
        self.data_path: SandboxDataPath | None = None  # with SandboxOptions.data_path
        self.kubeconfig = Path()
        # Today's GCE cloud provider's configuration (the current profile); None in legacy.
        uid, spec = self.spec.cluster_uid, self.spec
        self.provider: Project | None = (
            None
            if uid is None
            else Project(
                spec.project,
                spec.region,
                uid,
                KUBE_SYSTEM_UID,
                (NODE_TAG,),
                ilb_subsetting=spec.ilb_subsetting,
                skip_igs_management=True,  # GKE with RBS: ingress-gce keeps the groups
            )
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        spec, options, stack = self.spec, self.options, self._stack
        for obj in cluster_objects(spec):
            self.kube.upsert(obj)
        self.compute.add_network(spec.project, "default")
        # The nodes are pool instance URLs, not seeded instances: tell the prober's firewall
        # check they carry the node tag (the one lbhc's and the cloud provider's firewalls
        # target), as a GKE node VM does.
        self.compute.default_instance_tags = (NODE_TAG,)
        nodes = [Node.model_validate(n) for n in self.kube.objects("Node")]
        if self.provider is None:
            provision_load_balancers(
                self.compute,
                spec.project,
                spec.region,
                [Service.model_validate(s) for s in self.kube.objects("Service")],
                nodes,
            )
        else:
            upstream_seed.provision(
                self.compute,
                self.provider,
                self.kube.objects("Service"),
                [instance_url(n, spec.project, spec.zone) for n in nodes],
                without_check=old_provider_services(spec),
            )
        self.kube_server = stack.enter_context(KubeFakeServer(self.kube, port=options.kube_port))
        self.compute_server = stack.enter_context(
            ComputeFakeServer(self.compute, port=options.compute_port)
        )
        directory = options.directory
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lbhc-")))
        self.kubeconfig = self.kube_server.write_kubeconfig(directory / "kubeconfig")
        self.fleet = stack.enter_context(
            KubeProxyFleet(self.kube, port=options.kube_proxy_port).start()
        )
        self.prober = stack.enter_context(
            HealthProber(
                self.compute, self.fleet.endpoint_for_instance, time_scale=options.time_scale
            )
        )
        kubelet = KubeletEmulator(self.kube, self.fleet, time_scale=options.time_scale).start()
        stack.callback(kubelet.close)
        self.service_controller = ServiceControllerEmulator(
            self.kube,
            self.compute,
            self.compute_server.url,
            spec.project,
            spec.region,
            provider=self.provider,
        )
        stack.callback(self.service_controller.close)
        if self.provider is not None:
            self._made_before_handover(self.service_controller)
        self.service_controller.start()
        if options.data_path:  # after the first pass: the load balancers exist
            self.data_path = stack.enter_context(
                SandboxDataPath(
                    self.kube,
                    self.compute,
                    project=spec.project,
                    zone=spec.zone,
                    keep_established=options.data_path_keep_established,
                )
            )

    def _made_before_handover(self, controller: ServiceControllerEmulator) -> None:
        """The controllers' first pass, operations completing at once; then the journal is
        cleared: what they made was there before anyone looked."""
        latency = self.compute.operation_latency
        self.compute.operation_latency = 0
        try:
            controller.sync()
        finally:
            self.compute.operation_latency = latency
        self.compute.clear_journal()

    def close(self) -> None:
        self._stack.close()

    # -- the cloud provider's world ---------------------------------------------------------

    @property
    def cloud_provider(self) -> str:
        """The profile: "legacy" or "current" (SandboxSpec.cloud_provider)."""
        return self.spec.cloud_provider

    @property
    def cloud_provider_uid(self) -> str | None:
        """The cluster uid in kube-system/ingress-uid (current profile); None in legacy."""
        return None if self.provider is None else self.provider.cluster_id

    @property
    def node_health_check_name(self) -> str | None:
        """The nodes check every Cluster pool gets, k8s-<uid>-node; None in legacy."""
        return None if self.provider is None else self.provider.nodes_check

    @property
    def node_health_check_firewall_name(self) -> str | None:
        """Its firewall, k8s-<uid>-node-http-hc; None in legacy."""
        return None if self.provider is None else self.provider.nodes_check_firewall

    @property
    def recreations(self) -> list[Recreation]:
        """Pools and rules the service controller recreated for a traffic policy change."""
        return [] if self.service_controller is None else self.service_controller.recreations

    @property
    def deleted_pools(self) -> list[str]:
        """Pools the service controller deleted with their Service, in order."""
        return [] if self.service_controller is None else self.service_controller.deleted_pools

    def delete_vm(self, node: str) -> None:
        """The node's VM is deleted, as the autoscaler does through the cloud provider before
        the Node object goes (lbhc.sandbox.autoscaler): its kube-proxy stops answering health
        checks, and its NodePorts stop answering connections (dropped, with the data path)."""
        if self.fleet is not None:
            self.fleet.vm_gone(node)
        if self.data_path is not None:
            self.data_path.vanish(node)

    def load_balancer_name(self, namespace: str, name: str) -> str:
        """The Service's load balancer name (its pool, its rule, a Local one's check)."""
        obj = self.kube.get("Service", namespace, name)
        if obj is None:
            raise KeyError(f"Service {namespace}/{name} does not exist")
        return upstream.load_balancer_name(str(obj["metadata"]["uid"]))

    def set_traffic_policy(self, namespace: str, name: str, policy: str) -> None:
        """Switch a Service's externalTrafficPolicy as `kubectl patch` would; the kube-apiserver
        fake allocates its healthCheckNodePort for Local and clears it for Cluster."""
        if policy not in ("Cluster", "Local"):
            raise ValueError(f"traffic policy: got {policy!r}; expected 'Cluster' or 'Local'")
        self.kube.patch("Service", namespace, name, {"spec": {"externalTrafficPolicy": policy}})

    # -- how to reach it ------------------------------------------------------------------------

    @property
    def compute_url(self) -> str:
        assert self.compute_server is not None, "start() the sandbox first"
        return self.compute_server.url

    def lbhc_flags(self) -> list[str]:
        """The flags every lbhc command needs to talk to this sandbox."""
        return [
            "--kubeconfig",
            str(self.kubeconfig),
            "--project",
            self.spec.project,
            "--region",
            self.spec.region,
            "--node-tags",
            NODE_TAG,
            "--gce-endpoint",
            self.compute_url,
        ]

    def _profile_line(self) -> str:
        if self.cloud_provider_uid is None:
            return "legacy (pools made without health checks)"
        return (
            f"current (cluster uid {self.cloud_provider_uid} in kube-system/ingress-uid; "
            f"Cluster pools carry {self.node_health_check_name})"
        )

    def _profile_tries(self) -> list[str]:
        if self.cloud_provider_uid is None:
            return []
        return [
            f"  kubectl --kubeconfig {self.kubeconfig} get cm -n kube-system ingress-uid -o yaml"
        ]

    def usage(self) -> str:
        flags = " ".join(self.lbhc_flags())
        kubeconfig = self.kubeconfig
        return "\n".join(
            [
                f"kube-apiserver fake: {self.kube_server.url if self.kube_server else '?'}",
                f"Compute fake:        {self.compute_url} (project {self.spec.project}, "
                f"region {self.spec.region})",
                f"kubeconfig:          {kubeconfig}",
                f"cluster:             {self.spec.nodes} nodes, {self.spec.service_count} "
                f"LoadBalancer Services in namespace {self.spec.namespace}",
                f"kube-proxy health:   {len(self.fleet.endpoints()) if self.fleet else 0} "
                f"emulated servers; health checking time scale {self.options.time_scale}",
                f"cloud provider:      {self._profile_line()}",
                "",
                "Try:",
                f"  kubectl --kubeconfig {kubeconfig} get nodes,services -A",
                *self._profile_tries(),
                f"  lbhc plan {flags}",
                f"  lbhc run --leader-elect=false --http-address 127.0.0.1:0 {flags}",
                f"  lbhc status --lb-health {flags}",
                f"  kubectl --kubeconfig {kubeconfig} taint node gke-sandbox-default-pool-1 "
                "ToBeDeletedByClusterAutoscaler=1:NoSchedule",
                "",
                "Ctrl-C stops the sandbox.",
            ]
        )
