"""cluster-autoscaler's scale-down of one empty node, and what follows it, at the sandbox's
time scale:

1. the autoscaler taints the node `ToBeDeletedByClusterAutoscaler` (value: the Unix time),
2. waits `--node-delete-delay-after-taint` (5 s by default), then deletes the VM through the
   cloud provider, with no Kubernetes-side step (cluster-autoscaler
   core/scaledown/actuation: actuator.go, and delete_in_batch.go deleteNodesFromCloudProvider,
   the node group's DeleteNodes);
3. the cloud node lifecycle controller deletes the Node object at its next look once the
   instance no longer exists (k8s.io/cloud-provider controllers/nodelifecycle MonitorNodes,
   every NodeMonitorPeriod, 5 s by default).

Between 2 and 3 the VM is gone while its Node, and so its place in the load balancers, remain:
the window a health check must already have closed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lbhc.sandbox.kube_fake import KubeFake

TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
DEFAULT_DELETE_DELAY_SEC = 5.0  # --node-delete-delay-after-taint
NODE_MONITOR_PERIOD_SEC = 5.0  # the cloud node lifecycle controller's NodeMonitorPeriod


@dataclass(frozen=True)
class ScaleDownTimes:
    """When each step happened (time.monotonic())."""

    node: str
    tainted: float
    vm_deleted: float
    node_deleted: float


class ScaleDown:
    """One node's scale-down, in a thread of its own or blocking (`run`). Real-time delays
    are multiplied by `time_scale`, as the sandbox's health checking is."""

    def __init__(
        self,
        kube: KubeFake,
        delete_vm: Callable[[str], None],
        *,
        time_scale: float = 1.0,
        node_monitor_period: float = NODE_MONITOR_PERIOD_SEC,
    ) -> None:
        if not 0 < time_scale <= 1:
            raise ValueError(f"time scale: got {time_scale}; expected more than 0, at most 1")
        self._kube, self._delete_vm = kube, delete_vm
        self._scale, self._monitor = time_scale, node_monitor_period
        self._stop = threading.Event()

    def run(self, node: str, delete_delay: float = DEFAULT_DELETE_DELAY_SEC) -> ScaleDownTimes:
        """Blocks until the Node object is gone (or stop() is called: then raises)."""
        tainted = time.monotonic()
        self._kube.taint(node, TO_BE_DELETED_TAINT, str(int(time.time())), "NoSchedule")
        self._wait(delete_delay * self._scale)
        vm_deleted = time.monotonic()
        self._delete_vm(node)
        # The lifecycle controller's next look: anywhere within one period after the VM went;
        # the whole period is the worst case and the same for every run, so runs compare.
        self._wait(self._monitor * self._scale)
        self._kube.delete("Node", None, node)
        return ScaleDownTimes(node, tainted, vm_deleted, time.monotonic())

    def stop(self) -> None:
        self._stop.set()

    def _wait(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise InterruptedError("scale-down stopped")
