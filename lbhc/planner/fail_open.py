"""A check that cannot pass anywhere: every serving node UNHEALTHY in a pool while the nodes'
kube-proxies are healthy. The health checkers are not reaching kube-proxy's port (a firewall
whose target tags or network do not match the nodes, usually), and a target pool whose
instances are all unhealthy fails open: it sends new connections to every node, draining
ones included, which is what the check was there to prevent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lbhc.planner.coverage import KUBE_PROXY_COVERED
from lbhc.planner.drain import DrainState
from lbhc.planner.status import StatusReport

UNHEALTHY = "UNHEALTHY"


@dataclass(frozen=True)
class FailOpen:
    pool: str
    check: str
    nodes: int  # serving nodes, all UNHEALTHY

    def message(self, seconds: float | None = None) -> str:
        lasting = f" for {seconds:.0f} s" if seconds is not None else ""
        return (
            f"every serving node ({self.nodes}) is UNHEALTHY in target pool {self.pool}{lasting} "
            f"although their kube-proxies are healthy: Google's health checkers are not "
            f"reaching kube-proxy through {self.check} (is the firewall's target tag or network "
            "right for these nodes?); a pool whose instances are all unhealthy fails open, "
            "sending new connections to every node, draining ones included"
        )


def sampled_pool(report: StatusReport) -> tuple[str, str] | None:
    """(pool, check) read for GCE's view: the first, by name, carrying a kube-proxy /healthz
    check, whoever owns it; every such pool probes the same port and path."""
    covered = sorted(
        (s.pool, s.check) for s in report.services if s.pool and s.coverage in KUBE_PROXY_COVERED
    )
    return covered[0] if covered else None


def serving_nodes(report: StatusReport) -> list[str]:
    """Nodes the load balancers should find healthy: not marked, not excluded, kube-proxy
    Pod ready (or not judged)."""
    return [
        n.node
        for n in report.nodes
        if n.drain.state is DrainState.SERVING and n.pod_state in ("", "ready")
    ]


def fail_open(report: StatusReport, lb_health: Mapping[str, str]) -> FailOpen | None:
    """When every serving node that GCE was asked about is UNHEALTHY in the sampled pool."""
    sampled = sampled_pool(report)
    if sampled is None or report.kube_proxy.healthy is False:
        return None
    looked = [n for n in serving_nodes(report) if n in lb_health]
    if not looked or any(lb_health[n] != UNHEALTHY for n in looked):
        return None
    return FailOpen(sampled[0], sampled[1], len(looked))
