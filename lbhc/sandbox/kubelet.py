"""The kubelet's part for kube-proxy Pods: run each Pod's readiness probe against its node's
emulated health server and write the Ready condition, so the kube-apiserver fake shows what a
real cluster would (a /healthz readiness probe turns unready on a draining node; /livez
does not)."""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

from lbhc.probe.health_port import get_status
from lbhc.sandbox.kube_fake import KubeFake
from lbhc.sandbox.kube_proxy import KubeProxyFleet

log = logging.getLogger(__name__)
_DEFAULT_PERIOD_SEC, _DEFAULT_FAILURES = 10, 3  # the kubelet's defaults


class KubeletEmulator:
    """Probes every `period_sec x time_scale`; a Pod turns unready after `failureThreshold`
    consecutive failures and ready again after one success, as the kubelet does."""

    def __init__(
        self,
        kube: KubeFake,
        fleet: KubeProxyFleet,
        *,
        time_scale: float = 1.0,
        namespace: str = "kube-system",
        timeout: float = 1.0,
    ) -> None:
        self._kube, self._fleet = kube, fleet
        self._scale, self._namespace, self._timeout = time_scale, namespace, timeout
        self._failures: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet-emulator", daemon=True)

    def start(self) -> KubeletEmulator:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(_DEFAULT_PERIOD_SEC * self._scale):
            try:
                self.probe_all()
            except Exception:  # a sandbox helper must not die silently mid-demo
                log.exception("kubelet emulator pass failed")

    def probe_all(self) -> None:
        for pod in self._kube.objects("Pod"):
            if pod["metadata"].get("namespace") == self._namespace:
                self._probe(pod)

    def _probe(self, pod: dict[str, Any]) -> None:
        containers = pod.get("spec", {}).get("containers") or []
        probe = (containers[0].get("readinessProbe") or {}) if containers else {}
        path = (probe.get("httpGet") or {}).get("path")
        node = pod.get("spec", {}).get("nodeName", "")
        if not path or not node:
            return
        endpoint = self._fleet.endpoint(node)
        ok = endpoint is not None and get_status(*endpoint, path, self._timeout) == 200
        key = pod["metadata"]["name"]
        failures = 0 if ok else self._failures.get(key, 0) + 1
        self._failures[key] = failures
        threshold = int(probe.get("failureThreshold") or _DEFAULT_FAILURES)
        ready = ok or (failures < threshold and _is_ready(pod))
        if ready != _is_ready(pod):
            updated = copy.deepcopy(pod)
            updated.setdefault("status", {})["conditions"] = [
                {"type": "Ready", "status": "True" if ready else "False"}
            ]
            self._kube.upsert(updated)


def _is_ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
