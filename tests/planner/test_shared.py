"""The update rule for the shared check, and ownership marks."""

from __future__ import annotations

import pytest

from lbhc.planner.shared import is_owned, ownership_description, reconcile_health_check
from tests.builders import config, our_check

DESIRED = our_check()  # interval 8, timeout 1, healthy 1, unhealthy 3


@pytest.mark.parametrize(
    ("actual", "raise_only", "changed"),
    [
        ({}, False, {}),
        (
            {"port": 80, "request_path": "/"},
            False,
            {"port": (80, 10256), "requestPath": ("/", "/healthz")},
        ),
        ({"host": "example.com"}, True, {"host": ("example.com", "")}),
        ({"description": "old"}, True, {"description": ("old", DESIRED.description)}),
        # Lowered by hand (kubernetes#70099's overload): corrected in both modes.
        (
            {"check_interval_sec": 2, "unhealthy_threshold": 2},
            True,
            {"checkIntervalSec": (2, 8), "unhealthyThreshold": (2, 3)},
        ),
        # Raised by hand: follows the config by default...
        (
            {"check_interval_sec": 30, "unhealthy_threshold": 5},
            False,
            {"checkIntervalSec": (30, 8), "unhealthyThreshold": (5, 3)},
        ),
        # ...and is kept in raise-only mode, while a lowered timeout still rises.
        (
            {"check_interval_sec": 30, "unhealthy_threshold": 5, "timeout_sec": 5},
            True,
            {"timeoutSec": (5, 5)},
        ),
    ],
    ids=[
        "same",
        "port-and-path",
        "host",
        "description",
        "lowered-timings",
        "raised-follow-config",
        "raised-kept",
    ],
)
def test_reconcile_health_check(
    actual: dict[str, object], raise_only: bool, changed: dict[str, tuple[object, object]]
) -> None:
    result = reconcile_health_check(our_check(**actual), DESIRED, raise_only)
    expected = {k: v for k, v in changed.items() if v[0] != v[1]}
    assert {k: (d.before, d.after) for k, d in result.diff.items()} == expected
    merged = result.resource
    assert merged.timeout_sec <= merged.check_interval_sec  # GCE's own rule still holds
    assert (merged.port, merged.request_path, merged.host) == (10256, "/healthz", "")


def test_raise_only_plan_keeps_user_raised_values_end_to_end() -> None:
    from lbhc.planner.planner import plan
    from tests.builders import cloud, cluster, our_firewall, pool_for, service

    web = service("web")
    raised = our_check(check_interval_sec=20, unhealthy_threshold=6)
    snapshot = cloud(
        check=raised,
        firewall=our_firewall(),
        pools=(pool_for(web, health_checks=(DESIRED.self_link,)),),
    )
    assert plan(cluster(services=(web,)), snapshot, config(raise_only_timings=True)).changes == ()
    (update,) = plan(cluster(services=(web,)), snapshot, config()).changes
    assert set(update.diff) == {"checkIntervalSec", "unhealthyThreshold"}


@pytest.mark.parametrize(
    ("description", "owned"),
    [
        (ownership_description("abc"), True),
        (ownership_description("other"), False),
        ('{"clusterId":"abc"}', False),  # no managedBy mark
        ('{"managedBy":"lbhc","clusterId":"abc","extra":1}', True),
        ("lbhc abc", False),
        ("", False),
        ("[1, 2]", False),
    ],
)
def test_is_owned(description: str, owned: bool) -> None:
    assert is_owned(description, "abc") is owned
