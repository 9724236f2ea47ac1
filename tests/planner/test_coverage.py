"""Coverage per pool, judged from what it really carries, and what lbhc plans for it: one row
per coverage kind, on a cluster shaped like today's GCE (the cloud provider attaches its own
node check k8s-<uid>-node to Cluster pools it creates) and like the old world."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lbhc.model.cloud import CloudSnapshot, HttpHealthCheck
from lbhc.model.cluster import ClusterSnapshot, Service
from lbhc.model.plan import Action, Kind
from lbhc.planner.config import HealthCheckMode, PlannerConfig
from lbhc.planner.planner import plan
from lbhc.planner.status import assess
from tests.builders import (
    CLOUD_PROVIDER_CHECK as CP,
)
from tests.builders import (
    CLOUD_PROVIDER_UID,
    check_url,
    cloud,
    cluster,
    config,
    legacy_check,
    names,
    our_check,
    our_firewall,
    pool_for,
    service,
)

CLUSTER_ID, NAME, URL = names()
CP_URL = check_url(CP.name)
EQUIVALENT = legacy_check("team-kube-proxy-check", description="made by hand")
OTHER_PORT = legacy_check("team-app-check", port=8080, request_path="/ready")
HEALTHZ_ELSEWHERE = legacy_check("healthz-on-10257", port=10257)

WEB, API, LEGACY = service("web"), service("api"), service("legacy")
LOCAL = service("local", policy="Local")
RBS = service("rbs", annotations={"cloud.google.com/l4-rbs": "enabled"}, ingress_ip="203.0.113.9")


def carrying(svc: Service, check: HttpHealthCheck | None) -> object:
    return pool_for(svc, health_checks=(check.self_link,) if check else ())


@dataclass(frozen=True)
class Case:
    id: str
    services: tuple[Service, ...]
    pools: tuple[object, ...]
    # Service key -> (coverage, check name) in `lbhc status`
    coverage: dict[str, tuple[str, str]]
    changes: set[tuple[Action, Kind, str]]
    ours: bool = False  # lbhc's check and firewall exist already
    checks: tuple[HttpHealthCheck, ...] = (CP, EQUIVALENT, OTHER_PORT, HEALTHZ_ELSEWHERE)
    config: PlannerConfig = field(default_factory=config)
    uid: str | None = CLOUD_PROVIDER_UID
    warning: str | None = None
    no_warnings: bool = False


CREATE_PAIR = {(Action.CREATE, Kind.FIREWALL, NAME), (Action.CREATE, Kind.HTTP_HEALTH_CHECK, NAME)}
DELETE_PAIR = {(Action.DELETE, Kind.HTTP_HEALTH_CHECK, NAME), (Action.DELETE, Kind.FIREWALL, NAME)}

TAKEOVER_CASE = Case(
    "takeover: the cloud provider's check is replaced, recorded first",
    (WEB,),
    (carrying(WEB, CP),),
    {"default/web": ("cloud-provider", CP.name)},
    CREATE_PAIR | {(Action.ATTACH, Kind.TARGET_POOL, pool_for(WEB).name)},
    config=config(health_check_mode=HealthCheckMode.TAKEOVER),
)

CASES = [
    Case(
        "fully covered by the cloud provider: nothing is created, nothing is said",
        (WEB, API),
        (carrying(WEB, CP), carrying(API, CP)),
        {"default/web": ("cloud-provider", CP.name), "default/api": ("cloud-provider", CP.name)},
        set(),
        no_warnings=True,
    ),
    Case(
        "the cloud provider's check without its uid known is still recognised, as equivalent",
        (WEB,),
        (carrying(WEB, CP),),
        {"default/web": ("equivalent", CP.name)},
        set(),
        uid=None,
        no_warnings=True,
    ),
    Case(
        "any check on kube-proxy's port and /healthz is equivalent",
        (WEB,),
        (carrying(WEB, EQUIVALENT),),
        {"default/web": ("equivalent", EQUIVALENT.name)},
        set(),
        no_warnings=True,
    ),
    Case(
        "a legacy pool made without a check is backfilled; the others are left alone",
        (WEB, API, LEGACY),
        (carrying(WEB, CP), carrying(API, CP), carrying(LEGACY, None)),
        {
            "default/web": ("cloud-provider", CP.name),
            "default/api": ("cloud-provider", CP.name),
            "default/legacy": ("none", ""),
        },
        CREATE_PAIR | {(Action.ATTACH, Kind.TARGET_POOL, pool_for(LEGACY).name)},
        no_warnings=True,
    ),
    Case(
        "a check on another port is a different check: reported, never replaced in coexist",
        (WEB,),
        (carrying(WEB, HEALTHZ_ELSEWHERE),),
        {"default/web": ("other-check", HEALTHZ_ELSEWHERE.name)},
        set(),
        warning="port 10257",
    ),
    Case(
        "an application's own check: reported",
        (WEB,),
        (carrying(WEB, OTHER_PORT),),
        {"default/web": ("other-check", OTHER_PORT.name)},
        set(),
        warning="does not probe kube-proxy's /healthz",
    ),
    Case(
        "a check that cannot be read is another check, not a guess",
        (WEB,),
        (pool_for(WEB, health_checks=(check_url("gone-or-elsewhere"),)),),
        {"default/web": ("other-check", "gone-or-elsewhere")},
        set(),
        warning="not readable",
    ),
    Case(
        "lbhc's own check",
        (WEB,),
        (carrying(WEB, our_check()),),
        {"default/web": ("lbhc", NAME)},
        set(),
        ours=True,
        no_warnings=True,
    ),
    Case(
        "Local keeps its per-Service check; a Service without a pool is no-pool",
        (LOCAL, RBS, WEB),
        (pool_for(LOCAL, health_checks=(check_url("alocal"),)), carrying(WEB, CP)),
        {
            "default/local": ("local", "alocal"),
            "default/rbs": ("no-pool", ""),
            "default/web": ("cloud-provider", CP.name),
        },
        set(),
        no_warnings=True,
    ),
    Case(
        "the last pool that needed lbhc's check is recreated by the cloud provider with its "
        "own: lbhc's pair is collected, the cloud provider's check is never touched",
        (WEB,),
        (carrying(WEB, CP),),
        {"default/web": ("cloud-provider", CP.name)},
        DELETE_PAIR,
        ours=True,
    ),
    TAKEOVER_CASE,
]


def snapshots(case: Case) -> tuple[ClusterSnapshot, CloudSnapshot]:
    snapshot = cluster(services=case.services, cloud_provider_uid=case.uid)
    world = cloud(
        check=our_check() if case.ours else None,
        firewall=our_firewall() if case.ours else None,
        pools=case.pools,  # type: ignore[arg-type]
        checks=case.checks,
    )
    return snapshot, world


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_coverage_and_plan(case: Case) -> None:
    snapshot, world = snapshots(case)
    result = plan(snapshot, world, case.config)
    assert {(c.action, c.kind, c.name) for c in result.changes} == case.changes
    report = assess(snapshot, world, case.config, result)
    found = {s.service: (s.coverage.value, s.check) for s in report.services}
    assert found == case.coverage
    body = report.to_json()["services"]
    assert {s["service"]: s["coverage"] for s in body} == {
        k: v[0] for k, v in case.coverage.items()
    }
    if case.warning:
        assert any(case.warning in w for w in result.warnings), result.warnings
    if case.no_warnings:
        assert result.warnings == ()
    # Never a change to a check or firewall lbhc does not own.
    assert all(c.name == NAME for c in result.changes if c.kind is not Kind.TARGET_POOL)


def test_a_takeover_is_recorded_in_the_check_it_creates_before_any_pool_is_touched() -> None:
    snapshot, world = snapshots(TAKEOVER_CASE)
    result = plan(snapshot, world, TAKEOVER_CASE.config)
    create = next(c for c in result.changes if c.kind is Kind.HTTP_HEALTH_CHECK)
    attach = next(c for c in result.changes if c.action is Action.ATTACH)
    assert result.changes.index(create) < result.changes.index(attach)
    assert attach.replaces == CP_URL
    assert create.desired is not None and CP.name in create.desired.description
