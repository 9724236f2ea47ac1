"""`lbhc status` end to end: the real CLI, a cluster snapshot file (with a kube-proxy
DaemonSet), and the Compute fake over a real socket, including GCE's own getHealth view."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from lbhc.model.cloud import firewall_to_json
from lbhc.model.cluster import DaemonSet
from lbhc.planner.hold import HOLD_ANNOTATION
from tests.builders import (
    PROJECT,
    TO_BE_DELETED,
    kube_proxy_daemonset,
    kube_proxy_pod,
    names,
    node,
    our_firewall,
    pool_for,
    service,
)
from tests.cli.test_oneshot import gce_args, kubectl_list, run
from tests.conftest import ComputeEnv
from tests.worlds import add_load_balancer, instance_url

_, NAME, URL = names()
IMAGE = "registry.k8s.io/kube-proxy:{}"


def write_snapshot(tmp_path: Path, *objects: Any) -> Path:
    listing = kubectl_list(*objects)
    for item in listing["items"]:  # a DaemonSet's apiVersion is apps/v1
        if item["kind"] == DaemonSet.__name__:
            item["apiVersion"] = "apps/v1"
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(listing))
    return path


def scale_down_cluster(tmp_path: Path) -> Path:
    """node-1 modern and serving, node-2 marked by the autoscaler, old-1 marked with a
    kube-proxy too old to drain; readiness still on /healthz."""
    web, local = service("web"), service("local", policy="Local")
    return write_snapshot(
        tmp_path,
        node("node-1"),
        node("node-2", taints=TO_BE_DELETED, taint_value="1795306688"),
        node("old-1", kubelet="v1.29.1", taints=TO_BE_DELETED),
        web,
        local,
        kube_proxy_pod("node-1", image=IMAGE.format("v1.31.4"), owner_uid="ds-uid-1"),
        kube_proxy_pod("node-2", image=IMAGE.format("v1.31.4"), ready=False, owner_uid="ds-uid-1"),
        kube_proxy_pod("old-1", image=IMAGE.format("v1.27.3"), owner_uid="ds-uid-1"),
        kube_proxy_daemonset(readiness="/healthz"),
    )


def attach_everything(compute: ComputeEnv) -> str:
    """web's pool carries the check, with node-1 and node-2 in it; old-1 is no longer in it;
    lbhc's firewall lets the health checkers reach them, as lbhc makes it with the check."""
    web = service("web")
    compute.fake.add_http_health_check(PROJECT, NAME, port=10256, requestPath="/healthz")
    rule = firewall_to_json(our_firewall())
    compute.fake.add_firewall(PROJECT, NAME, **{k: v for k, v in rule.items() if k != "name"})
    return add_load_balancer(
        compute.fake, pool_for(web).name, web.key, nodes=("node-1", "node-2"), health_checks=(URL,)
    )


def test_status_text_tells_draining_from_not_draining(
    compute: ComputeEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attach_everything(compute)
    compute.add_service_pool(service("local", policy="Local"))
    path = scale_down_cluster(tmp_path)

    code, out, err = run(capsys, "status", "--cluster-snapshot", str(path), *gce_args(compute))

    assert code == 0, err
    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line.startswith(("node-", "old-"))
    }
    assert rows["node-1"][1:3] == ["v1.31.4", "pod-image"] and "serving" in rows["node-1"]
    # web's pool drains node-2; the Local pool only once its endpoints there are gone.
    assert "partially-draining" in rows["node-2"] and "expected-unready" in rows["node-2"]
    assert "Note: node node-2 is partially-draining" in out
    assert "not-draining" in rows["old-1"]
    assert "Warning: node old-1 is not-draining" in out
    assert "kube-proxy: healthy" in out
    # The template (v1.31.4) decides what its Pods will run: /livez; old-1's Pod, not yet
    # replaced, still runs v1.27.3 and is reported rather than ignored.
    assert "readiness-on-healthz" in out
    assert "pods-on-older-image" in out and "(on old-1)" in out
    services = {line.split()[0]: line for line in out.splitlines() if line.startswith("default/")}
    assert " attached " in services["default/web"]
    assert "not-applicable" in services["default/local"]


