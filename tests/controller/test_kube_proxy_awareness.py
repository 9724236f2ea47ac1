"""The controller's kube-proxy awareness against the kube-apiserver fake over HTTP: the
readiness policy in audit and enforce mode (including a lost race), drain Events and the
context-aware kube-proxy health condition, as metrics and Events."""

from __future__ import annotations

import urllib.request
from typing import Any

from lbhc.controller.app import ControllerApp
from tests.builders import kube as kube_builders
from tests.builders.kube import kube_proxy_daemonset
from tests.controller.harness import World, node_obj, world
from tests.waiting import wait_for

DS_UID = "0f6b7a52-4f1e-4d1c-9a59-1b2c3d4e5f60"
LONG_AGO = "2026-01-01T00:00:00Z"


def seed_kube_proxy(w: World, version: str = "v1.31.4", **ds: Any) -> None:
    """A kube-proxy DaemonSet whose Pods run on every node, all Ready."""
    manifest = kube_proxy_daemonset(uid=DS_UID, **ds)
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):  # fields a patch must not lose
        if probe in container:
            container[probe].update({"periodSeconds": 10, "failureThreshold": 3})
    w.kube.upsert(manifest)
    for node in w.kube.objects("Node"):
        name = node["metadata"]["name"]
        pod = kube_builders.kube_proxy_pod(name, version=version, ready=True, owner_uid=DS_UID)
        pod["metadata"]["creationTimestamp"] = LONG_AGO  # past the start-up grace period
        w.kube.upsert(pod)


def metrics(app: ControllerApp) -> str:
    assert app.http is not None
    return urllib.request.urlopen(f"{app.http.url}/metrics").read().decode()


def probe_path(w: World, name: str = "kube-proxy", probe: str = "readinessProbe") -> Any:
    ds = w.kube.get("DaemonSet", "kube-system", name)
    assert ds is not None
    return (
        ds["spec"]["template"]["spec"]["containers"][0]
        .get(probe, {})
        .get("httpGet", {})
        .get("path")
    )


def test_audit_reports_a_healthz_readiness_probe_and_never_writes() -> None:
    with world() as w:
        seed_kube_proxy(w, readiness="/healthz", liveness="/healthz")
        w.add_service("web")
        app = w.start()
        found = wait_for(lambda: w.events("ReadinessOnHealthz"), what="an audit Event")
        assert found[0]["regarding"]["kind"] == "DaemonSet" and found[0]["type"] == "Warning"
        wait_for(lambda: w.events("LivenessOnHealthz"), what="the liveness warning")
        text = metrics(app)
        assert 'lbhc_kube_proxy_readiness_findings{kind="readiness-on-healthz"} 1.0' in text
        assert 'lbhc_kube_proxy_readiness_findings{kind="liveness-on-healthz"} 1.0' in text
        assert probe_path(w) == "/healthz"
        patches = [e for e in w.kube.journal if e.method == "PATCH"]
        assert patches == []


def test_enforce_patches_only_the_managed_readiness_path_and_survives_a_conflict() -> None:
    with world() as w:
        seed_kube_proxy(w, readiness="/healthz", liveness="/healthz")
        # Not selected by readiness_selector: must never be touched.
        w.kube.upsert(kube_proxy_daemonset("other-proxy", uid="other", labels={"app": "other"}))
        w.add_service("web")
        # The first patch loses a race with another writer (409), as a real apiserver says
        # when the resourceVersion in the patch is stale.
        w.kube.faults.fail_requests(1, 409, path_contains="/daemonsets/kube-proxy")
        w.start(settings={"readiness_policy": "enforce"}, readiness_settle_sec=0.2)

        wait_for(lambda: w.events("ReadinessPatchConflict"), what="the conflict reported")
        wait_for(lambda: probe_path(w) == "/livez", what="the readiness path patched")
        wait_for(lambda: w.events("ReadinessProbePatched"), what="a patched Event")

        ds = w.kube.get("DaemonSet", "kube-system", "kube-proxy")
        container = ds["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
        assert container["readinessProbe"] == {
            "httpGet": {"path": "/livez", "port": 10256},
            "periodSeconds": 10,
            "failureThreshold": 3,
        }
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"  # reported, not changed
        assert probe_path(w, "other-proxy") == "/healthz"


def test_scale_down_is_reported_as_draining_not_as_a_kube_proxy_outage() -> None:
    with world() as w:
        seed_kube_proxy(w, readiness="/healthz")
        pool = w.add_service("web")
        app = w.start()
        wait_for(lambda: w.attached(pool), what="converged")

        # The autoscaler marks node-1; with readiness on /healthz its kube-proxy turns unready.
        w.kube.taint("node-1", "ToBeDeletedByClusterAutoscaler", "1795306688", "NoSchedule")
        pod = w.kube.get("Pod", "kube-system", "kube-proxy-node-1")
        assert pod is not None
        pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        w.kube.upsert(pod)

        draining = wait_for(lambda: w.events("Draining"), what="a Draining Event")
        assert draining[0]["regarding"]["name"] == "node-1"
        wait_for(
            lambda: 'lbhc_node_drain_state{state="draining"} 1.0' in metrics(app),
            what="the drain metric",
        )
        text = metrics(app)
        assert 'lbhc_kube_proxy_pods{state="expected-unready"} 1.0' in text
        assert 'lbhc_kube_proxy_health_condition{status="True"} 1.0' in text
        assert w.events("KubeProxyUnhealthy") == []

        # A real failure on a node that is not being deleted pages.
        pod = w.kube.get("Pod", "kube-system", "kube-proxy-node-2")
        assert pod is not None
        pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        w.kube.upsert(pod)
        unhealthy = wait_for(lambda: w.events("KubeProxyUnhealthy"), what="an unhealthy Event")
        assert "1 unready (node-2)" in unhealthy[0]["note"]
        assert 'lbhc_kube_proxy_health_condition{status="False"} 1.0' in metrics(app)


def test_an_old_kube_proxy_on_a_marked_node_is_a_not_draining_warning() -> None:
    with world() as w:
        seed_kube_proxy(w, version="v1.29.4", readiness="/healthz")
        pool = w.add_service("web")
        w.kube.upsert(node_obj("node-9"))
        w.kube.upsert(kube_builders.kube_proxy_pod("node-9", version="v1.27.3", ready=True))
        w.start()
        wait_for(lambda: w.attached(pool), what="converged")
        w.kube.taint("node-9", "ToBeDeletedByClusterAutoscaler", "1795306688", "NoSchedule")
        warning = wait_for(lambda: w.events("NotDraining"), what="a NotDraining Event")
        assert warning[0]["type"] == "Warning" and "too old" in warning[0]["note"]
