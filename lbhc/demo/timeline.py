"""The demo's readable timeline and its summary (text, or JSON for machines and tests)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from lbhc.demo.connections import ConnectionRun


@dataclass
class StepResult:
    name: str
    ok: bool = False
    seconds: float = 0.0
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name, "ok": self.ok, "seconds": round(self.seconds, 3)}
        if self.error:
            body["error"] = self.error
        return body


@dataclass
class DemoSummary:
    converged: bool = False
    drain_seconds: float | None = None
    drain_bound_seconds: float | None = None
    fallback_entered: bool = False
    fallback_left: bool = False
    gc_complete: bool = False
    gce_mutations: int = 0
    backfilled: int = 0  # Cluster pools made without a check, given lbhc's
    covered_by_cloud_provider: int = 0  # Cluster pools carrying its k8s-<uid>-node
    # At clean-up, pools the cloud provider deleted before lbhc detached its check from them
    # (a race the Services' deletion starts: nothing is left to detach there).
    removed_before_detach: int = 0
    steps: list[StepResult] = field(default_factory=list)
    connections: list[ConnectionRun] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(step.ok for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 3)

        return {
            "ok": self.ok,
            "converged": self.converged,
            "drain_seconds": rounded(self.drain_seconds),
            "drain_bound_seconds": rounded(self.drain_bound_seconds),
            "fallback_entered": self.fallback_entered,
            "fallback_left": self.fallback_left,
            "gc_complete": self.gc_complete,
            "gce_mutations": self.gce_mutations,
            "pools_backfilled": self.backfilled,
            "pools_covered_by_cloud_provider": self.covered_by_cloud_provider,
            "pools_removed_before_detach": self.removed_before_detach,
            "steps": [step.to_json() for step in self.steps],
            "connections": {run.name: run.counts.to_json() for run in self.connections},
        }


class Timeline:
    """Lines stamped with seconds since the demo started; silent when `out` is None."""

    def __init__(self, out: TextIO | None) -> None:
        self._out = out
        self._start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def say(self, message: str) -> None:
        if self._out is not None:
            print(f"[{self.elapsed():6.2f}s] {message}", file=self._out, flush=True)

    def table(self, text: str) -> None:
        """A block of lines under the last stamped one, as it is."""
        if self._out is not None:
            print(text, file=self._out, flush=True)

    def summary(self, summary: DemoSummary, then: str = "") -> None:
        """The summary, and `then` (what to do next) after it."""
        if self._out is None:
            return
        lines = ["", "Summary"]
        for step in summary.steps:
            mark = "ok  " if step.ok else "FAIL"
            lines.append(f"  {mark} {step.name:<22} {step.seconds:6.2f}s {step.error}".rstrip())
        if summary.drain_seconds is not None:
            lines.append(
                f"  taint -> UNHEALTHY in every pool: {summary.drain_seconds:.2f}s "
                f"(bound {summary.drain_bound_seconds:.2f}s)"
            )
        lines.append(f"  GCE mutations by lbhc: {summary.gce_mutations}")
        lines.append(f"  result: {'all steps passed' if summary.ok else 'FAILED'}")
        if then:
            lines += ["", then]
        print("\n".join(lines), file=self._out, flush=True)
