"""Jittered exponential backoff, so replicas and resources do not retry in lockstep."""

from __future__ import annotations

import random


class Backoff:
    def __init__(
        self,
        initial: float = 0.5,
        maximum: float = 30.0,
        factor: float = 2.0,
        rng: random.Random | None = None,
    ) -> None:
        self._initial = initial
        self._maximum = maximum
        self._factor = factor
        self._rng = rng or random.Random()
        self._current = initial

    def next(self) -> float:
        """The delay to wait now, with "equal jitter": uniform between half the current
        ceiling and the ceiling (never near zero, so a failing call is not hammered), which
        then grows by `factor` up to `maximum`."""
        delay = self._rng.uniform(self._current / 2, self._current)
        self._current = min(self._maximum, self._current * self._factor)
        return delay

    def reset(self) -> None:
        self._current = self._initial
