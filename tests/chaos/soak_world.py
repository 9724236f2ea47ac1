"""The soak's world: the whole sandbox (both fakes over HTTP, GCE's prober, one emulated
kube-proxy per node, the kubelet, the cloud provider's service controller) and the real
controller (`lbhc run`'s ControllerApp, leader election on) in a thread."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from lbhc.controller.app import ControllerApp, RunOptions
from lbhc.model.cloud import http_health_check_url
from lbhc.planner.names import cluster_id_from_uid, shared_resource_name
from lbhc.sandbox.compute_fake import ComputeFake, HealthProber
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.kube_proxy import KubeProxyFleet
from lbhc.sandbox.sandbox import NODE_TAG, Sandbox, SandboxOptions
from lbhc.sandbox.seed import KUBE_SYSTEM_UID, SandboxSpec
from lbhc.settings import Settings, load_settings

IDENTITY = "lbhc-soak"  # the controller's Lease identity and GCE client id

# Retry ceilings lbhc hard-codes rather than takes as settings (bounds derive from them):
PASS_BACKOFF_MAX = 60.0  # lbhc/controller/controller.py: a failed pass, Backoff(1, 60)
REFLECTOR_BACKOFF_MAX = 30.0  # lbhc/controller/backoff.py default: a failed list or watch
MACHINE_SLACK = 15.0  # a shared 2-core VM loaded by other suites


@dataclass(frozen=True)
class SoakOptions:
    nodes: int = 4
    services: int = 5
    local_services: int = 1
    # GCE's checker and the kubelet at 0.1x: the default 8 s interval is 0.8 s, timeout 0.1 s.
    time_scale: float = 0.1
    operation_latency: float = 0.05
    # Short, so a pass that withheld removals on a failed GCE list is repaired soon: lbhc
    # retries failed passes at once, but a pass with a gap is not a failure (only a resync
    # or the next event runs it again).
    resync_period: float = 2.0
    lease_duration: float = 3.0
    renew_deadline: float = 2.0
    retry_period: float = 0.25
    cloud_provider: str = "current"  # the sandbox's profile: today's GCE, or "legacy"


class SoakWorld:
    def __init__(self, options: SoakOptions) -> None:
        self.options = options
        spec = SandboxSpec(
            nodes=options.nodes,
            services=options.services,
            local_services=options.local_services,
            cloud_provider=options.cloud_provider,
        )
        self.sandbox = Sandbox(
            SandboxOptions(
                spec=spec,
                time_scale=options.time_scale,
                operation_latency=options.operation_latency,
                kube_proxy_port=0,
            )
        )
        self.spec = spec
        self.cluster_id = cluster_id_from_uid(KUBE_SYSTEM_UID)
        self.check_name = shared_resource_name("k8s-l4-healthcheck", self.cluster_id)
        self.check_url = http_health_check_url(spec.project, self.check_name)
        self.settings: Settings | None = None
        self.app: ControllerApp | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.sandbox.start()
        try:
            self.settings = load_settings(
                project=self.spec.project,
                region=self.spec.region,
                node_tags=NODE_TAG,
                gce_endpoint=self.sandbox.compute_url,
                # Retries within a pass in tenths of seconds: faults are short here.
                gce_backoff_initial_sec=0.05,
                gce_backoff_max_sec=0.5,
            )
        except BaseException:
            self.sandbox.close()
            raise
        return self

    def start_controller(self) -> ControllerApp:
        """After the foreign resources are seeded: the controller must find them there."""
        assert self.settings is not None and self.sandbox.kube_server is not None
        options = self.options
        self.app = ControllerApp(
            self.settings,
            RunOptions(
                leader_elect=True,
                identity=IDENTITY,
                kube_host=self.sandbox.kube_server.url,
                http_address="127.0.0.1:0",
                resync_period=options.resync_period,
                lease_namespace="lbhc-system",
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
                watch_timeout_sec=30,
            ),
        )
        self._thread = threading.Thread(target=self.app.run, name="soak-controller", daemon=True)
        self._thread.start()
        return self.app

    def stop_controller(self) -> None:
        if self.app is not None:
            self.app.stop()
        if self._thread is not None:
            self._thread.join(15)
            assert not self._thread.is_alive(), "the controller did not stop"

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop_controller()
        finally:
            self.sandbox.close()

    # -- parts ----------------------------------------------------------------------------

    @property
    def kube(self) -> KubeFake:
        return self.sandbox.kube

    @property
    def compute(self) -> ComputeFake:
        return self.sandbox.compute

    @property
    def prober(self) -> HealthProber:
        assert self.sandbox.prober is not None
        return self.sandbox.prober

    @property
    def fleet(self) -> KubeProxyFleet:
        assert self.sandbox.fleet is not None
        return self.sandbox.fleet

    @property
    def kube_url(self) -> str:
        assert self.sandbox.kube_server is not None
        return self.sandbox.kube_server.url

    def passes(self) -> int:
        controller = self.app.controller if self.app else None
        return controller.passes if controller else 0

    # -- bounds ---------------------------------------------------------------------------

    def check_timings(self) -> tuple[float, float, int]:
        """(interval, timeout) of the shared check as GCE's emulated checker runs it (time
        scaled), and its healthy threshold: what the black-hole monitor's grace is made of."""
        assert self.settings is not None
        scale = self.options.time_scale
        return (
            self.settings.health_check.check_interval_sec * scale,
            self.settings.health_check.timeout_sec * scale,
            self.settings.health_check.healthy_threshold,
        )

    def converge_bound(self) -> float:
        """How long the cloud may take to reach the desired state once faults are lifted:
        a pass in backoff, a reflector in backoff, a lost Lease re-acquired, a withheld
        removal waiting for the resync, one GCE call's full retry budget, and slack."""
        assert self.settings is not None
        options, settings = self.options, self.settings
        gce_call = settings.gce.max_attempts * settings.gce.backoff_max_sec
        return (
            PASS_BACKOFF_MAX
            + REFLECTOR_BACKOFF_MAX
            + options.lease_duration
            + options.resync_period
            + gce_call
            + MACHINE_SLACK
        )
