"""What the data path serves, read from the Compute fake in one pass: every forwarding rule
with its load balancer's members and their health, as GCE's data plane would program it.

- A rule pointing at a target pool (`target`): the pool's `instances`, its sessionAffinity.
- A rule pointing at a regional backend service (`backendService`): the members of each of its
  backends (an instance group's instances, a NEG's endpoints' VMs, as
  regionBackendServices.getHealth lists them), its sessionAffinity. A rule whose backend
  service does not exist (yet) has no member: its traffic is dropped.
- Health is per forwarding rule IP, as GCE probes each rule's IP apart (the fake's prober keeps
  it so), and follows the rule getHealth answers by: a target pool without a check treats
  every instance as HEALTHY; else the fake's health source (the prober), else the state set
  with set_instance_health, else HEALTHY (compute_fake.resources.target_pools and
  backend_health, handle_get_health). It is read in process: no API call, no journal entry.

The rule names its Service in its description ({"kubernetes.io/service-name": "ns/name"} from
the cloud provider, {"networking.gke.io/service-name": ...} from ingress-gce): the data path
hands the connection to that Service's NodePort on the chosen node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.compute_fake.store import HealthSource
from lbhc.sandbox.datapath.choice import AFFINITIES, HEALTHY

TARGET_POOL = "targetPool"
BACKEND_SERVICE = "backendService"
_SERVICE_NAME_KEYS = ("kubernetes.io/service-name", "networking.gke.io/service-name")


@dataclass(frozen=True)
class Frontend:
    """One forwarding rule, as new connections to it are placed."""

    name: str  # the rule's name: its listener's key
    ip: str  # the rule's IPAddress: hashed as the flows' destination
    port: int  # its first port (0 for allPorts): hashed as the flows' destination port
    protocol: str
    lb: str  # the target pool's or backend service's URL ("" when the rule names none)
    kind: str  # TARGET_POOL or BACKEND_SERVICE
    service: str  # "namespace/name" from the rule's description; "" when it names none
    affinity: str = "NONE"
    members: tuple[str, ...] = ()
    health: Mapping[str, str] = field(default_factory=dict)  # member -> HEALTHY | UNHEALTHY


def read_frontends(fake: ComputeFake) -> dict[str, Frontend]:
    """Every TCP forwarding rule of the fake, by name (the first one read wins a name used in
    two projects or regions)."""
    pools = {p["selfLink"]: p for p in fake.all_resources("targetPools")}
    services = {b["selfLink"]: b for b in fake.all_resources("backendServices")}
    source = fake.health_source
    found: dict[str, Frontend] = {}
    for rule in fake.all_resources("forwardingRules"):
        name, ip = str(rule["name"]), str(rule.get("IPAddress") or "")
        if name in found or rule.get("IPProtocol", "TCP") not in ("TCP", "L3_DEFAULT"):
            continue  # the data path relays TCP only
        if rule.get("target"):
            kind, lb_url = TARGET_POOL, str(rule["target"])
            lb = pools.get(lb_url)
            members = list(lb.get("instances") or []) if lb is not None else []
        elif rule.get("backendService"):
            kind, lb_url = BACKEND_SERVICE, str(rule["backendService"])
            lb = services.get(lb_url)
            members = []
            for backend in (lb or {}).get("backends") or []:
                members += fake.group_members(str(backend.get("group") or ""))
        else:
            continue
        unique = tuple(dict.fromkeys(members))
        health = {m: _health(fake, source, lb, kind, m, ip) for m in unique} if lb else {}
        affinity = str((lb or {}).get("sessionAffinity") or "NONE")
        found[name] = Frontend(
            name=name,
            ip=ip,
            port=_first_port(rule),
            protocol="TCP",
            lb=lb_url,
            kind=kind,
            service=_service_of(str(rule.get("description") or "")),
            affinity=affinity if affinity in AFFINITIES else "NONE",
            members=unique,
            health=health,
        )
    return found


def _health(
    fake: ComputeFake,
    source: HealthSource | None,
    lb: dict[str, Any],
    kind: str,
    instance: str,
    ip: str,
) -> str:
    """What getHealth would answer for `instance` at the rule's IP (module docstring)."""
    if kind == TARGET_POOL and not lb.get("healthChecks"):
        return HEALTHY
    state = source(lb, instance, ip or None) if source is not None else None
    return str(state or fake.instance_health_override(instance) or HEALTHY)


def _first_port(rule: Mapping[str, Any]) -> int:
    if rule.get("allPorts"):
        return 0
    first = (rule.get("ports") or [None])[0] or rule.get("portRange")
    try:
        return int(str(first).split("-")[0]) if first else 0
    except ValueError:
        return 0


def _service_of(description: str) -> str:
    try:
        parsed = json.loads(description) if description else {}
    except ValueError:
        return ""
    if not isinstance(parsed, dict):
        return ""
    return next((str(parsed[k]) for k in _SERVICE_NAME_KEYS if parsed.get(k)), "")
