"""What the controller tells the cluster comes from the kinds of the plan's findings, never
from their text: the text holds names users chose, such as a namespace called
`conflict-team` or a Service called `does-not-own-anything`."""

from __future__ import annotations

import pytest

from lbhc.model.plan import FindingKind
from tests.builders import kube as kube_builders
from tests.controller.harness import NAME, PROJECT, World, world
from tests.waiting import wait_for
from tests.worlds import add_load_balanced_service


def add_hostile_service(w: World) -> str:
    """A Service whose names read like lbhc's conflict warnings, with an opt-out annotation
    that is neither true nor false (a finding that quotes both names)."""
    obj = kube_builders.service(
        "does-not-own-anything",
        kube_builders.with_annotations({"lbhc.dev/ignore": "conflict: maybe"}),
        namespace="conflict-team",
    )
    return add_load_balanced_service(w.kube, w.compute, obj)


def conflicting_pools(w: World) -> float | None:
    app = w.apps[-1]
    return app.metrics.registry.get_sample_value("lbhc_target_pools", {"state": "conflicting"})


def conflicts(w: World) -> float | None:
    return w.apps[-1].metrics.registry.get_sample_value("lbhc_conflicts")


@pytest.mark.parametrize("real_conflict", [False, True], ids=["hostile-names", "real-conflict"])
def test_conflict_events_and_gauges_count_kinds_not_words(real_conflict: bool) -> None:
    with world() as w:
        pool = w.add_service("web")
        add_hostile_service(w)
        if real_conflict:  # someone else's check holds lbhc's name
            w.compute.add_http_health_check(PROJECT, NAME, description="made by hand")
        app = w.start()
        wait_for(
            lambda: app.controller is not None and app.controller.last_plan is not None,
            what="a first pass",
        )
        plan = app.controller.last_plan  # type: ignore[union-attr]
        assert plan is not None
        unclear = [f for f in plan.findings if f.kind is FindingKind.UNCLEAR_OPT_OUT]
        assert len(unclear) == 1 and "conflict-team" in unclear[0].text

        if real_conflict:
            wait_for(lambda: w.events("Conflict"), what="a Conflict Event")
            assert all(NAME in e["note"] for e in w.events("Conflict"))
            # Both pools need lbhc's check (an unclear opt-out does not opt out) and cannot
            # get it while another's check holds its name.
            wait_for(lambda: conflicting_pools(w) == 2, what="two conflicting pools")
            assert not w.attached(pool)
            assert conflicts(w) == 1  # the one name taken, however many pools it blocks
        else:
            wait_for(lambda: w.attached(pool), what="web converged")
            wait_for(lambda: conflicting_pools(w) is not None, what="the pools gauge")
            assert conflicting_pools(w) == 0
            assert conflicts(w) == 0
            assert w.events("Conflict") == []
