"""`lbhc plan` / `lbhc apply` end to end: the real CLI, a cluster snapshot file, and the
Compute fake over a real socket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lbhc.cli import main
from lbhc.cli.parser import EXIT_ERROR, EXIT_USAGE
from lbhc.model.cluster import Service
from lbhc.settings import environment_names
from tests.builders import (
    KUBE_SYSTEM_UID,
    PROJECT,
    REGION,
    kube,
    kube_proxy_pod,
    names,
    node,
    service,
)
from tests.conftest import ComputeEnv

_, NAME, URL = names()


def kubectl_list(*objects: BaseModel) -> dict[str, Any]:
    """What `kubectl get nodes,services,pods -A -o json` prints (plus the kube-system ns and
    default/kubernetes, which every cluster has)."""
    items = [
        {"apiVersion": "v1", "kind": type(o).__name__, **o.model_dump(by_alias=True)}
        for o in objects
    ]
    items.append(kube.namespace("kube-system", KUBE_SYSTEM_UID))
    items.append(kube.kubernetes_service())
    return {"apiVersion": "v1", "kind": "List", "items": items}


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Any:
    def write(*objects: BaseModel) -> Path:
        path = tmp_path / "cluster.json"
        path.write_text(json.dumps(kubectl_list(*objects)))
        return path

    return write


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def gce_args(env: ComputeEnv | str) -> list[str]:
    url = env if isinstance(env, str) else env.url
    return [
        "--project",
        PROJECT,
        "--region",
        REGION,
        "--node-tags",
        "gke-node",
        "--gce-endpoint",
        url,
    ]


def seed(env: ComputeEnv, *svcs: Service) -> list[str]:
    return [env.add_service_pool(s) for s in svcs]


def test_plan_makes_no_mutating_call_and_reports_changes(
    compute: ComputeEnv, snapshot_file: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    svcs = (service("web"), service("api", namespace="prod"), service("local", policy="Local"))
    pools = seed(compute, *svcs)
    path = snapshot_file(node(), *svcs)

    code, out, _ = run(
        capsys, "plan", "--cluster-snapshot", str(path), "--detailed-exitcode", *gce_args(compute)
    )
    assert code == 2
    assert f"+ HttpHealthCheck {NAME}" in out and f"+ Firewall {NAME}" in out
    assert f"> TargetPool {pools[0]}" in out and f"> TargetPool {pools[1]}" in out
    assert pools[2] not in out  # the Local pool is left alone
    assert "Plan: 2 to create, 0 to update, 2 to attach" in out
    assert compute.fake.mutating_requests() == []


def test_plan_json_has_the_documented_shape(
    compute: ComputeEnv, snapshot_file: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    (pool,) = seed(compute, service("web"))
    code, out, _ = run(
        capsys,
        "plan",
        "--output",
        "json",
        "--cluster-snapshot",
        str(snapshot_file(node(), service("web"))),
        *gce_args(compute),
    )
    body = json.loads(out)
    assert code == 0
    assert set(body) >= {"changes", "summary", "fallback"}
    assert body["fallback"] is None
    assert {(c["action"], c["kind"], c["name"]) for c in body["changes"]} == {
        ("create", "HttpHealthCheck", NAME),
        ("create", "Firewall", NAME),
        ("attach", "TargetPool", pool),
    }
    assert all(set(c) == {"action", "kind", "name", "reason", "diff"} for c in body["changes"])
    attach = next(c for c in body["changes"] if c["action"] == "attach")
    assert attach["diff"]["healthChecks"] == {"from": [], "to": [URL]}
    assert body["summary"]["create"] == 2 and body["summary"]["attach"] == 1


def test_apply_then_plan_shows_no_changes(
    compute: ComputeEnv, snapshot_file: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pools = seed(compute, service("a"), service("b"))
    path = snapshot_file(node(), service("a"), service("b"))
    code, out, _ = run(capsys, "apply", "--cluster-snapshot", str(path), *gce_args(compute))
    assert code == 0, out
    assert "Applied: 4 done, 0 failed, 0 skipped." in out
    assert all(compute.pool_checks(p) == [URL] for p in pools)

    compute.fake.clear_journal()
    code, out, _ = run(
        capsys, "plan", "--detailed-exitcode", "--cluster-snapshot", str(path), *gce_args(compute)
    )
    assert code == 0 and "No changes." in out
    reads = [e for e in compute.fake.journal]
    assert all(not e.mutating for e in reads)
    # get check, get firewall, one page of checks (coverage), one of pools, one of rules, and
    # the network with its effective firewall (probe reach): none per pool, and no backend
    # services (a plan writes nothing there; status and the controller read them)
    assert len(reads) == 7


def test_fallback_shows_in_plan_and_names_the_node(
    compute: ComputeEnv, snapshot_file: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(compute, service("web"))
    path = snapshot_file(
        node("new"),
        node("old"),
        service("web"),
        kube_proxy_pod("old", image="registry.k8s.io/kube-proxy:v1.6.13"),
    )
    code, out, _ = run(
        capsys, "plan", "--output", "json", "--cluster-snapshot", str(path), *gce_args(compute)
    )
    body = json.loads(out)
    assert code == 0
    assert [n["name"] for n in body["fallback"]["nodes"]] == ["old"]
    assert body["fallback"]["nodes"][0]["source"] == "pod-image"
    assert body["changes"] == []


SETTINGS_FILES = [
    pytest.param(
        f"gce:\n  project: {PROJECT}\n  region: wrong-region\n  node_tags: [gke-node]\n",
        "LBHC_GCE_REGION",
        [],
        id="grouped",
    ),
    # An upgrade must not stop a ConfigMap written for 0.1: its flat keys and variables still
    # work, and stderr says what to write instead, once per old spelling (project, region and
    # node_tags in the file, LBHC_REGION).
    pytest.param(
        f"project: {PROJECT}\nregion: wrong-region\nnode_tags: [gke-node]\n",
        "LBHC_REGION",
        [
            "LBHC_REGION is deprecated; set LBHC_GCE_REGION instead",
            "the flat key project: in",
            "the flat key region: in",
            "the flat key node_tags: in",
        ],
        id="written-for-0.1",
    ),
]


@pytest.mark.parametrize(("content", "region_variable", "warnings"), SETTINGS_FILES)
def test_env_and_config_file_supply_settings(
    content: str,
    region_variable: str,
    warnings: list[str],
    compute: ComputeEnv,
    snapshot_file: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed(compute, service("web"))
    config = tmp_path / "lbhc.yaml"
    config.write_text(content)
    monkeypatch.setenv(region_variable, REGION)  # env beats the file
    monkeypatch.setenv("LBHC_GCE_ENDPOINT", compute.url)
    code, out, err = run(
        capsys,
        "plan",
        "--config",
        str(config),
        "--cluster-snapshot",
        str(snapshot_file(node(), service("web"))),
    )
    assert code == 0, err
    assert "1 to attach" in out
    said = [line for line in err.splitlines() if "deprecated" in line]
    assert len(said) == len(warnings), err
    for warning in warnings:
        assert any(warning in line for line in said), (warning, err)
    if warnings:
        assert any("under gce: as project:" in line for line in said), err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--region", REGION, "--node-tags", "t"], "setting 'gce.project': required"),
        (
            [
                "--project",
                PROJECT,
                "--region",
                REGION,
                "--node-tags",
                "t",
                "--cluster-id",
                "Bad_Id",
            ],
            "setting 'health_check.cluster_id'",
        ),
        (
            [
                "--project",
                PROJECT,
                "--region",
                REGION,
                "--node-tags",
                "t",
                "--gce-endpoint",
                "ftp://x",
            ],
            "setting 'gce.endpoint': expected a URL",
        ),
    ],
    ids=["missing-project", "bad-cluster-id", "bad-endpoint"],
)
def test_bad_settings_give_one_clear_error(
    argv: list[str],
    expected: str,
    snapshot_file: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in environment_names():
        monkeypatch.delenv(var, raising=False)
    code, out, err = run(capsys, "plan", "--cluster-snapshot", str(snapshot_file(node())), *argv)
    assert code == EXIT_USAGE and out == ""
    assert err.startswith("lbhc: error: invalid settings:")
    assert expected in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON (line 1"),
        ('{"kind": "Deployment"}', "got kind 'Deployment'; expected a v1 List"),
        (
            '{"kind": "List", "items": [{"kind": "Node", "metadata": {}}]}',
            "item 0 (Node): metadata.name: Field required",
        ),
        ("", "file is empty"),
    ],
    ids=["not-json", "wrong-kind", "invalid-item", "empty"],
)
def test_bad_snapshot_file_gives_one_clear_error(
    content: str,
    expected: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    compute: ComputeEnv,
) -> None:
    path = tmp_path / "dump.json"
    path.write_text(content)
    code, _, err = run(capsys, "plan", "--cluster-snapshot", str(path), *gce_args(compute))
    assert code == EXIT_USAGE  # the fix is another file
    assert expected in err, err
    assert compute.fake.journal == []


def test_snapshot_without_cluster_id_source_is_explained(
    compute: ComputeEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listing = kubectl_list(node())
    listing["items"] = [i for i in listing["items"] if i["kind"] != "Namespace"]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(listing))
    code, _, err = run(capsys, "plan", "--cluster-snapshot", str(path), *gce_args(compute))
    assert code == EXIT_USAGE and "cluster id unknown: set --cluster-id" in err


def test_unreachable_gce_is_an_error_not_a_traceback(
    snapshot_file: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LBHC_GCE_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("LBHC_GCE_BACKOFF_INITIAL_SEC", "0.01")
    code, _, err = run(
        capsys,
        "plan",
        "--cluster-snapshot",
        str(snapshot_file(node())),
        *gce_args("http://127.0.0.1:9"),
    )
    assert code == 1
    # Never answered: not retried, so no retry warnings; one line naming the flag.
    [line] = err.splitlines()
    assert line.startswith("lbhc: error: cannot reach the Compute API at http://127.0.0.1:9")
    assert "--gce-endpoint" in line


def test_plan_and_apply_read_the_cluster_from_the_kubernetes_api(
    compute: ComputeEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lbhc.sandbox.kube_fake import KubeFake, KubeFakeServer
    from tests.kube_fixtures import write_kubeconfig

    svcs = (service("web"), service("api", namespace="prod"))
    pools = seed(compute, *svcs)
    kube = KubeFake()
    for obj in kubectl_list(node("n-1"), node("n-2"), *svcs)["items"]:
        kube.upsert(obj)
    with KubeFakeServer(kube) as server:
        kubeconfig = write_kubeconfig(tmp_path, server.url)
        code, out, err = run(capsys, "apply", "--kubeconfig", str(kubeconfig), *gce_args(compute))
        assert code == 0, err
        assert all(compute.pool_checks(p) == [URL] for p in pools)
        code, out, err = run(
            capsys,
            "plan",
            "--detailed-exitcode",
            "--kubeconfig",
            str(kubeconfig),
            *gce_args(compute),
        )
    assert code == 0 and "No changes." in out
    listed = {e.path for e in kube.journal}
    assert {"/api/v1/nodes", "/api/v1/services", "/api/v1/namespaces/kube-system"} <= listed


def test_apply_exits_1_when_a_step_fails_and_says_which(
    compute: ComputeEnv, snapshot_file: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pools = seed(compute, service("a"), service("b"))
    compute.fake.faults.fail_requests(
        times=1, status=400, reason="invalid", path_contains=f"{pools[0]}/addHealthCheck"
    )
    path = snapshot_file(node(), service("a"), service("b"))
    code, out, _ = run(
        capsys, "apply", "--output", "json", "--cluster-snapshot", str(path), *gce_args(compute)
    )
    body = json.loads(out)
    assert code == 1 and body["ok"] is False
    failed = [r for r in body["results"] if r["status"] == "failed"]
    assert [r["name"] for r in failed] == [pools[0]]
    assert "400 invalid" in failed[0]["detail"]
    assert compute.pool_checks(pools[1]) == [URL]


@pytest.mark.parametrize(
    "argv",
    [["plan", "--output", "xml"], ["plan", "--bogus"], ["frobnicate"], []],
    ids=["bad-choice", "unknown-flag", "unknown-command", "no-command"],
)
def test_usage_errors_exit_2_but_1_under_detailed_exitcode(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("lbhc: error: ") and "--help" in line
    if argv[:1] == ["plan"]:
        # 2 means "changes" under --detailed-exitcode: a typo must not look like that.
        assert main([*argv, "--detailed-exitcode"]) == EXIT_ERROR == 1


@pytest.mark.parametrize(
    "text",
    ["apiVersion: v1\nclusters: [ {name: a\nusers:\n", "key: 'unterminated\n", "a: b: c\n"],
    ids=["unclosed-flow", "unterminated-quote", "nested-colon"],
)
def test_a_kubeconfig_that_is_not_yaml_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(text)
    code, _, err = run(
        capsys, "plan", "--kubeconfig", str(kubeconfig), *gce_args("http://127.0.0.1:9")
    )
    assert code == EXIT_USAGE  # the fix is the file
    [line] = err.splitlines()
    assert line.startswith(f"lbhc: error: kubeconfig {kubeconfig} is not valid YAML (line ")
    assert line.endswith("expected a kubeconfig file as `kubectl config view --raw` writes it")


def test_an_apply_with_more_changes_than_requests_pool_logs_no_discarded_connection(
    compute: ComputeEnv,
    snapshot_file: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40 attaches, 32 workers, each holding a connection while it waits for its operation:
    with requests' default pool of 10 per session, urllib3 opened the rest and threw them
    away, a "Connection pool is full, discarding connection" warning each. The sessions keep
    as many connections as the executor runs calls at once."""
    services = [service(f"s{i}") for i in range(40)]
    pools = seed(compute, *services)
    compute.fake.operation_latency = 0.5  # every worker waits at once
    monkeypatch.setenv("LBHC_GCE_MUTATIONS_PER_SECOND", "1000")
    monkeypatch.setenv("LBHC_GCE_READS_PER_SECOND", "1000")
    path = snapshot_file(node(), *services)
    code, out, err = run(
        capsys, "apply", "--auto-approve", "--cluster-snapshot", str(path), *gce_args(compute)
    )
    assert code == 0, err
    assert "Applied: 42 done, 0 failed, 0 skipped." in out
    assert all(compute.pool_checks(p) == [URL] for p in pools)
    assert "Connection pool is full" not in err, err
    assert err == "", err


