"""Each node's drain verdict, from every load balancer of the cluster: target pools (with what
GCE's getHealth showed of marked nodes) and backend-service load balancers (with their
instance groups as read, or ingress-gce's node selection). Serving nodes, nearly all of them,
are judged without looking at any load balancer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property

from lbhc.model.backend import BackendView
from lbhc.model.cloud import instance_url, resource_path
from lbhc.model.cluster import Node
from lbhc.model.lb_health import HealthReading, LbHealthView
from lbhc.planner.backend_drain import BackendDrain, BackendMembership, backend_membership
from lbhc.planner.capabilities import KubeProxyFacts
from lbhc.planner.config import PlannerConfig
from lbhc.planner.drain import (
    Drainability,
    DrainState,
    NodeDrain,
    marked_at,
    marked_epoch,
    node_drain,
)
from lbhc.planner.drain_evidence import membership, newest_in_lb, verify_drain
from lbhc.planner.lb_views import LbDrainView, LbKind, LbRemoval, PoolDrainKind
from lbhc.planner.listing import first_few
from lbhc.planner.nodes import is_excluded_from_load_balancers, is_leaving
from lbhc.planner.pool_classes import ClassVerdict, PoolClass, with_failing_open


def _read_since(lb: LbHealthView, backend: str, node: str, since: float | None) -> bool:
    """GCE answered for the node there after it was marked: only such an answer can stand for
    or against a derivation of what happened since (the NEG controller's resync)."""
    reading = newest_in_lb(backend, node, lb, lb.max_age)
    return reading is not None and since is not None and reading.at >= since


class DrainJudge:
    def __init__(
        self,
        pools: tuple[LbDrainView, ...] | None,
        classes: tuple[PoolClass, ...],
        verdicts: tuple[ClassVerdict, ...],
        lb: LbHealthView,
        backends: Sequence[BackendDrain],
        backend_view: BackendView,
        config: PlannerConfig,
        backends_missing: str = "",
    ) -> None:
        """`pools`: every target pool's view, failing-open ones marked (None: not read);
        `backends_missing`: why backend services could not be read, when some Service may
        have one ("" otherwise)."""
        self._pools, self._classes, self._verdicts, self._lb = pools, classes, verdicts, lb
        # A failing-open class drains nothing, whatever kind its load balancers are.
        views = with_failing_open([b.view for b in backends], verdicts)
        self._backends = tuple(replace(b, view=v) for b, v in zip(backends, views, strict=True))
        self._by_name = {b.view.name: b for b in self._backends}
        self._backend_view = backend_view
        self._project, self._zone = config.project, f"{config.region}-a"
        self._backends_missing = backends_missing

    def judge(self, node: Node, facts: KubeProxyFacts) -> NodeDrain:
        pools = self._pools
        if pools is None or is_excluded_from_load_balancers(node) or not is_leaving(node):
            return node_drain(node, facts, pools)  # the common case, judged once
        lb = self._lb
        backends = self._membership(node)  # instance groups as read, NEGs derived
        derived = {r.view.name: r for r in backends.taken_out if r.derived}
        # What GCE's getHealth showed of it, in pools and backend services alike; where it
        # showed a NEG's group, that replaces the derivation, whichever way it goes.
        candidates = (*pools, *backends.held, *(r.view for r in derived.values()))
        held = membership(node.name, candidates, self._classes, lb, lb.max_age)
        since = marked_epoch(marked_at(node))
        unread = {name for name in derived if not _read_since(lb, name, node.name, since)}
        held = replace(held, held=tuple(v for v in held.held if v.name not in unread))
        out = (
            *(r for r in backends.taken_out if not r.derived),
            *(derived[name] for name in sorted(unread)),
            *self._shown_out(held.cut_backends),
        )
        drain = node_drain(node, facts, held.held, out)
        backends = BackendMembership(
            tuple(v for v in held.held if v.lb is LbKind.BACKEND_SERVICE), out
        )
        drain = verify_drain(
            drain, node.name, held, self._classes, self._verdicts, lb, lb.max_age, backends
        )
        return self._with_backends_missing(drain)

    def drainability(self, node: Node, facts: KubeProxyFacts) -> Drainability:
        """Whether a load balancer holding the node would drain it, were it marked for
        deletion now: what holding its deletion needs (planner/hold). Every node not
        excluded is taken to be in every load balancer, as for a serving node's verdict."""
        if is_excluded_from_load_balancers(node):
            return Drainability(False, "labelled exclude-from-external-load-balancers")
        if self._pools is None:
            return Drainability(None, "the target pools could not be read")
        caps, version = facts.capabilities, facts.version.display()
        if caps.serves_healthz is False or not caps.drains_when_deleted:
            known = "does not" if caps.drains_when_deleted is False else "may not"
            why = f": {facts.drain_reason}" if facts.drain_reason else ""
            return Drainability(
                False, f"kube-proxy {version} {known} fail /healthz for a node being deleted{why}"
            )
        return self._by_load_balancers

    @cached_property
    def _by_load_balancers(self) -> Drainability:
        """What every load balancer does for a node marked now: the same for every node not
        excluded, so judged once per pass, not once per node (pools x nodes at scale)."""
        views = (*(self._pools or ()), *(b.view for b in self._backends))
        draining = [v for v in views if v.kind is PoolDrainKind.HEALTHZ]
        if draining:
            bound = max((v.bound_seconds or 0 for v in draining), default=0) or None
            return Drainability(True, f"{len(draining)} load balancer(s) drain it", bound)
        if self._backends_missing:  # one of those unread may hold and drain it
            why = f"backend services could not be read ({self._backends_missing})"
            return Drainability(None, why)
        if not views:
            return Drainability(False, "it is in no load balancer")
        listed = first_few([f"{v.name}: {v.why_not()}" for v in views], 2, "; ")
        return Drainability(False, f"no load balancer holding it drains it ({listed})")

    def _shown_out(self, cut: Sequence[HealthReading]) -> tuple[LbRemoval, ...]:
        """Backend services whose getHealth showed the node out of the group of its zone."""
        found = (self._by_name.get(r.pool) for r in cut)
        return tuple(
            LbRemoval(
                b.view,
                "GCE's getHealth does not list it in its group",
                draining_timeout_sec=b.draining_timeout_sec,
            )
            for b in found
            if b is not None
        )

    def _membership(self, node: Node) -> BackendMembership:
        if not self._backends:
            return BackendMembership((), ())
        instance = resource_path(instance_url(node, self._project, self._zone))
        return backend_membership(node, instance, self._backends, self._backend_view)

    def _with_backends_missing(self, drain: NodeDrain) -> NodeDrain:
        """Nothing holding the node is not the same as nothing known to: with backend
        services unread, "in no load balancer" is unknown, and nothing is verified."""
        missing = self._backends_missing
        if not missing or not drain.marked_for_deletion:
            return drain
        why = f"backend services could not be read ({missing})"
        if drain.state is DrainState.NOT_APPLICABLE:
            return NodeDrain(
                DrainState.UNKNOWN,
                f"marked for deletion; no target pool holds it, but {why}, so whether a "
                "backend-service load balancer does is unknown",
                drain.marked_at,
                marked_for_deletion=True,
            )
        return replace(drain, verified=False, evidence=f"not verified ({why})")
