"""LoadGenerator: runs a LoadSpec against loopback targets on one asyncio loop thread.

One loop thread rather than a thread per connection: hundreds of mostly idle connections
cost a few kilobytes each on a loop, and the whole run can be stopped by cancelling tasks.

Pacing is open-loop: short connection k of every target is due at k / rate_per_sec seconds
after the start and is never started before then, whatever earlier connections are doing (a
slow backend must not slow the load down, or the load would hide the failure it is meant
to show). So by any time t, at most floor(rate * t) + 1 have started per target. A due
connection that cannot start is skipped, never queued: when max_in_flight connections are
open, or when it is more than LATE_SEC overdue or the duration is over by the time it could
start (after a stall, a burst of catch-up connections would be load the spec did not ask
for).

The run ends by itself after duration_sec: no short connection starts after that, the
long-lived ones are closed (completed, if still up), and the short ones in flight finish
within their own timeouts, so run() returns at most connect_timeout_sec +
response_timeout_sec after the duration. stop() ends it early and cuts those too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Self

from lbhc.sandbox.lifecycle import StartedInWith
from lbhc.sandbox.loadgen import connection
from lbhc.sandbox.loadgen.report import Attempt, LoadReport
from lbhc.sandbox.loadgen.spec import LoadSpec
from lbhc.sandbox.loadgen.targets import check_fits, loopback_targets

LATE_SEC = 1.0


class LoadGenerator(StartedInWith):
    """Sends `spec`'s load to every target (name -> (host, port), host within 127.0.0.0/8)
    and records one Attempt per connection. `clock` stamps the attempts and paces the
    schedule; it must count seconds as time.monotonic does (an offset is fine), so that the
    attempts line up with the caller's other records.

    One run per generator: start() then wait(), or run(); stop() may come at any time, from
    any thread. Used as a context manager, leaving the block stops the run and waits for it."""

    def __init__(
        self,
        targets: Mapping[str, tuple[str, int]],
        spec: LoadSpec,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(spec, LoadSpec):
            raise TypeError(f"spec: expected a LoadSpec, got {type(spec).__name__}")
        self._targets = loopback_targets(targets)
        check_fits(self._targets, spec)
        self._spec = spec
        self._clock = clock
        self._lock = threading.Lock()  # the attempts and the lifecycle fields below
        self._attempts: list[Attempt] = []
        self._started: float | None = None
        self._ended: float | None = None
        self._stop_requested = False
        self._stopped_early = False
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._finished = threading.Event()
        # The loop thread's own state (touched by it only).
        self._stopping = asyncio.Event()  # binds to the loop on first use, in the loop thread
        self._shorts: set[asyncio.Task[None]] = set()
        self._unrecorded: dict[asyncio.Task[None], Attempt] = {}
        self._in_flight = 0

    # -- lifecycle, from any thread ------------------------------------------------------------

    def start(self) -> Self:
        """Start the run in a background thread and return at once."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("a LoadGenerator runs once; make a new one")
            self._loop = asyncio.new_event_loop()
            # A daemon: a forgotten generator must not keep the interpreter alive (its run
            # is bounded anyway).
            self._thread = threading.Thread(
                target=self._run_loop, args=(self._loop,), name="lbhc-loadgen", daemon=True
            )
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the run early: no new connections, long-lived ones closed, short ones in flight
        cut (recorded as stopped). Returns at once; wait() for the report. Idempotent."""
        with self._lock:
            self._stop_requested = True
            loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(self._on_stop)

    def wait(self, timeout: float | None = None) -> LoadReport:
        """The report once the run has ended. TimeoutError if it has not within `timeout`;
        RuntimeError if the generator itself failed (not a connection: those are outcomes)."""
        with self._lock:
            thread = self._thread
        if thread is None:
            raise RuntimeError("the LoadGenerator was not started")
        if not self._finished.wait(timeout):
            raise TimeoutError(f"the load generator's run did not end within {timeout:g} s")
        thread.join()
        if self._failure is not None:
            raise RuntimeError(f"the load generator failed: {self._failure!r}") from self._failure
        return self.snapshot()

    def run(self) -> LoadReport:
        """start(), then wait() until the run ends by itself (or a stop() from elsewhere)."""
        return self.start().wait()

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def snapshot(self) -> LoadReport:
        """The attempts recorded so far (the final report once the run has ended)."""
        with self._lock:
            now = self._clock()
            started = self._started if self._started is not None else now
            ended = self._ended if self._ended is not None else now
            attempts = sorted(self._attempts, key=lambda a: (a.started, a.ended))
            stopped = self._stop_requested if self._ended is None else self._stopped_early
        return LoadReport(
            spec=self._spec,
            targets=tuple(t.name for t in self._targets),
            started=started,
            ended=ended,
            attempts=tuple(attempts),
            stopped_early=stopped,
        )

    def close(self) -> None:
        """Stop, and wait for the loop to end (what leaving a `with` block does)."""
        self.stop()
        # Bounded: a stop cancels every connection at once; only a wedged loop would miss it.
        self.wait(timeout=10.0)

    # -- the loop thread -----------------------------------------------------------------------

    def _run_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # surfaced by wait(), not lost with the thread
            self._failure = exc
        finally:
            with contextlib.suppress(BaseException):
                # Lets the closed sockets' last callbacks run before the loop goes.
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._finished.set()

    async def _main(self) -> None:
        spec = self._spec
        with self._lock:
            self._started = start = self._clock()
            if self._stop_requested:  # a stop() before the run began: nothing is launched
                self._ended, self._stopped_early = start, True
                return
        run = connection.Context(spec, self._clock, self._record)
        longs = [
            self._launch(
                connection.long_lived(target, start, run),
                Attempt(target.name, "long", start, start, "stopped"),
            )
            for target in self._targets
            for _ in range(spec.long_lived)
        ]
        await self._schedule(start, run)
        for task in longs:
            task.cancel()
        await asyncio.gather(*longs, return_exceptions=True)
        # Short connections in flight end within their timeouts, or at a stop() (_on_stop
        # cancels them).
        await asyncio.gather(*self._shorts, return_exceptions=True)
        with self._lock:
            self._ended = self._clock()
            # Fixed now: a stop() after the end (leaving a `with` block) changes nothing.
            self._stopped_early = self._stopping.is_set()

    async def _schedule(self, start: float, run: connection.Context) -> None:
        """Start the short connections on time, until the duration is over or a stop()."""
        spec = self._spec
        for k in range(spec.planned_per_target):
            due = start + k / spec.rate_per_sec
            if not await self._sleep_until(due):
                return
            # Late past the end counts as late: the run promised no new connection after it.
            now = self._clock()
            late = now - due > LATE_SEC or now >= start + spec.duration_sec
            for target in self._targets:
                if late or self._in_flight >= spec.max_in_flight:
                    self._record(Attempt(target.name, "short", due, due, "skipped"))
                else:
                    task = self._launch(
                        connection.short(target, now, run),
                        Attempt(target.name, "short", now, now, "stopped"),
                    )
                    self._shorts.add(task)
                    task.add_done_callback(self._shorts.discard)
        # The last connection is due before the end; the long-lived ones last the whole time.
        await self._sleep_until(start + spec.duration_sec)

    async def _sleep_until(self, when: float) -> bool:
        """Sleep until `when` on the clock; False (at once) if a stop() came first."""
        while not self._stopping.is_set():
            # Looked at again after each wake: a timer may fire a hair early, and a connection
            # must never start before it is due.
            delay = when - self._clock()
            if delay <= 0:
                return True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopping.wait()
        return False

    def _launch(self, coro: Coroutine[object, object, None], unrun: Attempt) -> asyncio.Task[None]:
        """Start a connection's task. `unrun` is recorded if the task is cancelled before its
        first turn: its coroutine then never runs, not even its `finally`, and the attempt
        would be missing from the report."""
        self._in_flight += 1
        task = asyncio.get_running_loop().create_task(coro)
        self._unrecorded[task] = unrun
        task.add_done_callback(self._landed)
        return task

    def _landed(self, task: asyncio.Task[None]) -> None:
        self._in_flight -= 1
        unrun = self._unrecorded.pop(task, None)
        if unrun is not None:
            self._record(dataclasses.replace(unrun, ended=self._clock()))
        if not task.cancelled() and task.exception() is not None and self._failure is None:
            # A bug, not an outcome (those are recorded by the connection): end the run.
            self._failure = task.exception()
            self._on_stop()

    def _on_stop(self) -> None:
        self._stopping.set()
        for task in self._shorts:
            task.cancel()

    def _record(self, attempt: Attempt) -> None:
        # Called by a connection's own task (its one record), or by _landed for a task that
        # never ran; either way that task is accounted for.
        current = asyncio.current_task()
        if current is not None:
            self._unrecorded.pop(current, None)
        with self._lock:
            self._attempts.append(attempt)
