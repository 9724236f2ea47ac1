"""The token bucket on an injected clock: pacing is asserted as arithmetic, never timed."""

from __future__ import annotations

import pytest

from lbhc.gce.ratelimit import TokenBucket


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_burst_then_paced_at_the_rate() -> None:
    time = FakeTime()
    bucket = TokenBucket(10, burst=5, clock=time.clock, sleep=time.sleep)
    waits = [bucket.acquire() for _ in range(25)]
    assert waits[:5] == [0, 0, 0, 0, 0]
    # 20 more calls at 10/s take 2 s in all.
    assert time.now == pytest.approx(2.0)
    assert all(w == pytest.approx(0.1) for w in waits[5:])


def test_idle_time_refills_up_to_the_burst_only() -> None:
    time = FakeTime()
    bucket = TokenBucket(2, burst=2, clock=time.clock, sleep=time.sleep)
    bucket.acquire(), bucket.acquire()
    time.now += 100  # a long idle period must not bank 200 tokens
    assert [bucket.acquire() for _ in range(3)] == [0, 0, pytest.approx(0.5)]


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rate must be > 0"):
        TokenBucket(0)
