"""Evidence that the nodes answer a check's port, read from GCE only when the plan asks for it.

lbhc makes its firewall for pools whose probes no rule admits only once something shows the
nodes answer the port (planner/probe_firewall): turning health checking on for a pool that
was failing open must not take every node out of it. The plan names a few pools whose probes
are admitted (Plan.evidence_wanted); GCE's own health checking of a few serving nodes there
(targetPools.getHealth, one call per node) is that evidence when any is HEALTHY. The
controller's own view of GCE (controller/lb_verifier) usually has such a reading already, and
the planner takes it (planner/probe_firewall port_evidence); these few reads are made only
when it has none while that firewall waits, and at most once a minute in the controller."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from lbhc.gce.lb_health import HealthReader, node_health
from lbhc.model.cloud import CloudSnapshot, instance_urls
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Plan
from lbhc.planner.config import PlannerConfig
from lbhc.planner.nodes import is_being_deleted, is_excluded_from_load_balancers
from lbhc.planner.planner import plan as make_plan

SAMPLED_NODES = 3
HEALTHY = "HEALTHY"


def read_evidence(
    gce: HealthReader, pools: tuple[str, ...], cluster: ClusterSnapshot, config: PlannerConfig
) -> str:
    """ "" unless GCE calls a serving node HEALTHY in one of `pools` (same check port)."""
    serving = [
        n
        for n in cluster.nodes
        if not is_being_deleted(n) and not is_excluded_from_load_balancers(n)
    ][:SAMPLED_NODES]
    if not serving:
        return ""
    instances = instance_urls(serving, config.project, config.region)
    for pool in pools:
        states = node_health(gce, pool, instances, SAMPLED_NODES)
        healthy = sum(1 for state in states.values() if state == HEALTHY)
        if healthy:
            return (
                f"GCE's getHealth calls {healthy} of {len(states)} sampled node(s) HEALTHY in "
                f"target pool {pool}, whose probes are admitted"
            )
    return ""


class EvidencePlanner:
    """plan(), then, when the plan waits on evidence, read it and plan again. `min_interval`
    spaces the reads out (0 for one-shot commands, which read once)."""

    def __init__(
        self,
        gce: HealthReader,
        config: PlannerConfig,
        min_interval: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._gce, self._config = gce, config
        self._min_interval, self._clock = min_interval, clock
        self._last: float | None = None
        self._found: dict[int, str] = {}

    def plan(self, cluster: ClusterSnapshot, cloud: CloudSnapshot) -> tuple[Plan, CloudSnapshot]:
        """The plan and the cloud it was made from (with the evidence, if read)."""
        if self._found:
            cloud = dataclasses.replace(cloud, port_evidence={**cloud.port_evidence, **self._found})
        the_plan = make_plan(cluster, cloud, self._config)
        if not the_plan.evidence_wanted:
            return the_plan, cloud
        now = self._clock()
        if self._last is not None and now - self._last < self._min_interval:
            return the_plan, cloud
        self._last = now
        evidence = read_evidence(self._gce, the_plan.evidence_wanted, cluster, self._config)
        if not evidence:
            return the_plan, cloud
        self._found[self._config.port] = evidence
        cloud = dataclasses.replace(
            cloud, port_evidence={**cloud.port_evidence, self._config.port: evidence}
        )
        return make_plan(cluster, cloud, self._config), cloud
