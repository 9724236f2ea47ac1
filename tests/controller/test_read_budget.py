"""The read budget holds over every 60 s window, whenever the reads come."""

from __future__ import annotations

import pytest

from lbhc.controller.read_budget import ReadBudget


@pytest.mark.parametrize(
    ("per_minute", "asks_at", "granted"),
    [
        (3, [0, 0, 0, 0], 3),  # a burst up to the budget, not past it
        (3, [0, 0, 0, 59.9], 3),  # still the same minute
        (3, [0, 0, 0, 60], 4),  # the first read has left the window
        (2, [0, 30, 45, 61, 89, 91], 4),  # 0,30 | 45 refused | 61 (0 left) | 89 refused | 91
    ],
    ids=["burst", "same-minute", "window-moves", "sliding"],
)
def test_no_window_of_60_s_holds_more_than_the_budget(
    per_minute: int, asks_at: list[float], granted: int
) -> None:
    now = [0.0]
    budget = ReadBudget(per_minute, lambda: now[0])
    taken = []
    for at in asks_at:
        now[0] = at
        if budget.try_take():
            taken.append(at)
    assert len(taken) == granted
    assert all(sum(1 for t in taken if start <= t < start + 60) <= per_minute for start in taken)


def test_a_budget_of_nothing_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="> 0 reads a minute"):
        ReadBudget(0, lambda: 0.0)
