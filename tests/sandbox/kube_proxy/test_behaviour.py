"""What each kube-proxy era answers (kubernetes pkg/proxy/healthcheck/proxier_health.go), as
a table: versions x node eligibility x proxier health x path, then the headers and body of
each era."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from lbhc.sandbox.kube_proxy import (
    HealthResponse,
    Version,
    go_time_string,
    respond,
    rfc3339_nano,
)

NOW = datetime(2026, 11, 22, 4, 18, 8, 123456, tzinfo=UTC)
SYNCED = datetime(2026, 11, 22, 4, 16, 0, tzinfo=UTC)
GO_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,9})? \+0000 UTC$")
NEW_FIELDS = ["healthy", "status"]  # from 1.33
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")


@dataclass(frozen=True)
class Era:
    """What a version does, as the reference states it."""

    version: Version
    gate: bool | None
    drains: bool
    livez: bool

    def __str__(self) -> str:
        gate = "" if self.gate is None else f"-gate-{'on' if self.gate else 'off'}"
        return "v{}.{}.{}".format(*self.version) + gate


ERAS = [
    Era((1, 7, 2), None, drains=False, livez=False),
    Era((1, 27, 9), None, drains=False, livez=False),
    Era((1, 27, 9), True, drains=False, livez=False),  # no gate to turn on yet
    Era((1, 28, 0), None, drains=False, livez=True),
    Era((1, 28, 0), False, drains=False, livez=True),
    Era((1, 28, 0), True, drains=True, livez=True),
    Era((1, 29, 3), None, drains=False, livez=True),
    Era((1, 29, 3), True, drains=True, livez=True),
    Era((1, 30, 0), None, drains=True, livez=True),
    Era((1, 30, 0), False, drains=False, livez=True),  # beta: can still be turned off
    Era((1, 31, 4), None, drains=True, livez=True),
    Era((1, 31, 4), False, drains=True, livez=True),  # GA: locked on
    Era((1, 33, 0), None, drains=True, livez=True),
]


def answer(
    path: str, era: Era, *, eligible: bool = True, proxier_healthy: bool = True
) -> HealthResponse:
    return respond(
        path,
        era.version,
        node_eligible=eligible,
        proxier_healthy=proxier_healthy,
        now=NOW,
        last_updated=SYNCED,
        draining_gate=era.gate,
    )


@pytest.mark.parametrize("era", ERAS, ids=str)
@pytest.mark.parametrize("eligible", [True, False], ids=["eligible", "being-deleted"])
@pytest.mark.parametrize("proxier_healthy", [True, False], ids=["proxier-ok", "proxier-broken"])
def test_status_codes(era: Era, eligible: bool, proxier_healthy: bool) -> None:
    def code(path: str) -> int:
        return answer(path, era, eligible=eligible, proxier_healthy=proxier_healthy).status

    healthz = 200 if proxier_healthy and (eligible or not era.drains) else 503
    livez = (200 if proxier_healthy else 503) if era.livez else 404
    assert (code("/healthz"), code("/livez"), code("/metrics")) == (healthz, livez, 404)


@pytest.mark.parametrize("path", ["/", "/healthz/", "/livez/", "/readyz", "/HEALTHZ"])
def test_only_the_two_exact_paths_exist(path: str) -> None:
    reply = answer(path, ERAS[-1])
    assert reply == HealthResponse(
        404,
        {"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"},
        b"404 page not found\n",
    )


def test_the_query_string_does_not_change_the_route() -> None:
    assert answer("/healthz?verbose=1", ERAS[-1]).status == 200
    assert answer("/livez?x", ERAS[-1]).status == 200


@pytest.mark.parametrize("era", ERAS, ids=str)
def test_headers_are_json_and_nosniff_on_every_answer(era: Era) -> None:
    paths = ["/healthz", "/livez"] if era.livez else ["/healthz"]
    for path in paths:
        for eligible in (True, False):
            for proxier_healthy in (True, False):
                reply = answer(path, era, eligible=eligible, proxier_healthy=proxier_healthy)
                assert reply.headers == {
                    "Content-Type": "application/json",
                    "X-Content-Type-Options": "nosniff",
                }


@pytest.mark.parametrize(
    ("version", "path", "fields"),
    [
        ((1, 7, 2), "/healthz", ["lastUpdated", "currentTime"]),
        ((1, 27, 9), "/healthz", ["lastUpdated", "currentTime"]),
        ((1, 28, 0), "/healthz", ["lastUpdated", "currentTime", "nodeEligible"]),
        ((1, 28, 0), "/livez", ["lastUpdated", "currentTime"]),
        ((1, 32, 5), "/healthz", ["lastUpdated", "currentTime", "nodeEligible"]),
        ((1, 32, 5), "/livez", ["lastUpdated", "currentTime"]),
        ((1, 33, 0), "/healthz", ["lastUpdated", "currentTime", "nodeEligible", *NEW_FIELDS]),
        ((1, 33, 0), "/livez", ["lastUpdated", "currentTime", *NEW_FIELDS]),
    ],
)
def test_body_fields_by_era(version: Version, path: str, fields: list[str]) -> None:
    for eligible in (True, False):
        body = json.loads(answer(path, Era(version, None, True, True), eligible=eligible).body)
        assert list(body) == fields
        time_format = RFC3339 if version >= (1, 33, 0) else GO_TIME
        assert time_format.match(body["lastUpdated"]) and time_format.match(body["currentTime"])


def test_body_before_1_28_is_upstreams_fprintf_with_go_time_strings() -> None:
    reply = answer("/healthz", ERAS[1], proxier_healthy=False)
    assert reply.body == (
        b'{"lastUpdated": "2026-11-22 04:16:00 +0000 UTC",'
        b'"currentTime": "2026-11-22 04:18:08.123456 +0000 UTC"}'
    )


def test_body_from_1_28_says_what_kube_proxy_believes_about_the_node() -> None:
    draining = answer("/healthz", Era((1, 31, 4), None, True, True), eligible=False)
    assert draining.body == (
        b'{"lastUpdated": "2026-11-22 04:16:00 +0000 UTC",'
        b'"currentTime": "2026-11-22 04:18:08.123456 +0000 UTC", "nodeEligible": false}'
    )
    # With the gate off kube-proxy never hears of the Node, so it still calls it eligible.
    gate_off = answer("/healthz", Era((1, 29, 3), None, False, True), eligible=False)
    assert json.loads(gate_off.body)["nodeEligible"] is True
    # Healthy answers report the current time as lastUpdated, as upstream does.
    assert json.loads(gate_off.body)["lastUpdated"] == go_time_string(NOW)


def test_body_from_1_33_is_json_marshal_of_proxy_health() -> None:
    draining = answer("/healthz", ERAS[-1], eligible=False)
    assert draining.body == (
        b'{"lastUpdated":"2026-11-22T04:16:00Z","currentTime":"2026-11-22T04:18:08.123456Z",'
        b'"nodeEligible":false,"healthy":true,'
        b'"status":{"IPv4":{"lastUpdated":"2026-11-22T04:16:00Z","healthy":true}}}'
    )
    broken = json.loads(answer("/livez", ERAS[-1], proxier_healthy=False).body)
    assert broken["healthy"] is False and broken["status"]["IPv4"]["healthy"] is False
    assert "nodeEligible" not in broken


@pytest.mark.parametrize("version", [(1, 6, 13), (1, 7, 0), (1, 7, 1), (0, 0, 0)])
def test_versions_without_a_reachable_server_have_no_answer(version: Version) -> None:
    with pytest.raises(ValueError, match="no reachable health endpoint"):
        answer("/healthz", Era(version, None, False, False))


@pytest.mark.parametrize(
    ("moment", "go", "rfc"),
    [
        (NOW, "2026-11-22 04:18:08.123456 +0000 UTC", "2026-11-22T04:18:08.123456Z"),
        (datetime(2026, 1, 2, 3, 4, 5, 500000, UTC), "2026-01-02 03:04:05.5 +0000 UTC", None),
        (SYNCED, "2026-11-22 04:16:00 +0000 UTC", "2026-11-22T04:16:00Z"),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01 00:00:00 +0000 UTC", "0001-01-01T00:00:00Z"),
        (datetime(2026, 11, 22, 4, 16), "2026-11-22 04:16:00 +0000 UTC", None),  # naive: UTC
    ],
)
def test_go_time_formats(moment: datetime, go: str, rfc: str | None) -> None:
    assert go_time_string(moment) == go
    if rfc is not None:
        assert rfc3339_nano(moment) == rfc
