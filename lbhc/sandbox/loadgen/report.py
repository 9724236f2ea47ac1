"""What the load saw: one Attempt per connection, and a LoadReport that counts them.

Outcomes, and why each is its own:
- `completed`: a short connection got a node name back; a long-lived one was still answering
  when the run ended.
- `reset`: the connection was reset (ECONNRESET, or EPIPE/ECONNABORTED on a write after a
  reset): what a connection re-hashed to another node gets.
- `closed`: the peer closed cleanly (EOF) before a whole answer line. Not counted as a reset:
  a relay that turns a backend's reset into a plain close would otherwise go unnoticed, and
  a test of the data path wants to tell the two apart.
- `refused`: ECONNREFUSED; the listener is gone.
- `timed-out`: no connection within connect_timeout_sec, or no answer within
  response_timeout_sec: a backend whose VM was deleted drops everything and never closes.
- `error`: anything else that went wrong on the wire (an answer that is not a node name,
  unsolicited data on a long-lived connection, an OSError such as running out of file
  descriptors). Counted, never raised: one odd connection must not end the run.
- `skipped`: a short connection due while max_in_flight connections were open, or one the
  generator could not start until more than a second after it was due, or until after the
  duration (a stalled machine): not attempted, because queueing it would break the
  concurrency bound, the pacing or the end of the run.
- `stopped`: still in flight when stop() ended the run: not judged either way.

A long-lived connection counts once, with the outcome it ended with; it is not reopened.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Literal

from lbhc.sandbox.loadgen.spec import LoadSpec

Kind = Literal["short", "long"]
Outcome = Literal[
    "completed", "reset", "closed", "refused", "timed-out", "error", "skipped", "stopped"
]
KINDS: tuple[Kind, ...] = ("short", "long")
OUTCOMES: tuple[Outcome, ...] = (
    "completed",
    "reset",
    "closed",
    "refused",
    "timed-out",
    "error",
    "skipped",
    "stopped",
)
# Outcomes that say the data path failed the connection (skipped and stopped do not).
FAILURES: frozenset[Outcome] = frozenset({"reset", "closed", "refused", "timed-out", "error"})


@dataclass(frozen=True, slots=True)
class Attempt:
    """One connection. `started`/`ended` are the generator's clock; for a skipped one both are
    the time it was due. `node` is the last node name the backend answered: for a long-lived
    connection the node it was on, None if it never answered."""

    target: str
    kind: Kind
    started: float
    ended: float
    outcome: Outcome
    node: str | None = None
    # The client's own port once connected (None if it never was): which flow of the load
    # balancer's it was, so the flow log can say which node it was sent to.
    client_port: int | None = None

    @property
    def cut(self) -> bool:
        """A long-lived connection that answered at least once and then broke."""
        return self.kind == "long" and self.node is not None and self.outcome in FAILURES


@dataclass(frozen=True)
class LoadReport:
    """The attempts of one run (or of a run so far: LoadGenerator.snapshot), by start time."""

    spec: LoadSpec
    targets: tuple[str, ...]
    started: float
    ended: float
    attempts: tuple[Attempt, ...]
    stopped_early: bool = False

    def count(
        self, target: str | None = None, kind: Kind | None = None, outcome: Outcome | None = None
    ) -> int:
        """Attempts matching every argument given."""
        return sum(
            1
            for a in self.attempts
            if (target is None or a.target == target)
            and (kind is None or a.kind == kind)
            and (outcome is None or a.outcome == outcome)
        )

    def counts(self) -> dict[str, dict[str, dict[str, int]]]:
        """target -> kind -> outcome -> attempts, every target, kind and outcome present (zeros
        included, so a reader can index without guarding)."""
        seen = Counter((a.target, a.kind, a.outcome) for a in self.attempts)
        return {t: {k: {o: seen[(t, k, o)] for o in OUTCOMES} for k in KINDS} for t in self.targets}

    @property
    def attempted(self) -> int:
        """Connections started (everything but skipped ones)."""
        return sum(1 for a in self.attempts if a.outcome != "skipped")

    @property
    def completed(self) -> int:
        return sum(1 for a in self.attempts if a.outcome == "completed")

    @property
    def failed(self) -> int:
        """Short connections the data path failed: started, not completed, not stopped."""
        return sum(1 for a in self.attempts if a.kind == "short" and a.outcome in FAILURES)

    @property
    def cut(self) -> int:
        """Long-lived connections broken after they were established (had answered)."""
        return sum(1 for a in self.attempts if a.cut)

    @property
    def unestablished(self) -> int:
        """Long-lived connections that failed before their first answer: neither failed
        (that counts short ones) nor cut (they were never up)."""
        return sum(
            1
            for a in self.attempts
            if a.kind == "long" and a.node is None and a.outcome in FAILURES
        )

    @property
    def skipped(self) -> int:
        return sum(1 for a in self.attempts if a.outcome == "skipped")

    @property
    def stopped(self) -> int:
        return sum(1 for a in self.attempts if a.outcome == "stopped")

    def nodes(self) -> dict[str, dict[str, int]]:
        """target -> node -> attempts whose last answer came from that node: how the load
        spread over the nodes behind each target."""
        seen = Counter((a.target, a.node) for a in self.attempts if a.node is not None)
        found: dict[str, dict[str, int]] = {t: {} for t in self.targets}
        for (target, node), n in sorted(seen.items()):
            found[target][node] = n
        return found

    def summary(self) -> dict[str, object]:
        """The report as JSON-able data, without the attempts themselves."""
        return {
            "spec": asdict(self.spec),
            "started": self.started,
            "ended": self.ended,
            "elapsed_sec": round(self.ended - self.started, 3),
            "stopped_early": self.stopped_early,
            "attempted": self.attempted,
            "completed": self.completed,
            "failed": self.failed,
            "cut": self.cut,
            "unestablished": self.unestablished,
            "skipped": self.skipped,
            "stopped": self.stopped,
            "by_target": self.counts(),
            "nodes": self.nodes(),
        }