@pytest.mark.parametrize(
    ("command", "extra", "code"),
    [
        ("plan", (), EXIT_USAGE),
        ("plan", ("--detailed-exitcode",), EXIT_ERROR),  # 2 means "changes" there
        ("apply", ("--auto-approve",), EXIT_USAGE),
    ],
    ids=["plan", "plan-detailed-exitcode", "apply"],
)
def test_a_region_holding_none_of_the_load_balancers_is_an_error_not_no_changes(
    command: str,
    extra: tuple[str, ...],
    code: int,
    compute: ComputeEnv,
    snapshot_file: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GCE shows a real but wrong region exactly as a cluster without load balancers: a CI
    gate on `plan --detailed-exitcode` must not pass on it, nor apply write from it."""
    svcs = (service("web", ingress_ip="203.0.113.7"), service("api", ingress_ip="203.0.113.8"))
    seed(compute, *svcs)
    path = snapshot_file(node(), *svcs)
    wrong = [a if a != REGION else "europe-west1" for a in gce_args(compute)]
    compute.fake.clear_journal()
    got, out, err = run(capsys, command, *extra, "--cluster-snapshot", str(path), *wrong)
    assert (got, out) == (code, "")
    [line] = err.splitlines()
    assert line.startswith("lbhc: error: none of the 2 LoadBalancer Service(s) with an ingress IP")
    assert f"project {PROJECT}, region europe-west1: check --project and --region" in line
    assert compute.fake.mutating_requests() == []
    # The right region plans as usual.
    got, out, _ = run(capsys, "plan", "--cluster-snapshot", str(path), *gce_args(compute))
    assert got == 0 and "to attach" in out


def test_a_backend_service_load_balancer_in_scope_is_no_scope_error(
    compute: ComputeEnv, snapshot_file: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cluster whose Services all use backend services (ingress-gce) has no target pool:
    its forwarding rules alone show the scope is right."""
    rbs = service(
        "rbs", annotations={"cloud.google.com/l4-rbs": "enabled"}, ingress_ip="203.0.113.9"
    )
    check = compute.fake.add_health_check(
        PROJECT,
        "k8s2-shared-hc",
        REGION,
        httpHealthCheck={"port": 10256, "requestPath": "/healthz"},
    )
    backend = compute.fake.add_backend_service(
        PROJECT, REGION, "k8s2-rbs", protocol="TCP", healthChecks=[check["selfLink"]]
    )
    compute.fake.add_forwarding_rule(
        PROJECT, REGION, "k8s2-rbs", ip_address="203.0.113.9", backend_service=backend["selfLink"]
    )
    got, out, err = run(
        capsys, "plan", "--cluster-snapshot", str(snapshot_file(node(), rbs)), *gce_args(compute)
    )
    assert got == 0 and err == "", err
    assert "No changes" in out
