"""Both fakes over HTTP and real controllers in threads: the integration tests' world."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from lbhc.controller.app import ControllerApp, RunOptions
from lbhc.model.cloud import http_health_check_url
from lbhc.planner.names import cluster_id_from_uid, shared_resource_name
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from lbhc.settings import Settings, load_settings
from tests.builders import CLOUD_PROVIDER_UID, KUBE_SYSTEM_UID, PROJECT, REGION
from tests.builders import kube as kube_builders
from tests.worlds import add_load_balanced_service, compute_fake, seed_cluster

NAME = shared_resource_name("k8s-l4-healthcheck", cluster_id_from_uid(KUBE_SYSTEM_UID))
URL = http_health_check_url(PROJECT, NAME)
# Every controller here retries GCE fast: tests exercise retries, not wall-clock patience.
FAST_RETRIES: dict[str, Any] = {"gce_backoff_initial_sec": 0.05, "gce_backoff_max_sec": 0.2}


def node_obj(name: str, kubelet: str = "v1.31.4") -> dict[str, Any]:
    return kube_builders.node(name, kubelet=kubelet, kube_proxy_field="")


@dataclass
class World:
    compute: ComputeFake
    compute_url: str
    kube: KubeFake
    kube_server: KubeFakeServer
    apps: list[ControllerApp] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def add_service(self, name: str, namespace: str = "default", policy: str = "Cluster") -> str:
        """The Service in the API and its LB in GCE, as the cloud provider would make it."""
        obj = kube_builders.service(name, namespace=namespace, policy=policy)
        return add_load_balanced_service(self.kube, self.compute, obj)

    def events(self, reason: str) -> list[dict[str, Any]]:
        """The Events recorded with this reason."""
        return [e for e in self.kube.objects("Event") if e.get("reason") == reason]

    def pool_checks(self, pool: str) -> list[str]:
        return list(self.compute.target_pools(PROJECT, REGION)[pool].get("healthChecks", []))

    def attached(self, pool: str) -> bool:
        return self.pool_checks(pool) == [URL]

    def settings(self, overrides: dict[str, Any] | None = None) -> Settings:
        """lbhc's settings for a controller in this world (fast GCE retries), `overrides` on
        top."""
        defaults: dict[str, Any] = {
            "project": PROJECT,
            "region": REGION,
            "node_tags": NODE_TAG,
            "gce_endpoint": self.compute_url,
            **FAST_RETRIES,
        }
        return load_settings(**{**defaults, **(overrides or {})})

    def start(
        self,
        identity: str = "replica-a",
        settings: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> ControllerApp:
        """`settings` override lbhc's settings; other keywords override RunOptions."""
        the_settings = self.settings(settings)
        options = RunOptions(
            leader_elect=False,
            identity=identity,
            kube_host=self.kube_server.url,
            http_address="127.0.0.1:0",
            resync_period=30.0,
            lease_namespace="lbhc-system",
            lease_duration=3.0,
            renew_deadline=2.0,
            retry_period=0.25,
            watch_timeout_sec=30,
        )
        app = ControllerApp(the_settings, replace(options, **overrides))
        thread = threading.Thread(target=app.run, name=f"controller-{identity}", daemon=True)
        thread.start()
        self.apps.append(app)
        self.threads.append(thread)
        return app

    def stop(self, app: ControllerApp) -> None:
        app.stop()
        thread = self.threads[self.apps.index(app)]
        thread.join(timeout=15)
        assert not thread.is_alive(), "controller did not stop"

    def mutations(self) -> list[Any]:
        return self.compute.mutating_requests()


NODE_TAG = "gke-node"


@contextmanager
def world(operation_latency: float = 0.0) -> Iterator[World]:
    compute = compute_fake(PROJECT, operation_latency)
    # The nodes are pool instance URLs, not seeded instances: they carry the node tag, as GKE
    # nodes do, so a health prober's firewall check sees lbhc's firewall apply to them.
    compute.default_instance_tags = (NODE_TAG,)
    kube = seed_cluster(
        KubeFake(),
        kube_system_uid=KUBE_SYSTEM_UID,
        namespaces=("lbhc-system",),
        cloud_provider_uid=CLOUD_PROVIDER_UID,
        nodes=[node_obj(f"node-{i}") for i in range(3)],
    )
    with ComputeFakeServer(compute) as compute_server, KubeFakeServer(kube) as kube_server:
        w = World(compute, compute_server.url, kube, kube_server)
        try:
            yield w
        finally:
            for app in list(w.apps):
                app.stop()
            for thread in w.threads:
                thread.join(timeout=15)
