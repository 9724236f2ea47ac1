"""deploy/: every overlay renders with kubectl kustomize and validates offline (strict), the
Deployment is hardened as promised, and RBAC grants exactly what lbhc calls: the calls are
taken from the kube-apiserver fake's journal while the real controller and one-shot commands
run through everything they do (watch, Lease, Events, readiness enforce, status)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from lbhc.cli import main
from lbhc.settings import load_settings
from tests.builders import kube_proxy_daemonset_dict
from tests.controller.harness import PROJECT, REGION, wait_for, world
from tests.kube import conftest as kube_builders

ROOT = Path(__file__).resolve().parents[1]
OVERLAYS = ("default", "dry-run", "monitoring", "readiness-enforce")
OPERATOR_KINDS = {"PrometheusRule", "ServiceMonitor"}  # CRDs: no bundled schema to check


def render(overlay: str) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: cannot render the kustomizations")
    out = subprocess.run(
        [kubectl, "kustomize", str(ROOT / "deploy" / "overlays" / overlay)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_validates_strictly_offline(overlay: str) -> None:
    import kubernetes_validate

    for doc in render(overlay):
        if doc["kind"] in OPERATOR_KINDS:
            assert doc["apiVersion"] == "monitoring.coreos.com/v1"
            continue
        kubernetes_validate.validate(doc, "1.31", strict=True)


def test_the_deployment_is_hardened_and_elects_a_leader() -> None:
    docs = render("default")
    deployment = one(docs, "Deployment", "lbhc")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deployment["spec"]["replicas"] == 2
    assert "--dry-run" not in container["args"] and "--leader-elect=false" not in container["args"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert set(container["resources"]) == {"requests", "limits"}
    assert {e["name"] for e in container["env"]} == {"POD_NAME", "POD_NAMESPACE"}
    assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    account = one(docs, "ServiceAccount", "lbhc")["metadata"]["annotations"]
    assert account["iam.gke.io/gcp-service-account"] == "lbhc@my-project.iam.gserviceaccount.com"


def test_the_dry_run_overlay_differs_only_by_the_flag() -> None:
    default, dry = render("default"), render("dry-run")
    args = one(dry, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-1] == "--dry-run"
    args.pop()
    assert dry == default


def test_the_settings_file_is_valid_lbhc_settings(tmp_path: Path) -> None:
    settings_map = next(
        d for d in render("default") if d["metadata"]["name"].startswith("lbhc-settings")
    )
    path = tmp_path / "config.yaml"
    path.write_text(settings_map["data"]["config.yaml"])
    settings = load_settings(path)
    assert (settings.project, settings.readiness_policy.value) == ("my-project", "audit")


# ---- RBAC: granted == used ------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    group: str
    resource: str
    verb: str
    namespace: str  # "" for cluster-scoped or all namespaces
    name: str


def parse(method: str, path: str, query: dict[str, str]) -> Request:
    parts = path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], (rest[1] if len(rest) > 1 else "")
    writes = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    reads = "get" if name else "watch" if query.get("watch") == "true" else "list"
    return Request(group, resource, writes.get(method, reads), namespace, name)


def grants(rule: dict[str, Any], request: Request) -> bool:
    return (
        request.group in rule.get("apiGroups", [])
        and request.resource in rule.get("resources", [])
        and request.verb in rule.get("verbs", [])
        and (not rule.get("resourceNames") or request.name in rule["resourceNames"])
    )


def granted_rules(docs: list[dict[str, Any]]) -> list[tuple[str | None, dict[str, Any]]]:
    """(namespace it applies in, None for everywhere; rule) for lbhc's ServiceAccount."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in docs}
    found = []
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = binding["subjects"]
        assert subjects == [{"kind": "ServiceAccount", "name": "lbhc", "namespace": "lbhc-system"}]
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace")
        role = roles[(ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])]
        found += [(namespace, rule) for rule in role["rules"]]
    return found


def allowed(rules: list[tuple[str | None, dict[str, Any]]], request: Request) -> bool:
    return any(ns in (None, request.namespace) and grants(r, request) for ns, r in rules)


def lbhc_requests_through_everything(tmp_path: Path) -> set[Request]:
    """The controller (leader election, Events, readiness enforce) and the one-shot commands,
    against the kube-apiserver fake; every request it saw."""
    with world() as w:
        uid = "0f6b7a52-4f1e-4d1c-9a59-1b2c3d4e5f60"
        w.kube.upsert(kube_proxy_daemonset_dict(uid=uid))
        for i in range(3):
            pod = kube_builders.kube_proxy_pod(f"node-{i}", "v1.31.4", ready=True, owner_uid=uid)
            w.kube.upsert(pod)
        pool = w.add_service("web")
        app = w.start(
            settings={"readiness_policy": "enforce"}, leader_elect=True, readiness_settle_sec=0.1
        )
        wait_for(lambda: w.attached(pool), what="converged")
        w.kube.taint("node-1", "ToBeDeletedByClusterAutoscaler", "1", "NoSchedule")
        wait_for(
            lambda: (
                any(e.get("reason") == "ReadinessProbePatched" for e in w.kube.objects("Event"))
                and any(e.get("reason") == "Draining" for e in w.kube.objects("Event"))
            ),
            what="the readiness patch and a Node Event",
        )
        w.stop(app)  # releases the Lease
        kubeconfig = w.kube_server.write_kubeconfig(tmp_path / "kubeconfig")
        flags = ["--kubeconfig", str(kubeconfig), "--project", PROJECT, "--region", REGION]
        flags += ["--node-tags", "gke-node", "--gce-endpoint", w.compute_url]
        for command in ("plan", "status"):
            assert main([command, *flags]) == 0
        return {parse(e.method, e.path, e.query) for e in w.kube.journal if e.status < 400}


def test_rbac_grants_exactly_what_lbhc_calls(tmp_path: Path) -> None:
    used = lbhc_requests_through_everything(tmp_path)
    default = granted_rules(render("default"))
    enforce = granted_rules(render("readiness-enforce"))

    patches = {r for r in used if r.verb == "patch"}
    assert patches == {Request("apps", "daemonsets", "patch", "kube-system", "kube-proxy")}
    missing = [r for r in used - patches if not allowed(default, r)]
    assert not missing, f"the default install lacks {missing}"
    assert all(allowed(enforce, r) for r in used)
    assert not any(allowed(default, r) for r in patches)  # the write is opt-in only
    for namespace, rule in enforce:
        unused = [
            (group, resource, verb)
            for group in rule["apiGroups"]
            for resource in rule["resources"]
            for verb in rule["verbs"]
            if not any(
                grants({**rule, "apiGroups": [group], "resources": [resource], "verbs": [verb]}, r)
                and namespace in (None, r.namespace)
                for r in used
            )
        ]
        assert not unused, f"granted but never used: {unused} in {namespace or 'all namespaces'}"
