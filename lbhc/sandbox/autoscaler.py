"""cluster-autoscaler's scale-down of one empty node, and what follows it, at the sandbox's
time scale:

1. the autoscaler taints the node `ToBeDeletedByClusterAutoscaler` (value: the Unix time),
2. waits `--node-delete-delay-after-taint` (5 s by default),
3. if the Node object it chose carried an annotation prefixed
   `delay-deletion.cluster-autoscaler.kubernetes.io/`, waits for its lister to show none, up to
   `--node-deletion-delay-timeout` (2 minutes by default), and deletes anyway after that,
4. deletes the VM through the cloud provider, with no Kubernetes-side step (cluster-autoscaler
   core/scaledown/actuation: actuator.go deleteNodesAsync, group_deletion_scheduler.go
   prepareNodeForDeletion, delay.go WaitForDelayDeletion, and delete_in_batch.go
   deleteNodesFromCloudProvider, the node group's DeleteNodes);
5. the cloud node lifecycle controller deletes the Node object at its next look once the
   instance no longer exists (k8s.io/cloud-provider controllers/nodelifecycle MonitorNodes,
   every NodeMonitorPeriod, 5 s by default).

Between 4 and 5 the VM is gone while its Node, and so its place in the load balancers, remain:
the window a health check must already have closed."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lbhc.sandbox.kube_fake import KubeFake

TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
DEFAULT_DELETE_DELAY_SEC = 5.0  # --node-delete-delay-after-taint
NODE_MONITOR_PERIOD_SEC = 5.0  # the cloud node lifecycle controller's NodeMonitorPeriod
# cluster-autoscaler core/scaledown/actuation/delay.go DelayDeletionAnnotationPrefix
DELAY_DELETION_PREFIX = "delay-deletion.cluster-autoscaler.kubernetes.io/"
DEFAULT_NODE_DELETION_DELAY_TIMEOUT_SEC = 120.0  # --node-deletion-delay-timeout
DELAY_DELETION_POLL_SEC = 5.0  # WaitForDelayDeletion's wait.Poll interval
_LISTER_HEADERS = {"Accept": "application/json", "User-Agent": "cluster-autoscaler"}


@dataclass(frozen=True)
class ScaleDownTimes:
    """When each step happened (time.monotonic()), and how the delay-deletion wait ended.

    held_until: when the wait for delay-deletion annotations ended (None: there was no wait,
    the chosen Node carried none); hold_timed_out: it ended at --node-deletion-delay-timeout
    with an annotation still there, and the VM was deleted anyway. aborted: the lister's error
    that ended the scale-down, the taint removed, VM and Node kept (vm_deleted and
    node_deleted None)."""

    node: str
    tainted: float
    vm_deleted: float | None
    node_deleted: float | None
    held_until: float | None = None
    hold_timed_out: bool = False
    aborted: str | None = None


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
        node_deletion_delay_timeout: float = DEFAULT_NODE_DELETION_DELAY_TIMEOUT_SEC,
    ) -> None:
        if not 0 < time_scale <= 1:
            raise ValueError(f"time scale: got {time_scale}; expected more than 0, at most 1")
        if node_deletion_delay_timeout < 0:
            raise ValueError(f"node deletion delay timeout: got {node_deletion_delay_timeout}")
        self._kube, self._delete_vm = kube, delete_vm
        self._scale, self._monitor = time_scale, node_monitor_period
        self._hold_timeout = node_deletion_delay_timeout
        self._stop = threading.Event()

    def run(self, node: str, delete_delay: float = DEFAULT_DELETE_DELAY_SEC) -> ScaleDownTimes:
        """Blocks until the Node object is gone or the scale-down is aborted (or stop() is
        called: then raises)."""
        # The object the planner chose comes from the cluster snapshot taken at the start of
        # the loop, before the taint (core/scaledown/planner/planner.go NodesToDelete, then
        # actuator.go StartDeletion); utils/taints AddTaints writes to a copy, so this object,
        # without the taint, is the one WaitForDelayDeletion sees.
        chosen = self._kube.get("Node", None, node) or {}
        tainted = time.monotonic()
        self._kube.taint(node, TO_BE_DELETED_TAINT, str(int(time.time())), "NoSchedule")
        # deleteNodesAsync sleeps the delete delay before anything else; only then does
        # ScheduleDeletion evict (an empty node has nothing to evict) and wait: the two
        # delays add up, they do not overlap.
        self._wait(delete_delay * self._scale)
        held_until, timed_out, error = self._hold(node, chosen)
        if error is not None:
            # prepareNodeForDeletion fails, AbortNodeDeletion ->
            # CleanUpAndRecordFailedScaleDownEvent removes the taint (its error ignored).
            with contextlib.suppress(KeyError):  # the Node may be gone: that was the error
                self._kube.untaint(node, TO_BE_DELETED_TAINT)
            return ScaleDownTimes(node, tainted, None, None, held_until, False, error)
        vm_deleted = time.monotonic()
        self._delete_vm(node)
        # The lifecycle controller's next look: anywhere within one period after the VM went;
        # the whole period is the worst case and the same for every run, so runs compare.
        self._wait(self._monitor * self._scale)
        self._kube.delete("Node", None, node)
        return ScaleDownTimes(node, tainted, vm_deleted, time.monotonic(), held_until, timed_out)

    def stop(self) -> None:
        self._stop.set()

    def _hold(self, node: str, chosen: dict[str, Any]) -> tuple[float | None, bool, str | None]:
        """delay.go WaitForDelayDeletion: (when the wait ended, whether it timed out, the
        lister's error). Only the chosen object decides whether to wait at all; then
        wait.Poll checks the lister after each interval (never at once) and once more when
        the timeout closes its channel. A lister error, or the Node gone, ends it."""
        if self._hold_timeout == 0 or not _delay_deletion_annotated(chosen):
            return None, False, None
        start, interval = time.monotonic(), DELAY_DELETION_POLL_SEC * self._scale
        timeout, tick = self._hold_timeout * self._scale, 1
        while True:
            due = min(tick * interval, timeout)
            self._wait(max(0.0, start + due - time.monotonic()))
            fresh, error = self._lister_get(node)
            if error is not None:
                return time.monotonic(), False, error
            if not _delay_deletion_annotated(fresh):
                return time.monotonic(), False, None
            if due >= timeout:  # wait.ErrWaitTimeout: logged, and the deletion goes on
                return time.monotonic(), True, None
            tick += 1

    def _lister_get(self, node: str) -> tuple[dict[str, Any], str | None]:
        """The autoscaler's node lister, as a GET on the fake apiserver, so that the fake's
        fault plan can fail it; a Node not found is an error too, as in WaitForDelayDeletion."""
        response = self._kube.handle("GET", f"/api/v1/nodes/{node}", _LISTER_HEADERS)
        body: dict[str, Any] = json.loads(response.body or b"{}")
        if response.status != 200:
            return {}, f"failed to get node {node}: {body.get('message', response.status)}"
        return body, None

    def _wait(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise InterruptedError("scale-down stopped")


def _delay_deletion_annotated(node: dict[str, Any]) -> bool:
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return any(key.startswith(DELAY_DELETION_PREFIX) for key in annotations)
