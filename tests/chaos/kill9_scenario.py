"""What one kill -9 trial starts from: a cluster and a cloud that need a seeded mix of work
(create, repair, attach, replace, detach, garbage collection), plus foreign resources lbhc
must never touch. Pure data: kill9_world.py puts it into the fakes."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Phase = Literal["ensure", "attach", "replace", "detach", "delete"]
PHASES: tuple[Phase, ...] = ("ensure", "attach", "replace", "detach", "delete")
State = Literal["absent", "ok", "drifted"]


@dataclass(frozen=True)
class Scenario:
    check: State  # our shared check, before the trial
    firewall: State
    attach: int  # Cluster Services whose pools carry no check yet
    attached: int  # Cluster Services whose pools already carry ours: nothing to do
    foreign_checked: int  # Cluster Services whose pools carry someone else's check
    takeover: bool  # health_check_mode: takeover (else coexist)
    to_local: int  # Services flipped to Local whose pools still carry ours
    local_own: int  # Local Services whose pools carry their own per-service check
    orphan: bool  # a pool carrying our check that no Service of this cluster claims
    check_drift: str = "requestPath"  # which field was changed by hand
    firewall_drift: str = "destinationRanges"

    @property
    def eligible(self) -> bool:
        """Some Cluster pool carries lbhc's check or needs it: the shared pair must exist. In
        coexist mode a pool carrying another check does not need it."""
        return self.attach + self.attached + self.replaced > 0

    @property
    def replaced(self) -> int:
        return self.foreign_checked if self.takeover else 0

    def phase_sizes(self) -> dict[Phase, int]:
        """Mutations per executor step of one uninterrupted apply, in apply order. Attaches
        and replacements (remove + add) share one concurrent step."""
        if self.eligible:
            # A takeover is recorded in the check first: an update, unless it is created.
            ensure = (self.check != "ok" or self.replaced > 0) + (self.firewall != "ok")
            delete = 0
        else:
            ensure = 0
            delete = (self.check != "absent") + (self.firewall != "absent")
        return {
            "ensure": ensure,
            "attach": self.attach + 2 * self.replaced,
            "detach": self.to_local,
            "delete": delete,
        }

    def mutations_in(self, phase: Phase) -> range:
        """1-based positions of `phase`'s mutations in the apply ("replace" is in "attach")."""
        start = 1
        for name, size in self.phase_sizes().items():
            if name == ("attach" if phase == "replace" else phase):
                return range(start, start + size)
            start += size
        raise ValueError(phase)

    @property
    def total_mutations(self) -> int:
        return sum(self.phase_sizes().values())


def _state(rng: random.Random, *choices: State) -> State:
    return rng.choice(choices)


def build(seed: int, phase: Phase) -> Scenario:
    """A seeded scenario with work in `phase` (so a kill can land there)."""
    rng = random.Random(seed)
    drifts = {
        "check_drift": rng.choice(("requestPath", "port", "checkIntervalSec")),
        "firewall_drift": rng.choice(("destinationRanges", "sourceRanges", "allowed")),
    }
    local_own = rng.randint(0, 1)
    if phase == "delete":  # garbage collection: no Cluster Service is left
        check = _state(rng, "ok", "ok", "absent")  # absent: an earlier GC got this far
        return Scenario(
            check=check,
            firewall="ok",
            attach=0,
            attached=0,
            foreign_checked=0,
            takeover=rng.random() < 0.5,
            to_local=0 if check == "absent" else rng.randint(0, 2),
            local_own=local_own,
            orphan=False,  # it would hold GC back for good (tested by the planner's suite)
            **drifts,
        )
    if phase == "detach":
        gc = rng.random() < 0.5
        return Scenario(
            check="ok",
            firewall="ok",
            attach=0 if gc else rng.randint(0, 1),
            attached=0 if gc else rng.randint(1, 2),
            foreign_checked=0 if gc else rng.randint(0, 1),
            takeover=False,
            to_local=rng.randint(2, 4),
            local_own=local_own,
            orphan=not gc,
            **drifts,
        )
    if phase == "replace":
        check = _state(rng, "ok", "absent")
        present = check != "absent"
        return Scenario(
            check=check,
            firewall=check,
            attach=0,
            attached=rng.randint(0, 1) if present else 0,
            foreign_checked=rng.randint(1, 2),
            takeover=True,
            to_local=rng.randint(0, 1) if present else 0,
            local_own=local_own,
            orphan=present,
            **drifts,
        )
    if phase == "ensure":
        check = _state(rng, "absent", "drifted", "ok")
        firewall = _state(rng, "absent", "drifted") if check == "ok" else _state(rng, *_STATES)
    else:  # attach
        check = _state(rng, "absent", "ok")
        firewall = check
    present = check != "absent"
    return Scenario(
        check=check,
        firewall=firewall,
        attach=rng.randint(1, 3) if phase == "ensure" else rng.randint(2, 5),
        attached=rng.randint(0, 2) if present else 0,
        foreign_checked=rng.randint(0, 1),
        takeover=rng.random() < 0.5,
        to_local=rng.randint(0, 2) if present else 0,
        local_own=local_own,
        orphan=present,
        **drifts,
    )


_STATES: tuple[State, ...] = ("absent", "ok", "drifted")
