"""The real controller (lbhc run's code) against the kube fake holding hostile objects: huge
labels and annotations, Services with no ports or 100, names and UIDs at Kubernetes' length
limits, foreign or missing providerIDs, malformed opt-out values, kube-proxy versions of odd
shapes. It must keep converging the good Services, never fail a pass, and name each odd
object in an Event or a log line."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from lbhc.controller.app import ControllerApp
from tests.builders import kube
from tests.controller.harness import World, world
from tests.waiting import wait_for
from tests.worlds import add_load_balanced_service

CONVERGE_SEC = 60.0  # generous: a shared 2-core machine


def add_service(w: World, obj: dict[str, Any]) -> str:
    """`obj` in the API and its load balancer in GCE, as the cloud provider would make it."""
    return add_load_balanced_service(w.kube, w.compute, obj)


def events(w: World, reason: str) -> dict[str, str]:
    """regarding name -> note, for the Events with `reason`."""
    return {
        e["regarding"]["name"]: e.get("note", "")
        for e in w.kube.objects("Event")
        if e.get("reason") == reason
    }


def failed_passes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "reconcile failed" in r.getMessage()]


def first_of(*conditions: Callable[[], Any], what: str) -> None:
    """Wait until any condition holds: a test whose failure shows up as a log line fails as
    soon as that line is written instead of waiting out the whole timeout."""
    wait_for(lambda: any(c() for c in conditions), timeout=CONVERGE_SEC, what=what)


def test_admissible_hostile_objects_converge_and_each_is_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with world() as w:
        for obj in (
            kube.node("huge-labels", kube.many_labels(10_000)),  # about 1 MB
            kube.node(kube.LONG_NODE_NAME),
            kube.node("no-provider-id", kube.with_provider_id(None)),
            kube.node("on-aws", kube.with_provider_id("aws:///us-east-1a/i-0123456789abcdef0")),
            kube.node("other-project", kube.with_provider_id("gce://elsewhere/us-east1-b/vm-1")),
            kube.node("short-gce", kube.with_provider_id("gce://")),
        ):
            w.kube.upsert(obj)
        good = [w.add_service(f"good-{i}") for i in range(2)]
        eligible = {
            "default/no-ports": add_service(w, kube.service("no-ports", kube.with_ports(0))),
            "default/many-ports": add_service(w, kube.service("many-ports", kube.with_ports(100))),
            f"{kube.LONG_NAMESPACE}/{kube.LONG_SERVICE_NAME}": add_service(
                w, kube.long_named_service()
            ),
            "default/big-annotation": add_service(
                w, kube.service("big-annotation", kube.with_annotations({"x": "y" * 250_000}))
            ),
            "default/opt-out-maybe": add_service(
                w,
                kube.service("opt-out-maybe", kube.with_annotations({"lbhc.dev/ignore": "maybe"})),
            ),
            "default/opt-out-empty": add_service(
                w, kube.service("opt-out-empty", kube.with_annotations({"lbhc.dev/ignore": ""}))
            ),
        }
        opted_out = add_service(
            w,
            kube.service("opt-out-shouting", kube.with_annotations({"lbhc.dev/ignore": " TRUE "})),
        )
        app = w.start()

        wait_for(
            lambda: all(w.attached(p) for p in [*good, *eligible.values()]),
            timeout=CONVERGE_SEC,
            what="every eligible Service attached, hostile ones included",
        )
        assert w.pool_checks(opted_out) == []
        names = {key.split("/")[1] for key in eligible}
        attached = wait_for(  # Events are sent in the background, after the attaches
            lambda: (found := events(w, "HealthCheckAttached")).keys() >= names and found,
            timeout=CONVERGE_SEC,
            what="a HealthCheckAttached Event on each hostile Service",
        )
        for key, pool in eligible.items():
            name = key.split("/")[1]
            assert pool in attached[name] and key in attached[name], attached[name]

        # Watches carry hostile objects too: a 1 MB Node changing, then a new Service.
        huge = kube.node("huge-labels", kube.many_labels(10_001))
        w.kube.upsert(huge)
        late = w.add_service("late")
        wait_for(lambda: w.attached(late), timeout=CONVERGE_SEC, what="a late Service attached")
        assert_never_failed(app, caplog)


def assert_never_failed(app: ControllerApp, caplog: pytest.LogCaptureFixture) -> None:
    assert app.controller is not None and app.controller.passes >= 1
    assert failed_passes(caplog) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


UNKNOWN_IMAGES = {
    "kp-latest": "registry.k8s.io/kube-proxy:latest",
    "kp-junk": "registry.k8s.io/kube-proxy:" + "x" * 10_000,
    "kp-custom-tag": "registry.k8s.io/kube-proxy:my-build",
}
KNOWN_IMAGES = {
    "kp-digest": "registry.k8s.io/kube-proxy@sha256:" + "a" * 64,
    "kp-gke": "registry.k8s.io/kube-proxy:v1.31.4-gke.100",
    "kp-10k-suffix": "registry.k8s.io/kube-proxy:v1.31.4-" + "x" * 10_000,
}


def test_odd_versions_fall_back_naming_each_node_then_converge_when_they_go(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with world() as w:
        for name, image in (UNKNOWN_IMAGES | KNOWN_IMAGES).items():
            w.kube.upsert(kube.node(name))
            w.kube.upsert(kube.kube_proxy_pod(name, image=image))
        w.kube.upsert(kube.node("kubelet-latest", kubelet="latest"))
        unknown = {*UNKNOWN_IMAGES, "kubelet-latest"}
        pools = [w.add_service(f"good-{i}") for i in range(2)]
        app = w.start()

        too_old = wait_for(
            lambda: (found := events(w, "KubeProxyTooOld")).keys() >= unknown and found,
            timeout=CONVERGE_SEC,
            what="a KubeProxyTooOld Event on every node of unknown version",
        )
        assert too_old.keys() == unknown  # the odd-but-parsable ones are not blamed
        assert "unknown ('registry.k8s.io/kube-proxy:latest')" in too_old["kp-latest"]
        assert len(too_old["kp-junk"].encode()) <= 1024  # cut to the API's limit, still sent
        # Every node is named above; this note may be cut at 1 kB by a 10 kB version
        # (test_versions.py::test_the_fallback_reason_names_every_node_within_an_event_note).
        fallback = wait_for(lambda: events(w, "FallbackEntered").get("lbhc"), what="Fallback")
        assert "kp-custom-tag" in fallback
        assert not any(w.attached(p) for p in pools)

        for name in unknown:
            w.kube.delete("Node", None, name)
        wait_for(
            lambda: all(w.attached(p) for p in pools),
            timeout=CONVERGE_SEC,
            what="attached again once the unknown nodes are gone",
        )
        assert "lbhc" in events(w, "FallbackLeft")
        assert_never_failed(app, caplog)


def event_or_its_refusal(
    w: World, caplog: pytest.LogCaptureFixture, reason: str, regarding: str
) -> dict[str, str]:
    first_of(
        lambda: regarding in events(w, reason),
        lambda: any(
            f"event {reason} on" in r.getMessage() and "not recorded" in r.getMessage()
            for r in caplog.records
        ),
        what=f"a {reason} Event on {regarding[:40]}, or its refusal logged",
    )
    return events(w, reason)


def test_an_event_about_a_node_with_a_253_character_name_is_recorded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with world() as w:
        for name in (kube.LONG_NODE_NAME, "node-0", "node-1", "node-2"):
            w.kube.upsert(kube.node(name))
            w.kube.upsert(kube.kube_proxy_pod(name, version="v1.31.4"))
        pool = w.add_service("web")
        w.start()
        wait_for(lambda: w.attached(pool), timeout=CONVERGE_SEC, what="convergence")
        w.kube.taint(kube.LONG_NODE_NAME, "ToBeDeletedByClusterAutoscaler", "1763776800")
        found = event_or_its_refusal(w, caplog, "Draining", kube.LONG_NODE_NAME)
        assert kube.LONG_NODE_NAME in found


def test_an_event_whose_note_holds_multibyte_characters_is_recorded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with world() as w:
        w.kube.upsert(kube.node("accented"))
        w.kube.upsert(kube.kube_proxy_pod("accented", image="kube-proxy:" + "ü" * 700))
        w.add_service("web")
        w.start()
        found = event_or_its_refusal(w, caplog, "KubeProxyTooOld", "accented")
        assert "accented" in found


def test_a_version_of_thousands_of_digits_does_not_stop_reconciling(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with world() as w:
        w.kube.upsert(kube.node("digits"))
        w.kube.upsert(kube.kube_proxy_pod("digits", image="kube-proxy:v1." + "1" * 5_000))
        w.add_service("web")
        app = w.start()
        first_of(
            lambda: app.controller is not None and app.controller.last_plan is not None,
            lambda: failed_passes(caplog),
            what="a pass planned, or a pass failed",
        )
        assert failed_passes(caplog) == []


def test_an_undecodable_service_does_not_stall_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with world() as w:
        pools = [w.add_service(f"good-{i}") for i in range(2)]
        w.kube.upsert(kube.service("bad", kube.undecodable_annotation()))
        w.start()

        def list_failed() -> bool:
            return any("services watch failed" in r.getMessage() for r in caplog.records)

        first_of(lambda: all(w.attached(p) for p in pools), list_failed, what="converged, or stuck")
        assert all(w.attached(p) for p in pools)
        assert any("default/bad" in r.getMessage() for r in caplog.records)


def test_an_undecodable_update_is_a_gap_for_that_object_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Over the watch, not the list: a Service whose next version cannot be read. Its pool
    keeps the check (a gap withholds removals), other Services still attach, the log names
    it, and a readable version ends the gap."""
    caplog.set_level(logging.WARNING)
    with world() as w:
        bad_pool = w.add_service("flaky")
        app = w.start()
        wait_for(lambda: w.attached(bad_pool), timeout=CONVERGE_SEC, what="convergence")
        unreadable = kube.service("flaky", kube.undecodable_annotation())
        unreadable["spec"]["externalTrafficPolicy"] = "Local"  # would detach, if it were read
        w.kube.upsert(unreadable)
        new_pool = w.add_service("later")
        wait_for(lambda: w.attached(new_pool), timeout=CONVERGE_SEC, what="others still attach")
        assert w.attached(bad_pool), "a Service lbhc could not read was acted on"
        assert any("default/flaky could not be decoded" in r.getMessage() for r in caplog.records)
        assert app.cache is not None
        assert any("(default/flaky: " in gap for gap in app.cache.snapshot().gaps)
        w.kube.upsert(kube.service("flaky", policy="Local"))  # readable again: now it is read
        wait_for(lambda: not w.attached(bad_pool), timeout=CONVERGE_SEC, what="the detach")
        assert failed_passes(caplog) == []
