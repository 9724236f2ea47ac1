"""A backend service's getHealth, read for one node: regionBackendServices.getHealth answers
for every member of one backend group, and a passthrough load balancer's groups are zonal
(instance groups `k8s-ig--<id>`, GCE_VM_IP NEGs), so the node's zone picks the group. Reads of
several nodes in one group within a tick share one call (`BackendCalls`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from lbhc.model.cloud import resource_path
from lbhc.model.lb_health import HealthReading, InstanceHealth
from lbhc.planner.pool_classes import PoolClass

GroupHealth = Mapping[str, tuple[str, ...]]  # instance path -> one state per forwarding rule


def zone_of(url: str) -> str:
    """The zone of a zonal resource's URL or path ("" if it is not zonal)."""
    parts = resource_path(url).split("/")  # projects/P/zones/Z/<collection>/N
    return parts[3] if len(parts) > 3 and parts[2] == "zones" else ""


@dataclass(frozen=True)
class BackendCall:
    backend: str
    group: str  # "" when the backend service has no group in the node's zone


def backend_call(pool_class: PoolClass, backend: str, instance: str) -> BackendCall:
    zone = zone_of(instance)
    group = next((g for b, g in pool_class.groups if b == backend and zone_of(g) == zone), "")
    return BackendCall(backend, group)


@dataclass
class BackendCalls:
    """The answers of one tick, by call; an exception stands for a failed call."""

    answers: dict[BackendCall, GroupHealth | Exception] = field(default_factory=dict)

    def costs(self, call: BackendCall) -> bool:
        """Whether reading it takes a call (and so a read from the budget)."""
        return bool(call.group) and call not in self.answers

    def answer(
        self, call: BackendCall, fetch: Callable[[str, str], GroupHealth]
    ) -> GroupHealth | Exception:
        if call not in self.answers:
            try:
                self.answers[call] = fetch(call.backend, call.group)
            except Exception as exc:  # said in the reading; the next tick tries again
                self.answers[call] = exc
        return self.answers[call]


def reading_of(
    call: BackendCall, node: str, instance: str, answer: GroupHealth | Exception | None, now: float
) -> HealthReading:
    """`answer`: None when the service has no group in the node's zone (no call made)."""
    if not call.group or answer is None:
        return HealthReading(call.backend, node, InstanceHealth.NOT_MEMBER, now)
    if isinstance(answer, Exception):
        return HealthReading(
            call.backend, node, InstanceHealth.UNKNOWN, now, None, str(answer)[:200]
        )
    states = answer.get(resource_path(instance))
    if states is None:  # getHealth lists every member of the group: it is not one
        return HealthReading(call.backend, node, InstanceHealth.NOT_MEMBER, now)
    if not states:
        return HealthReading(call.backend, node, InstanceHealth.UNKNOWN, now, None, "no state")
    healthy = all(s == "HEALTHY" for s in states)
    state = InstanceHealth.HEALTHY if healthy else InstanceHealth.UNHEALTHY
    return HealthReading(call.backend, node, state, now)
