"""The part of the cloud provider's service controller lbhc lives alongside: a target pool
and forwarding rule for each new LoadBalancer Service, and, when one is deleted, its rule
then its pool removed through the Compute API before the cleanup finalizer is released."""

from __future__ import annotations

import logging
import threading
from typing import Any

import requests

from lbhc.model.cluster import Node, Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.cloud_provider import provision_load_balancers, publish_ingress
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.seed import LB_CLEANUP_FINALIZER

log = logging.getLogger(__name__)


class ServiceControllerEmulator:
    def __init__(
        self,
        kube: KubeFake,
        compute: ComputeFake,
        compute_url: str,
        project: str,
        region: str,
        *,
        period: float = 0.2,
    ) -> None:
        self._kube, self._compute = kube, compute
        self._base = f"{compute_url}/compute/v1/projects/{project}/regions/{region}"
        self._project, self._region, self._period = project, region, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="service-controller", daemon=True)
        self.deleted_pools: list[str] = []

    def start(self) -> ServiceControllerEmulator:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self.sync()
            except Exception:
                log.exception("service controller emulator pass failed")

    def sync(self) -> None:
        pools = self._compute.target_pools(self._project, self._region)
        nodes = [Node.model_validate(n) for n in self._kube.objects("Node")]
        for obj in self._kube.objects("Service"):
            service = Service.model_validate(obj)
            if service.spec.type != "LoadBalancer" or service.spec.load_balancer_class:
                continue
            name = target_pool_name(service.metadata.uid)
            if service.metadata.deletion_timestamp:
                self._delete_load_balancer(name, name in pools)
                self._release(obj)
            elif name not in pools:
                provision_load_balancers(
                    self._compute, self._project, self._region, [service], nodes
                )
                publish_ingress(self._kube, self._compute, self._project, self._region, service)

    def _delete_load_balancer(self, name: str, exists: bool) -> None:
        """Rule first: a pool a rule still points at cannot be deleted."""
        if not exists:
            return
        for collection in ("forwardingRules", "targetPools"):
            response = requests.delete(f"{self._base}/{collection}/{name}", timeout=30)
            if response.status_code == 404:
                continue
            response.raise_for_status()
            self._wait(response.json())
        self.deleted_pools.append(name)

    def _wait(self, operation: dict[str, Any]) -> None:
        while operation.get("status") != "DONE":
            response = requests.post(
                f"{self._base}/operations/{operation['name']}/wait", timeout=60
            )
            response.raise_for_status()
            operation = response.json()
        if operation.get("error"):
            raise RuntimeError(f"operation {operation['name']} failed: {operation['error']}")

    def _release(self, service: dict[str, Any]) -> None:
        finalizers = [
            f for f in service["metadata"].get("finalizers", []) if f != LB_CLEANUP_FINALIZER
        ]
        meta = service["metadata"]
        self._kube.patch(
            "Service",
            meta["namespace"],
            meta["name"],
            {"metadata": {"finalizers": finalizers or None}},
        )