def test_status_json_with_gce_health(
    compute: ComputeEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool_name = attach_everything(compute)
    compute.fake.set_instance_health(instance_url("node-2"), "UNHEALTHY")
    path = scale_down_cluster(tmp_path)
    code, out, err = run(
        capsys,
        "status",
        "--cluster-snapshot",
        str(path),
        "--lb-health",
        "--output",
        "json",
        *gce_args(compute),
    )
    assert code == 0, err
    body = json.loads(out)
    nodes = {n["node"]: n for n in body["nodes"]}
    assert nodes["node-1"]["lbHealth"] == "HEALTHY"
    assert nodes["node-2"]["lbHealth"] == "UNHEALTHY"
    # One look cannot tell when it turned UNHEALTHY, only that it was by now.
    assert nodes["node-2"]["unhealthyInLb"]["exact"] is False
    assert nodes["node-1"]["unhealthyInLb"] is None
    # The bound is the attached check's own: the fake's default 5 s interval x (2 + 1).
    assert nodes["node-2"]["drain"] == {
        "state": "draining",
        "reason": nodes["node-2"]["drain"]["reason"],
        "unknownBecauseReplacedBy": "",
        "markedAt": "2026-11-22T00:18:08Z",
        "boundSeconds": 15,
        "verified": True,  # probes admitted, node-1 HEALTHY there, node-2 UNHEALTHY in it
        "evidence": f"GCE's getHealth: UNHEALTHY in target pool {pool_name}",
        "poolsNotDraining": [],
        "takenOutBy": [],
        # Read UNHEALTHY (now) after its mark: when its pool was seen to let it go.
        "drainedAt": pytest.approx(time.time(), abs=120),
    }
    # old-1 is not a member of the pool: GCE answers 400, status says so plainly.
    assert nodes["old-1"]["lbHealth"] == "not in the pool"
    assert body["kubeProxyHealth"]["counts"]["expected-unready"] == 1
    assert body["drainCounts"]["not-draining"] == 1
    assert body["failOpen"] is None  # node-1 serves: the check can pass
    # Read-only: status never mutates anything.
    assert compute.fake.mutating_requests() == []

    compute.fake.set_instance_health(instance_url("node-1"), "UNHEALTHY")  # now every serving one
    code, out, err = run(
        capsys, "status", "--cluster-snapshot", str(path), "--lb-health", *gce_args(compute)
    )
    assert code == 0, err
    assert "Warning: every serving node (1) is UNHEALTHY in target pool" in out
    assert "fails open" in out


def test_status_shows_each_nodes_deletion_hold(
    compute: ComputeEnv,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With hold.deletion on, each node's hold as the controller decides it: node-1 serving
    and drainable (held, lbhc's annotation on it), node-2 marked and UNHEALTHY in its pool
    (to be released), old-1 marked with a kube-proxy too old to drain it (never held)."""
    attach_everything(compute)
    compute.fake.set_instance_health(instance_url("node-2"), "UNHEALTHY")
    path = scale_down_cluster(tmp_path)
    listing = json.loads(path.read_text())
    for item in listing["items"]:
        if item["kind"] == "Node" and item["metadata"]["name"] in ("node-1", "node-2"):
            item["metadata"]["annotations"] = {HOLD_ANNOTATION: "held", "other": "kept"}
    path.write_text(json.dumps(listing))
    monkeypatch.setenv("LBHC_HOLD_DELETION", "on")
    argv = ["status", "--cluster-snapshot", str(path), "--lb-health", *gce_args(compute)]
    code, out, err = run(capsys, *argv, "--output", "json")
    assert code == 0, err
    holds = json.loads(out)["holds"]
    # A snapshot file may be partial: no hold is added or taken off on it, but releases,
    # which only shorten a hold, are decided.
    assert holds["holds"] == 2 and holds["complete"] is False
    by_node = {h["node"]: h for h in holds["nodes"]}
    assert by_node["node-1"]["state"] == "held"
    assert by_node["node-1"]["reason"].startswith("unchanged: the cluster was not read in full")
    assert by_node["node-2"]["state"] == "released"
    assert by_node["node-2"]["release"] == "drained"
    assert by_node["node-2"]["reason"].startswith("released: unhealthy in every load balancer")
    assert by_node["old-1"]["state"] == "not-held"
    assert by_node["old-1"]["reason"].startswith("not held: nothing can drain it")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    section = out.split("DELETION HOLDS (2 node(s) carry lbhc's annotation)\n", 1)[1]
    rows = {line.split()[0]: line.split()[1] for line in section.splitlines()[1:4]}
    assert rows == {"node-1": "held", "node-2": "released", "old-1": "not-held"}


def test_status_says_nothing_of_holds_while_the_hold_is_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], compute: ComputeEnv
) -> None:
    attach_everything(compute)
    path = scale_down_cluster(tmp_path)
    code, out, err = run(
        capsys, "status", "--cluster-snapshot", str(path), "--output", "json", *gce_args(compute)
    )
    assert code == 0, err
    assert json.loads(out)["holds"] is None
