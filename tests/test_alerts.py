"""The alerts an operator needs first, run against recorded series: each fires on the series
it is for, after its `for`, and stays quiet on healthy ones. Evaluated with
tests/monitoring_eval.py; where promtool is on PATH, `promtool test rules` is given the same
series and must reach the same verdicts (PROMTOOL names another binary)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring_eval import STALE, Series, firing, minutes, run_alert

RULE = Path(__file__).resolve().parents[1] / "deploy/overlays/monitoring/prometheusrule.yaml"
HORIZON = 45  # minutes evaluated in every scenario
JOB = {"job": "lbhc-metrics", "namespace": "lbhc-system"}  # up{} as the ServiceMonitor makes it


def rules() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(RULE.read_text())
    return {r["alert"]: r for g in document["spec"]["groups"] for r in g["rules"]}


def steady(value: float | str | None, until: int = HORIZON) -> list[float | str | None]:
    return [value] * (until + 1)


def then(before: list[Any], after: list[Any]) -> list[Any]:
    return before + after[len(before) :]


@dataclass(frozen=True)
class Scenario:
    alert: str
    what: str
    series: Series
    fires_from: int | None  # the first minute it fires (and it fires on to the end); None: never

    @property
    def id(self) -> str:
        return f"{self.alert}: {self.what}"


def leaders(a: list[Any], b: list[Any]) -> Series:
    return Series().add("lbhc_leader", a, pod="lbhc-a").add("lbhc_leader", b, pod="lbhc-b")


def up(*values: list[Any], job: str = "lbhc-metrics") -> Series:
    series = Series()
    for i, v in enumerate(values):
        series.add("up", v, instance=f"10.0.0.{i}:10258", job=job, namespace="lbhc-system")
    return series


def coverage(kind: str, value: list[Any], out_of_scope: list[Any] | None = None) -> Series:
    series = Series().add("lbhc_pool_coverage", value, coverage=kind, load_balancer="none")
    series.add("lbhc_pool_coverage", steady(4), coverage="lbhc", load_balancer="target-pool")
    return series.add("lbhc_out_of_scope_services", out_of_scope or steady(0))


SCENARIOS = [
    # lbhc absent or without a leader: must work with no series at all.
    Scenario("LbhcNoLeader", "no samples at all", Series(), 10),
    Scenario("LbhcNoLeader", "one of two replicas leads", leaders(steady(1), steady(0)), None),
    Scenario("LbhcNoLeader", "both follow", leaders(steady(0), steady(0)), 10),
    Scenario(
        "LbhcNoLeader",
        "both Pods gone at minute 5 (staleness markers)",
        leaders(then([1] * 5 + [STALE], steady(None)), then([0] * 5 + [STALE], steady(None))),
        15,
    ),
    Scenario(
        "LbhcNoLeader",
        "a 3-minute handover",
        leaders(then([1] * 10 + [0] * 3, steady(0)), then([0] * 13, steady(1))),
        None,
    ),
    Scenario("LbhcDown", "no up series at all", Series(), 10),
    Scenario("LbhcDown", "one of two replicas up", up(steady(1), steady(0)), None),
    Scenario("LbhcDown", "both replicas down (crash loop)", up(steady(0), steady(0)), 10),
    Scenario("LbhcDown", "up, but only under another job", up(steady(1), job="lbhc"), 10),
    Scenario(
        "LbhcDown",
        "targets gone at minute 20",
        up(then([1] * 20 + [STALE], steady(None)), then([1] * 20 + [STALE], steady(None))),
        30,
    ),
    # A firewall change needed.
    Scenario(
        "LbhcFirewallChangeNeeded",
        "lbhc may write its firewall",
        Series().add("lbhc_firewall_change_needed", steady(0)),
        None,
    ),
    Scenario(
        "LbhcFirewallChangeNeeded",
        "refused from minute 2, the follower says 0",
        Series()
        .add("lbhc_firewall_change_needed", then([0, 0], steady(1)), pod="lbhc-a")
        .add("lbhc_firewall_change_needed", steady(0), pod="lbhc-b"),
        17,
    ),
    Scenario(
        "LbhcFirewallChangeNeeded",
        "refused for 10 minutes, then granted",
        Series().add("lbhc_firewall_change_needed", then([1] * 10, steady(0))),
        None,
    ),
    # Conflicts.
    Scenario(
        "LbhcNodeTagsMatchNoNode",
        "the tags are the nodes'",
        Series().add("lbhc_node_tags_unmatched", steady(0)),
        None,
    ),
    Scenario(
        "LbhcNodeTagsMatchNoNode",
        "found wrong at minute 3",
        Series().add("lbhc_node_tags_unmatched", then([0, 0, 0], steady(1))),
        3,
    ),
    Scenario(
        "LbhcHoldReachedAutoscalerTimeout",
        "every hold released by lbhc",
        Series()
        .add("lbhc_deletion_hold_releases_total", steady(0), reason="node-deleted")
        .add("lbhc_deletion_hold_releases_total", [float(m) for m in range(46)], reason="drained"),
        None,
    ),
    Scenario(
        "LbhcHoldReachedAutoscalerTimeout",
        "a node deleted while held at minute 4",
        Series().add(
            "lbhc_deletion_hold_releases_total", then([0] * 4, steady(1)), reason="node-deleted"
        ),
        4,
    ),
    Scenario("LbhcConflict", "none", Series().add("lbhc_conflicts", steady(0)), None),
    Scenario("LbhcConflict", "two, from the start", Series().add("lbhc_conflicts", steady(2)), 15),
    # Probes blocked, pools failing open (existing alerts, checked here).
    Scenario(
        "LoadBalancerProbesBlocked",
        "every load balancer's probes admitted",
        coverage("probe-blocked", steady(0)),
        None,
    ),
    Scenario(
        "LoadBalancerProbesBlocked",
        "one Service's probes dropped",
        coverage("probe-blocked", steady(1)),
        10,
    ),
    Scenario(
        "HealthCheckCannotPass",
        "no pool fails open",
        Series().add("lbhc_pools_failing_open", steady(0)),
        None,
    ),
    Scenario(
        "HealthCheckCannotPass",
        "pools fail open from minute 3 (lbhc already waited the drain bound)",
        Series().add("lbhc_pools_failing_open", then([0, 0, 0], steady(2))),
        3,
    ),
    # A Service's load balancer not found.
    Scenario("LoadBalancerNotFound", "every one found", coverage("no-pool", steady(0)), None),
    Scenario("LoadBalancerNotFound", "one missing", coverage("no-pool", steady(1)), 30),
    Scenario(
        "LoadBalancerNotFound",
        "one missing for 20 minutes (being made)",
        coverage("no-pool", then([1] * 20, steady(0))),
        None,
    ),
    Scenario(
        "LoadBalancerNotFound",
        "all missing: the scope is wrong, LbhcOutOfScope says so",
        coverage("no-pool", steady(3), out_of_scope=steady(3)),
        None,
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_each_alert_fires_on_its_series_and_only_there(scenario: Scenario) -> None:
    rule = rules()[scenario.alert]
    times = minutes(HORIZON)
    want = [] if scenario.fires_from is None else times[scenario.fires_from :]
    assert firing(rule, scenario.series, times) == want


def test_every_new_alert_has_a_firing_and_a_quiet_scenario() -> None:
    covered = {(s.alert, s.fires_from is None) for s in SCENARIOS}
    for alert in {s.alert for s in SCENARIOS}:
        assert {(alert, True), (alert, False)} <= covered, alert
    assert {s.alert for s in SCENARIOS} <= set(rules())


def test_a_bare_max_of_the_leader_gauge_never_fires_without_pods() -> None:
    """Why LbhcNoLeader reads `or vector(0)`: with no replica up there is no series, max()
    returns nothing, and nothing compares equal to 0."""
    bare = {"alert": "Old", "expr": "max(lbhc_leader) == 0", "for": "10m"}
    assert firing(bare, Series(), minutes(HORIZON)) == []
    assert firing(rules()["LbhcNoLeader"], Series(), minutes(HORIZON)) != []


# ---- the same verdicts from promtool, where it is installed ----------------------------------


def _values(points: list[tuple[float, float | str]]) -> str:
    """promtool's notation, one value a minute from 0: `_` for no sample, `stale`."""
    by_minute = {int(t // 60): v for t, v in points}
    last = max(by_minute, default=-1)
    return " ".join(
        "_" if m not in by_minute else "stale" if by_minute[m] == STALE else str(by_minute[m])
        for m in range(last + 1)
    )


def _series_text(ls: frozenset[tuple[str, str]]) -> str:
    pairs = dict(ls)
    name = pairs.pop("__name__")
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(pairs.items())) + "}"


def promtool_test(scenario: Scenario, rule_file: str) -> dict[str, Any]:
    """One promtool test group: the scenario's series, and the firing alerts the evaluator
    finds at each minute around the verdict (promtool compares firing alerts only)."""
    checks = sorted({0, 5, 9, 10, 11, 15, 16, 17, 20, 29, 30, 31, HORIZON})
    alerts = run_alert(rules()[scenario.alert], scenario.series, minutes(HORIZON))
    return {
        "rule_files": [rule_file],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": _series_text(ls), "values": _values(points)}
                    for ls, points in scenario.series.samples.items()
                    if points
                ],
                "alert_rule_test": [
                    {
                        "eval_time": f"{m}m",
                        "alertname": scenario.alert,
                        "exp_alerts": [
                            {"exp_labels": dict(a.labels)} for a in alerts[60.0 * m] if a.firing
                        ],
                    }
                    for m in checks
                ],
            }
        ],
    }


def test_promtool_reaches_the_same_verdicts(tmp_path: Path) -> None:
    promtool = os.environ.get("PROMTOOL") or shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: the prometheus package ships it)")
    groups = yaml.safe_load(RULE.read_text())["spec"]["groups"]
    for group in groups:  # annotations are text for people; promtool would compare them too
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    files = []
    for i, scenario in enumerate(SCENARIOS):
        path = tmp_path / f"test-{i}.yaml"
        path.write_text(yaml.safe_dump(promtool_test(scenario, "rules.yaml")))
        files.append(str(path))
    done = subprocess.run(
        [promtool, "test", "rules", *files],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
