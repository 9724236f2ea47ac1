"""What becomes of an established flow when its load balancer changes under it: a pure
function, so each rule can be judged from a table (DataPath applies it on every poll).

- Its instance is still a member (and HEALTHY, or `keep_established`): it stays ("keep").
  Whether established flows stay on a member turned UNHEALTHY is a parameter because GCE does
  not document it for target pools (their page's "all traffic for a given connection stays on
  the same instance as long as the instance stays healthy" hints that they move), while for
  backend services TCP connections persist on unhealthy backends by default
  (connectionPersistenceOnUnhealthyBackends DEFAULT_FOR_PROTOCOL,
  https://cloud.google.com/load-balancing/docs/network/ext-netlb-traffic-distribution).
- Its instance left the load balancer (a target pool has no connection draining,
  https://cloud.google.com/load-balancing/docs/target-pools), or turned UNHEALTHY and
  established flows do not stay on unhealthy members: its packets are hashed again among
  the members as a new connection's would be (choice.choose_instance). Landing on its own
  instance again changes nothing ("keep"); landing on another one that can answer, that
  instance has no state for it and answers with a RST ("reset"); landing nowhere, or on a
  member whose node cannot answer, its packets are lost ("drop").
- Its forwarding rule is gone: nothing receives its packets ("drop").

Backend services' connection draining (a removed member keeping its flows for
drainingTimeoutSec) is not modelled: their removed members' flows are re-hashed at once, as a
target pool's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from lbhc.sandbox.datapath.choice import HEALTHY, Flow, choose_instance
from lbhc.sandbox.datapath.frontends import Frontend

Verdict = Literal["keep", "drop", "reset"]


def established_flow(
    flow: Flow,
    instance: str,
    frontend: Frontend | None,
    *,
    keep_established: bool,
    answers: Callable[[str], bool],
) -> Verdict:
    """The verdict for `flow`, established on `instance`, under `frontend` as it is now.
    `answers(instance)`: whether that instance's node would answer at all (a VM that exists,
    a backend for the Service)."""
    if frontend is None:
        return "drop"
    left = instance not in frontend.members
    unhealthy = frontend.health.get(instance) != HEALTHY
    if not left and (keep_established or not unhealthy):
        return "keep"
    chosen = choose_instance(flow, frontend.members, frontend.health, frontend.affinity)
    if chosen == instance:
        return "keep"
    if chosen is None or not answers(chosen):
        return "drop"
    return "reset"
