"""Optional sampling of GCE's own health checking by the controller
(`controller.lb_health_sample_sec`, off by default): a few serving nodes' getHealth in one
pool carrying a kube-proxy /healthz check, at most once per period. When every one sampled
stays UNHEALTHY for longer than that check's drain bound while kube-proxy is healthy, the
check cannot pass anywhere and the pool fails open: a HealthCheckCannotPass Warning Event,
lbhc_pools_failing_open, an alert."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.gce.lb_health import HealthReader, node_health
from lbhc.model.cloud import CloudSnapshot, http_health_check_url, instance_urls
from lbhc.model.cluster import ClusterSnapshot
from lbhc.planner.config import PlannerConfig
from lbhc.planner.coverage import CLOUD_PROVIDER_DRAIN_BOUND_SEC, drain_bound_seconds
from lbhc.planner.fail_open import fail_open, sampled_pool, serving_nodes
from lbhc.planner.status import StatusReport

log = logging.getLogger(__name__)
SAMPLED_NODES = 5  # a few calls a period, whatever the cluster's size
HEALTH_CHECK_CANNOT_PASS = "HealthCheckCannotPass"


class FailOpenWatch:
    def __init__(
        self,
        gce: HealthReader,
        config: PlannerConfig,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        lease: ObjectRef,
        every_sec: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._gce, self._config, self._metrics = gce, config, metrics
        self._record, self._lease = record, lease
        self._every, self._clock = every_sec, clock
        self._last: float | None = None
        self._since: float | None = None

    def observe(self, cluster: ClusterSnapshot, cloud: CloudSnapshot, report: StatusReport) -> None:
        now = self._clock()
        if self._every <= 0 or (self._last is not None and now - self._last < self._every):
            return
        self._last = now
        sampled = sampled_pool(report)
        serving = set(serving_nodes(report)[:SAMPLED_NODES])
        if sampled is None or not serving:
            self._clear()
            return
        nodes = (n for n in cluster.nodes if n.name in serving)
        instances = instance_urls(nodes, self._config.project, self._config.region)
        failing = fail_open(report, node_health(self._gce, sampled[0], instances, SAMPLED_NODES))
        if failing is None:
            self._clear()
            return
        self._since = self._since if self._since is not None else now
        check = cloud.check_at(http_health_check_url(self._config.project, failing.check))
        bound = drain_bound_seconds(check) if check else CLOUD_PROVIDER_DRAIN_BOUND_SEC
        if now - self._since < bound:
            return  # a check made moments ago starts UNHEALTHY: give it its bound
        self._metrics.pools_failing_open.set(1)
        note = failing.message(now - self._since)
        log.warning("%s", note)
        self._record(EventSpec(self._lease, HEALTH_CHECK_CANNOT_PASS, "Sample", note, "Warning"))

    def _clear(self) -> None:
        self._since = None
        self._metrics.pools_failing_open.set(0)
