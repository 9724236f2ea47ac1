"""events.k8s.io/v1 Events: eventTime decoding, validation, and the core/v1 view kubectl reads."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
from tests.kube_fixtures import raw, status_body
from tests.sandbox.kube_fake.support import request

EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def event(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.attached", "namespace": "default"},
        "eventTime": "2026-11-22T02:51:19.123456Z",
        "reportingController": "lbhc.dev/controller",
        "reportingInstance": "lbhc-7d9f-abcde",
        "action": "Attach",
        "reason": "HealthCheckAttached",
        "note": "attached the shared health check to target pool a1b2",
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Service", "name": "web", "namespace": "default"},
    }
    for key, value in overrides.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


@pytest.mark.parametrize(
    ("event_time", "code"),
    [
        ("2026-11-22T02:51:19.123456Z", 201),
        ("2026-11-22T02:51:19.123456+05:30", 201),
        ("2026-11-22T02:51:19.000000-00:00", 201),
        ("2026-11-22T02:51:19.12345Z", 400),  # 5 fractional digits
        ("2026-11-22T02:51:19.123456789Z", 400),  # 9: Go's RFC3339Nano, as time.Time emits
        ("2026-11-22T02:51:19Z", 400),  # none: datetime.isoformat() at microsecond 0
        ("2026-11-22T02:51:19.123456", 400),  # no zone: a naive datetime
        ("2026-13-22T02:51:19.123456Z", 400),  # not a date
        (1764000000, 400),
    ],
)
def test_event_time_must_be_a_micro_time(
    kube_server: KubeFakeServer, event_time: Any, code: int
) -> None:
    status, body = request(kube_server, "POST", EVENTS, event(eventTime=event_time))

    assert status == code, body
    if code == 400:
        # Rejected while decoding, before validation runs: 400 BadRequest (kubernetes#89156).
        assert (body["reason"], body["code"]) == ("BadRequest", 400)
        assert body["message"].startswith(
            'Event in version "v1" cannot be handled as a Event: eventTime: parsing time '
        )
        assert '"2006-01-02T15:04:05.000000Z07:00"' in body["message"]
    else:
        assert body["eventTime"] == event_time  # stored as sent


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"eventTime": None}, "eventTime", "eventTime: Required value"),
        ({"reportingController": None}, "reportingController", "reportingController: Required"),
        ({"reportingController": "Not A Name"}, "reportingController", "qualified name"),
        ({"reportingInstance": ""}, "reportingInstance", "reportingInstance: Required value"),
        ({"action": None}, "action", "action: Required value"),
        ({"reason": None}, "reason", "reason: Required value"),
        ({"reason": "x" * 129}, "reason", "at most 128 characters"),
        ({"note": "x" * 1025}, "note", "at most 1024 bytes"),
        ({"type": "Info"}, "type", 'type: Invalid value: "": has invalid value: Info'),
        ({"regarding": None}, "regarding", "regarding: Required value"),
        (
            {"series": {"count": 1, "lastObservedTime": "2026-11-22T02:51:20.000000Z"}},
            "series.count",
            "should be at least 2",
        ),
        ({"series": {"count": 2}}, "series.lastObservedTime", "Required value"),
        ({"deprecatedCount": 3}, "deprecatedCount", "needs to be unset"),
        (
            {"regarding": {"kind": "Service", "name": "web", "namespace": "shop"}},
            "involvedObject.namespace",
            "does not match event.namespace",
        ),
    ],
)
def test_event_validation_is_422_naming_the_field(
    kube_server: KubeFakeServer, overrides: dict[str, Any], field: str, message: str
) -> None:
    status, body = request(kube_server, "POST", EVENTS, event(**overrides))

    assert (status, body["reason"]) == (422, "Invalid"), body
    assert body["message"].startswith('Event.events.k8s.io "web.attached" is invalid: ')
    assert message in body["message"]
    assert field in {c["field"] for c in body["details"]["causes"]}
    assert body["details"]["group"] == "events.k8s.io"


def test_node_events_live_in_default(kube_server: KubeFakeServer) -> None:
    node_ref = {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    ok = request(kube_server, "POST", EVENTS, event(regarding=node_ref))
    elsewhere = event(regarding=node_ref, metadata={"name": "n1.x", "namespace": "kube-system"})
    wrong = request(
        kube_server, "POST", "/apis/events.k8s.io/v1/namespaces/kube-system/events", elsewhere
    )
    assert (ok[0], wrong[0]) == (201, 422)


def test_series_update_and_patch(kube_server: KubeFakeServer) -> None:
    created = request(kube_server, "POST", EVENTS, event())[1]
    series = {"count": 2, "lastObservedTime": "2026-11-22T02:52:19.000001Z"}

    status, patched = request(
        kube_server,
        "PATCH",
        f"{EVENTS}/web.attached",
        {"series": series},
        "application/merge-patch+json",
    )
    bad = request(
        kube_server,
        "PATCH",
        f"{EVENTS}/web.attached",
        {"series": {"count": 3, "lastObservedTime": "2026-11-22T02:53:19Z"}},
        "application/merge-patch+json",
    )

    assert status == 200 and patched["series"] == series
    assert patched["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert bad[0] == 400


def test_core_view_converts_as_the_apiserver_does(
    kube_fake: KubeFake, kube_server: KubeFakeServer, core: Any
) -> None:
    request(kube_server, "POST", EVENTS, event())
    other = event(regarding={"kind": "Node", "name": "n1"})
    other["metadata"]["name"] = "n1.tainted"
    request(kube_server, "POST", EVENTS, other)

    listed = raw(
        core.list_event_for_all_namespaces(
            field_selector="involvedObject.kind=Service", _preload_content=False
        )
    )
    one = raw(core.read_namespaced_event("web.attached", "default", _preload_content=False))

    assert [i["metadata"]["name"] for i in listed["items"]] == ["web.attached"]
    assert (listed["kind"], listed["apiVersion"]) == ("EventList", "v1")
    assert (one["kind"], one["apiVersion"]) == ("Event", "v1")
    assert one["message"] == "attached the shared health check to target pool a1b2"
    assert one["involvedObject"] == event()["regarding"]
    assert one["reportingComponent"] == "lbhc.dev/controller"
    assert (one["firstTimestamp"], one["lastTimestamp"], one["source"]) == (None, None, {})
    assert (one["reason"], one["type"], one["action"]) == (
        "HealthCheckAttached",
        "Normal",
        "Attach",
    )
    assert one["eventTime"] == "2026-11-22T02:51:19.123456Z"
    stored = kube_fake.get("Event", "default", "web.attached")
    assert stored is not None and stored["apiVersion"] == "events.k8s.io/v1"
    # The core/v1 view is read-only in the fake.
    assert request(kube_server, "POST", "/api/v1/namespaces/default/events", one)[0] == 405


def test_seeding_a_core_event_stores_the_events_form(kube_fake: KubeFake) -> None:
    kube_fake.upsert(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "old", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": "n1"},
            "message": "from a v1 recorder",
            "source": {"component": "kubelet"},
            "count": 2,
        }
    )

    stored = kube_fake.get("Event", "default", "old")

    assert stored is not None
    assert stored["regarding"] == {"kind": "Node", "name": "n1"}
    assert (stored["note"], stored["deprecatedCount"]) == ("from a v1 recorder", 2)
    assert stored["deprecatedSource"] == {"component": "kubelet"}


def test_the_python_client_reformats_event_time(kube_server: KubeFakeServer) -> None:
    # kubernetes 37.x validates even a dict body into its pydantic model and re-serialises
    # eventTime with datetime.isoformat(): at microsecond 0 the fraction disappears and a real
    # apiserver rejects the Event. Send raw bytes (or a preformatted string via call_api).
    config = client.Configuration()
    config.host = kube_server.url
    api_client: Any = client.ApiClient(config)
    events: Any = client.EventsV1Api(api_client)  # raw dict bodies, on purpose
    try:
        created = raw(events.create_namespaced_event("default", event(), _preload_content=False))
        with pytest.raises(ApiException) as err:
            events.create_namespaced_event(
                "default",
                event(eventTime="2026-11-22T02:51:19.000000Z", metadata={"name": "zero"}),
                _preload_content=False,
            )
    finally:
        api_client.close()

    assert created["eventTime"] == "2026-11-22T02:51:19.123456+00:00"  # reformatted, still valid
    assert err.value.status == 400
    assert 'parsing time "2026-11-22T02:51:19+00:00"' in status_body(err.value)["message"]
