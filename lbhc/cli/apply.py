"""Carrying out a plan from the command line, as a terraform user expects: the plan first,
a question on a terminal, each change streamed as it completes, a progress line on a
terminal, and on Ctrl-C the calls in flight finished and an account of what was and was not
done (exit 130)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from lbhc.cli.parser import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from lbhc.executor import NOT_STARTED, ApplyResult, ComputeWriter, Executor, Outcome, Status
from lbhc.model.plan import Plan
from lbhc.render import render_outcome_line, render_result_summary

# Names of changes left undone listed after an interrupt; `lbhc plan` lists the rest.
_LIST_AT_MOST = 10
_REDRAW_EVERY_SEC = 0.1


class ApplyDeclined(RuntimeError):
    """The question was asked on a terminal and the answer was not 'yes'."""


def confirm(plan: Plan, stdin: TextIO, out: TextIO, auto_approve: bool) -> None:
    """terraform's rule: only a literal 'yes' approves, and only a person at a terminal is
    asked; a pipe or CI (stdin not a terminal) and --auto-approve go ahead."""
    if auto_approve or not plan.changes or not stdin.isatty():
        return
    out.write(
        "\nDo you want to perform these actions?\n"
        "  lbhc will change GCE as shown above. Only 'yes' will be accepted to approve.\n\n"
        "  Enter a value: "
    )
    out.flush()
    answer = stdin.readline()
    if answer.strip() != "yes":
        raise ApplyDeclined(
            "apply cancelled: the answer was not 'yes' (--auto-approve skips the question)"
        )


class Progress:
    """Streams one line per change to `out` (text output only) and, when `err` is a terminal,
    keeps one live line there: how far along, how fast, how long to go. Called from the
    executor's worker threads."""

    def __init__(
        self,
        total: int,
        out: TextIO,
        err: TextIO,
        *,
        stream: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._total = total
        self._out, self._err = out, err
        self._stream = stream
        self._live = err.isatty()
        self._clock = clock
        self._started = clock()
        self._drawn_at = 0.0
        self._lock = threading.Lock()
        self.outcomes: list[Outcome] = []

    def record(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)
            # A change a stop kept from starting is counted, not streamed: after Ctrl-C on
            # 800 pools, 790 "not started" lines would bury what happened.
            if self._stream and outcome.detail != NOT_STARTED:
                self._clear()
                line = render_outcome_line(outcome, len(self.outcomes), self._total)
                self._out.write(line + "\n")
                self._out.flush()
            now = self._clock()
            if len(self.outcomes) == self._total or now - self._drawn_at >= _REDRAW_EVERY_SEC:
                self._draw(now)

    def note(self, message: str) -> None:
        with self._lock:
            self._clear()
            self._err.write(message + "\n")
            self._err.flush()

    def finish(self) -> None:
        with self._lock:
            self._clear()

    def _draw(self, now: float) -> None:
        if not self._live:
            return
        done = len(self.outcomes)
        failed = sum(1 for o in self.outcomes if o.status is Status.FAILED)
        elapsed = max(now - self._started, 1e-9)
        rate = done / elapsed
        left = f", ~{(self._total - done) / rate:.0f}s left" if 0 < done < self._total else ""
        self._err.write(
            f"\r\x1b[KApplying: {done}/{self._total} ({failed} failed), {rate:.1f}/s{left}"
        )
        self._err.flush()
        self._drawn_at = now

    def _clear(self) -> None:
        if self._live:
            self._err.write("\r\x1b[K")


@dataclass(frozen=True)
class Applied:
    result: ApplyResult
    interrupted: bool

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_OK if self.result.ok else EXIT_ERROR


def execute(plan: Plan, gce: ComputeWriter, max_concurrency: int, progress: Progress) -> Applied:
    """Runs the executor in a worker thread so the main thread stays free to take Ctrl-C.
    The first stops new calls and waits for those in flight; a second leaves at once (their
    effect in GCE is then unknown to this run; `lbhc plan` shows it)."""
    executor = Executor(gce, max_concurrency, on_outcome=progress.record)
    done: list[ApplyResult] = []
    finished = threading.Event()

    def work() -> None:
        try:
            done.append(executor.apply(plan))
        finally:
            finished.set()

    threading.Thread(target=work, name="lbhc-apply", daemon=True).start()
    interrupted = False
    try:
        _wait(finished)
    except KeyboardInterrupt:
        interrupted = True
        executor.stop()
        progress.note(
            "Interrupted: waiting for the calls in flight to finish; no new one starts "
            "(Ctrl-C again to quit without waiting)."
        )
        try:
            _wait(finished)
        except KeyboardInterrupt:
            _quit_now(plan, progress)
    progress.finish()
    if not done:  # the executor itself raised: a bug, already on stderr from the thread
        raise RuntimeError("the apply stopped before it finished; see the error above")
    return Applied(done[0], interrupted)


def interrupted_summary(plan: Plan, result: ApplyResult) -> list[str]:
    """What an operator needs after Ctrl-C: what was done, what was not, how to finish."""
    not_done = [o for o in result.outcomes if o.status is not Status.DONE]
    lines = [
        f"Interrupted: {result.count(Status.DONE)} of {len(plan.changes)} changes done, "
        f"{len(not_done)} not done. Run `lbhc plan` to see what remains; `lbhc apply` "
        "again finishes it."
    ]
    for outcome in not_done[:_LIST_AT_MOST]:
        change = outcome.change
        lines.append(f"  not done: {change.action.value} {change.kind} {change.name}")
    if len(not_done) > _LIST_AT_MOST:
        lines.append(f"  ... and {len(not_done) - _LIST_AT_MOST} more")
    return lines


def _wait(finished: threading.Event) -> None:
    # Short waits, so a KeyboardInterrupt reaches the main thread between them. Not
    # Thread.join: a KeyboardInterrupt inside join can leave the thread looking finished.
    while not finished.wait(0.2):
        pass


def _quit_now(plan: Plan, progress: Progress) -> None:
    progress.finish()
    known = len(progress.outcomes)
    print(
        f"lbhc: interrupted twice: {known} of {len(plan.changes)} changes known, the calls in "
        "flight may still complete in GCE; run `lbhc plan` to see the state.",
        file=sys.stderr,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    # The worker threads may be waiting on GCE for minutes; a plain exit would join them.
    os._exit(EXIT_INTERRUPTED)


def render_applied(plan: Plan, applied: Applied) -> str:
    if applied.interrupted:
        return "\n".join(interrupted_summary(plan, applied.result))
    return render_result_summary(applied.result)
