"""Load balancer IPs for the emulated controllers, standing in for the address reservations
upstream holds while it remakes a forwarding rule (cloud-provider-gcp
providers/gce/gce_address_manager.go, ingress-gce pkg/l4/address/manager.go HoldAddress):
one book for every emulated controller, so two never hand out the same IP."""

from __future__ import annotations

from typing import Any

from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.seed import lb_ip


class AddressBook:
    def __init__(self, compute: ComputeFake, project: str, region: str) -> None:
        self._compute, self._project, self._region = compute, project, region
        self._held: dict[str, str] = {}  # forwarding rule name -> IP kept while it is down

    def ip_for(self, name: str, rule: dict[str, Any] | None, published: tuple[str, ...]) -> str:
        """The rule's IP; else the one held for it; else the first IP the Service's status
        publishes that no rule uses (a static address would keep it); else the first free
        one. Held until `release`."""
        used = {str(r.get("IPAddress")) for r in self._rules().values()}
        if rule is not None:
            ip = str(rule["IPAddress"])
        elif name in self._held:
            ip = self._held[name]
        else:
            taken = used | set(self._held.values())
            free = [p for p in published if p not in taken]
            spare = (lb_ip(i) for i in range(len(taken) + 1) if lb_ip(i) not in taken)
            ip = free[0] if free else next(spare)
        self._held[name] = ip
        return ip

    def release(self, name: str) -> None:
        self._held.pop(name, None)

    def _rules(self) -> dict[str, dict[str, Any]]:
        return self._compute.forwarding_rules(self._project, self._region)
