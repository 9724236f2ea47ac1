"""Once per start, on the replica that reads GCE: are gce.node_tags the nodes' own? A wrong
tag otherwise shows only later and indirectly (every pool relying on lbhc's firewall fails
open, HealthCheckCannotPass); three reads of the first nodes' VMs say it at once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from lbhc.controller.events import EventSpec, ObjectRef
from lbhc.controller.metrics import Metrics
from lbhc.model.cluster import ClusterSnapshot
from lbhc.planner.config import PlannerConfig
from lbhc.planner.node_tags import node_tag_mismatch, nodes_to_sample

log = logging.getLogger(__name__)


class InstanceTagReader(Protocol):
    def instance_tags(self, instance_url: str) -> frozenset[str] | None: ...


class NodeTagCheck:
    def __init__(
        self,
        gce: InstanceTagReader,
        config: PlannerConfig,
        metrics: Metrics,
        record: Callable[[EventSpec], None],
        lease: ObjectRef,
    ) -> None:
        self._gce, self._config, self._metrics = gce, config, metrics
        self._record, self._lease = record, lease
        self.done = False

    def check(self, cluster: ClusterSnapshot) -> None:
        """After a pass, until one check completes. Never raises: it informs, and a failed
        read only means trying again after the next pass."""
        if self.done or not cluster.complete or not self._config.node_tags:
            return
        sample = nodes_to_sample(cluster.nodes, self._config.project, self._config.region)
        if not sample:
            return  # no node yet: nothing to compare
        carried: dict[str, frozenset[str]] = {}
        for node, url in sample.items():
            try:
                tags = self._gce.instance_tags(url)
            except Exception as exc:  # a permission or a blip: said once, tried again later
                log.info("node-tag check: cannot read the VM of node %s yet (%s)", node, exc)
                return
            if tags is not None:  # a VM already gone proves nothing
                carried[node] = tags
        self.done = True
        mismatch = node_tag_mismatch(carried, self._config.node_tags)
        self._metrics.node_tags_unmatched.set(1 if mismatch else 0)
        if mismatch is None:
            log.info("node tags %s found on the nodes' VMs", ", ".join(self._config.node_tags))
            return
        log.warning("%s", mismatch.message())
        self._record(
            EventSpec(self._lease, "NodeTagsMatchNoNode", "Check", mismatch.message(), "Warning")
        )
