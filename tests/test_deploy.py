"""deploy/: every overlay renders with kubectl kustomize and validates offline (strict), the
Deployment is hardened as promised, every overlay starts on GKE (its priority class is admitted,
its NetworkPolicy reaches the metadata servers and the API server, the Prometheus objects carry
the labels set in the monitoring overlay), and RBAC grants exactly what lbhc calls: the calls
are taken from the kube-apiserver fake's journal while the real controller and one-shot
commands run through everything they do (watch, Lease, Events, readiness enforce, status),
and each opt-in overlay's one write is declared with the method that makes it."""

from __future__ import annotations

import copy
import functools
import ipaddress
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from lbhc.cli import main
from lbhc.kube.client import KubeApi
from lbhc.settings import load_settings
from tests.builders import kube as kube_builders
from tests.builders.kube import kube_proxy_daemonset
from tests.controller.harness import PROJECT, REGION, world
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
OVERLAYS = ("autopilot", "default", "dry-run", "hold-deletion", "monitoring", "readiness-enforce")
OPERATOR_KINDS = {"PrometheusRule", "ServiceMonitor"}  # CRDs: no bundled schema to check


def render(overlay: str, root: Path = ROOT) -> list[dict[str, Any]]:
    """The overlay as kubectl kustomize renders it, a copy of its own for each caller (they
    mutate what they get). deploy/ does not change during a run, so each overlay of this
    checkout is rendered once per test process; other roots (a test's edited copy) every time."""
    if root == ROOT:
        return copy.deepcopy(_rendered(overlay))
    return _kustomize(overlay, root)


@functools.cache
def _rendered(overlay: str) -> list[dict[str, Any]]:
    return _kustomize(overlay, ROOT)


def _kustomize(overlay: str, root: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: cannot render the kustomizations")
    out = subprocess.run(
        [kubectl, "kustomize", str(root / "deploy" / "overlays" / overlay)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def test_overlays_names_every_overlay_directory() -> None:
    """The overlay-wide checks here and in tests/security run on OVERLAYS: a new overlay
    directory must join it (checkov's .ci/manifests-check finds them by listing)."""
    found = {p.name for p in (ROOT / "deploy" / "overlays").iterdir() if p.is_dir()}
    assert set(OVERLAYS) == found


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
    assert (settings.gce.project, settings.readiness.policy.value) == ("my-project", "audit")


# ---- Every overlay starts on GKE --------------------------------------------------------------
# Each check takes one rendered overlay and returns its problems; the table below runs every
# check on every overlay, and the one after it breaks rendered manifests to show each can fail.

# kubernetes pkg/apis/scheduling/types.go: larger values, and names starting "system-", are the
# system's; the API refuses them in any other PriorityClass.
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")
# The metadata server (GCE; Workload Identity on GKE Dataplane V2) and the GKE metadata server
# (Workload Identity without Dataplane V2): https://cloud.google.com/kubernetes-engine/docs/
# concepts/workload-identity.
METADATA_SERVERS = (("169.254.169.254", 80), ("169.254.169.252", 988))
ANYWHERE = "192.0.2.1"  # TEST-NET-1: stands for any address the policy does not name
KUBE_PROXY_HEALTH_PORT = 10256  # probe_kube_proxy's, on every node


@dataclass(frozen=True)
class Rendered:
    overlay: str
    docs: list[dict[str, Any]]
    root: Path = ROOT

    def install_params(self) -> dict[str, str]:
        """params.env: the one place install parameters (the API server port) are set."""
        text = (self.root / "deploy" / "base" / "params.env").read_text()
        pairs = [line.split("=", 1) for line in text.splitlines() if "=" in line]
        return {key.strip(): value.strip() for key, value in pairs}

    def monitoring_labels(self) -> dict[str, str]:
        """The labels the overlay's one patch of monitoring.coreos.com objects sets."""
        path = self.root / "deploy" / "overlays" / self.overlay / "kustomization.yaml"
        labels: dict[str, str] = {}
        for patch in yaml.safe_load(path.read_text()).get("patches", []):
            if patch.get("target", {}).get("group") == "monitoring.coreos.com":
                labels.update(yaml.safe_load(patch["patch"])["metadata"].get("labels") or {})
        return labels


def pod_spec(docs: list[dict[str, Any]]) -> tuple[str, dict[str, Any], int]:
    """lbhc's namespace, pod template, and the most Pods a rollout runs at once."""
    deployment = one(docs, "Deployment", "lbhc")
    spec = deployment["spec"]
    surge = spec.get("strategy", {}).get("rollingUpdate", {}).get("maxSurge", 1)
    assert isinstance(surge, int), "maxSurge as a percentage: count the Pods by hand"
    return deployment["metadata"]["namespace"], spec["template"], spec["replicas"] + surge


def quota_admits(quota: dict[str, Any], priority_class: str) -> bool:
    expressions = quota["spec"].get("scopeSelector", {}).get("matchExpressions", [])
    return any(
        e["scopeName"] == "PriorityClass"
        and (e["operator"] == "Exists" or (e["operator"] == "In" and priority_class in e["values"]))
        for e in expressions
    )


def priority_problems(rendered: Rendered) -> list[str]:
    """Admitted where the API server limits critical classes by default (GKE): a critical class
    needs a ResourceQuota in lbhc's namespace whose scopeSelector matches it, room for a
    rollout's Pods; any other class must be rendered, and be one the API accepts."""
    namespace, template, pods = pod_spec(rendered.docs)
    name = template["spec"].get("priorityClassName")
    if not name:
        return ["no priorityClassName: lbhc would be preempted like any workload"]
    if name in CRITICAL_CLASSES:
        quotas = [
            d
            for d in rendered.docs
            if d["kind"] == "ResourceQuota"
            and d["metadata"].get("namespace") == namespace
            and quota_admits(d, name)
        ]
        if not quotas:
            return [f"{name} in {namespace} without a ResourceQuota scoped to it: refused on GKE"]
        room = max(int(q["spec"].get("hard", {}).get("pods", 0)) for q in quotas)
        return [] if room >= pods else [f"the quota for {name} admits {room} Pods, not {pods}"]
    classes = [d for d in rendered.docs if d["kind"] == "PriorityClass"]
    found = [c for c in classes if c["metadata"]["name"] == name]
    if not found:
        return [f"PriorityClass {name} is not rendered: Pods naming it are refused"]
    (priority_class,) = found
    problems = []
    if name.startswith("system-") or priority_class["value"] > HIGHEST_USER_DEFINABLE_PRIORITY:
        problems.append(f"{name}: the system's name or value range; the API refuses it")
    if priority_class.get("globalDefault"):
        problems.append(f"{name} is the global default: every Pod would get it")
    return problems


def _port_matches(entry: dict[str, Any], port: int) -> bool:
    if entry.get("protocol", "TCP") != "TCP" or not isinstance(entry.get("port"), int):
        return False  # named ports cannot be resolved here
    return bool(entry["port"] <= port <= entry.get("endPort", entry["port"]))


def _peer_holds(peer: dict[str, Any], address: str) -> bool:
    if "ipBlock" not in peer:
        return False  # Pod and namespace selectors: never a link-local server or a stranger
    ip = ipaddress.ip_address(address)
    block = peer["ipBlock"]
    return ip in ipaddress.ip_network(block["cidr"]) and not any(
        ip in ipaddress.ip_network(cidr) for cidr in block.get("except", [])
    )


def egress_allows(policies: list[dict[str, Any]], address: str, port: int) -> bool:
    """NetworkPolicy semantics for TCP egress from lbhc's Pods: any rule of any policy."""
    for policy in policies:
        for rule in policy["spec"].get("egress", []):
            peers, ports = rule.get("to"), rule.get("ports")
            if peers and not any(_peer_holds(peer, address) for peer in peers):
                continue
            if ports and not any(_port_matches(entry, port) for entry in ports):
                continue
            return True
    return False


def egress_problems(rendered: Rendered) -> list[str]:
    """Egress is restricted, reaches both metadata servers (and only them on their ports), the
    API server's port as params.env sets it and kube-proxy's health port, and no rule allows
    everything."""
    namespace, template, _ = pod_spec(rendered.docs)
    labels = template["metadata"]["labels"]
    policies = [
        d
        for d in rendered.docs
        if d["kind"] == "NetworkPolicy"
        and d["metadata"]["namespace"] == namespace
        and "Egress" in d["spec"].get("policyTypes", [])
        and d["spec"]["podSelector"].get("matchLabels", {}).items() <= labels.items()
    ]
    if not policies:
        return ["no NetworkPolicy restricts lbhc's egress"]
    problems = [
        f"{policy['metadata']['name']}: an egress rule allows everything"
        for policy in policies
        for rule in policy["spec"].get("egress", [])
        if not rule.get("to") and not rule.get("ports")
    ]
    for address, port in METADATA_SERVERS:
        if not egress_allows(policies, address, port):
            problems.append(f"the metadata server {address}:{port} is unreachable")
        if egress_allows(policies, ANYWHERE, port):
            problems.append(f"port {port} is open to any address, not just {address}")
    api_port = int(rendered.install_params()["api_server_port"])
    if not egress_allows(policies, ANYWHERE, api_port):
        problems.append(f"the API server's port {api_port} (params.env) is unreachable")
    if not egress_allows(policies, ANYWHERE, KUBE_PROXY_HEALTH_PORT):
        problems.append(f"kube-proxy's health port {KUBE_PROXY_HEALTH_PORT} is unreachable")
    return problems


def monitoring_label_problems(rendered: Rendered) -> list[str]:
    """The Prometheus Operator objects carry the labels the overlay's one patch sets (those a
    Prometheus selects them by: `release: <Helm release>` for kube-prometheus-stack)."""
    objects = [d for d in rendered.docs if d["apiVersion"].startswith("monitoring.coreos.com/")]
    if not objects:
        return []
    problems = []
    if {d["kind"] for d in objects} != OPERATOR_KINDS:
        problems.append(f"want a ServiceMonitor and a PrometheusRule, got {len(objects)} objects")
    wanted = rendered.monitoring_labels()
    if not wanted:
        problems.append("no labels patch for monitoring.coreos.com objects in the overlay")
    for d in objects:
        labels = d["metadata"].get("labels", {})
        missing = {k: v for k, v in wanted.items() if labels.get(k) != v}
        if missing:
            problems.append(f"{d['kind']} {d['metadata']['name']} lacks {missing}")
    return problems


PRIORITY, EGRESS, LABELS = (
    "priority class admitted",
    "egress to the metadata servers and the API server",
    "Prometheus labels from the overlay",
)
GKE_CHECKS: dict[str, Callable[[Rendered], list[str]]] = {
    PRIORITY: priority_problems,
    EGRESS: egress_problems,
    LABELS: monitoring_label_problems,
}


@pytest.mark.parametrize("check", GKE_CHECKS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_starts_on_gke(overlay: str, check: str) -> None:
    assert GKE_CHECKS[check](Rendered(overlay, render(overlay))) == []


def test_the_monitoring_overlay_labels_its_objects() -> None:
    """Not vacuous: the monitoring overlay has both objects and a label set for them."""
    rendered = Rendered("monitoring", render("monitoring"))
    assert rendered.monitoring_labels() == {"release": "kube-prometheus-stack"}
    kinds = {d["kind"] for d in rendered.docs if d["apiVersion"].startswith("monitoring.")}
    assert kinds == OPERATOR_KINDS


Docs = list[dict[str, Any]]


def critical(quota_namespace: str | None = None, pods: int = 3) -> Callable[[Docs], None]:
    """system-cluster-critical, with a ResourceQuota scoped to it in quota_namespace."""

    def mutate(docs: Docs) -> None:
        spec = one(docs, "Deployment", "lbhc")["spec"]["template"]["spec"]
        spec["priorityClassName"] = "system-cluster-critical"
        if quota_namespace is None:
            return
        scope = {"scopeName": "PriorityClass", "operator": "In"}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "lbhc-critical-pods", "namespace": quota_namespace},
                "spec": {
                    "hard": {"pods": str(pods)},
                    "scopeSelector": {
                        "matchExpressions": [{**scope, "values": ["system-cluster-critical"]}]
                    },
                },
            }
        )

    return mutate


def name_priority(name: str) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        one(docs, "Deployment", "lbhc")["spec"]["template"]["spec"]["priorityClassName"] = name

    return mutate


def raise_priority_class(docs: Docs) -> None:
    one(docs, "PriorityClass")["value"] = 2 * HIGHEST_USER_DEFINABLE_PRIORITY


def egress_rules(docs: Docs) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = one(docs, "NetworkPolicy", "lbhc")["spec"]["egress"]
    return rules


def drop_rules_to(ip: str) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        rules = egress_rules(docs)
        rules[:] = [r for r in rules if not any(_peer_holds(p, ip) for p in r.get("to", []))]

    return mutate


def drop_https(docs: Docs) -> None:
    rules = egress_rules(docs)
    rules[:] = [r for r in rules if not any(p.get("port") == 443 for p in r.get("ports", []))]


def open_to_anywhere(docs: Docs) -> None:
    for rule in egress_rules(docs):
        rule.pop("to", None)


def allow_everything(docs: Docs) -> None:
    egress_rules(docs).append({})


def unlabel(docs: Docs) -> None:
    del one(docs, "ServiceMonitor", "lbhc")["metadata"]["labels"]["release"]


# (overlay, check, what breaks it, words of the problem reported; "" = nothing wrong: the quota
# branch of the priority check, which no overlay uses, must admit as well as refuse)
BREAKAGES: list[tuple[str, str, Callable[[Docs], None], str]] = [
    ("default", PRIORITY, critical(), "refused on GKE"),
    ("default", PRIORITY, critical("lbhc-system"), ""),
    ("default", PRIORITY, critical("kube-system"), "refused on GKE"),
    ("default", PRIORITY, critical("lbhc-system", pods=2), "admits 2 Pods, not 3"),
    ("default", PRIORITY, name_priority("lbhc-nonexistent"), "not rendered"),
    ("default", PRIORITY, raise_priority_class, "the API refuses it"),
    ("default", EGRESS, drop_rules_to("169.254.169.254"), "169.254.169.254:80 is unreachable"),
    ("default", EGRESS, drop_rules_to("169.254.169.252"), "169.254.169.252:988 is unreachable"),
    ("default", EGRESS, open_to_anywhere, "open to any address"),
    ("default", EGRESS, drop_https, "port 443 (params.env) is unreachable"),
    ("default", EGRESS, allow_everything, "allows everything"),
    ("monitoring", LABELS, unlabel, "ServiceMonitor lbhc lacks {'release'"),
]


@pytest.mark.parametrize(("overlay", "check", "breakage", "reported"), BREAKAGES)
def test_each_gke_check_catches_what_it_guards(
    overlay: str, check: str, breakage: Callable[[Docs], None], reported: str
) -> None:
    docs = copy.deepcopy(render(overlay))
    assert GKE_CHECKS[check](Rendered(overlay, docs)) == []
    breakage(docs)
    problems = GKE_CHECKS[check](Rendered(overlay, docs))
    if reported:
        assert any(reported in problem for problem in problems), problems
    else:
        assert problems == []


def test_the_api_server_port_is_set_in_params_env_alone(tmp_path: Path) -> None:
    """kubeadm's 6443, set in the one place, becomes the API server rule's port in every
    overlay, and nothing else in the policy moves (the replacement finds its rule by index)."""
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    params = tmp_path / "deploy" / "base" / "params.env"
    text = params.read_text()
    assert "api_server_port=443\n" in text
    params.write_text(text.replace("api_server_port=443\n", "api_server_port=6443\n"))
    written = yaml.safe_load((ROOT / "deploy" / "base" / "networkpolicy.yaml").read_text())
    for overlay in OVERLAYS:
        kubeadm = Rendered(overlay, render(overlay, root=tmp_path), root=tmp_path)
        assert egress_problems(kubeadm) == []
        policy = one(kubeadm.docs, "NetworkPolicy", "lbhc")
        moved = [
            (before, after)
            for before, after in zip(
                written["spec"]["egress"], policy["spec"]["egress"], strict=True
            )
            if before != after
        ]
        api_rule = {"ports": [{"port": 443, "protocol": "TCP"}]}
        assert moved == [(api_rule, {"ports": [{"port": 6443, "protocol": "TCP"}]})]
        default = one(render(overlay), "NetworkPolicy", "lbhc")
        assert default["spec"] == written["spec"]  # 443 as written: GKE's and kube-up's
        assert not egress_allows([default], ANYWHERE, 6443)


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
        w.kube.upsert(kube_proxy_daemonset(uid=uid))
        for i in range(3):
            pod = kube_builders.kube_proxy_pod(
                f"node-{i}", version="v1.31.4", ready=True, owner_uid=uid
            )
            w.kube.upsert(pod)
        pool = w.add_service("web")
        app = w.start(
            settings={"readiness_policy": "enforce", "hold_deletion": "on"},
            leader_elect=True,
            readiness_settle_sec=0.1,
        )
        wait_for(lambda: w.attached(pool), what="converged")
        wait_for(
            lambda: any(e.method == "PATCH" and "/nodes/" in e.path for e in w.kube.journal),
            what="lbhc's hold on a Node",
        )
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


def unused_grants(
    rules: list[tuple[str | None, dict[str, Any]]], used: set[Request]
) -> list[tuple[str, str, str, str]]:
    """(namespace, group, resource, verb) granted that no request of lbhc's needed."""
    return [
        (namespace or "all namespaces", group, resource, verb)
        for namespace, rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        if not any(
            grants({**rule, "apiGroups": [group], "resources": [resource], "verbs": [verb]}, r)
            and namespace in (None, r.namespace)
            for r in used
        )
    ]


@dataclass(frozen=True)
class OptInWrite:
    """The one write an opt-in overlay grants beyond the default install, and the KubeApi
    method (lbhc/kube/client.py) that makes it. No other overlay may grant it."""

    request: Request  # name "": any object of the resource (the grant names none)
    method: str

    def covers(self, request: Request) -> bool:
        mine = self.request
        return (request.group, request.resource, request.verb, request.namespace) == (
            mine.group,
            mine.resource,
            mine.verb,
            mine.namespace,
        ) and mine.name in ("", request.name)

    def unused(self) -> tuple[str, str, str, str]:
        """As unused_grants reports it when no request of the run made it."""
        mine = self.request
        return (mine.namespace or "all namespaces", mine.group, mine.resource, mine.verb)


OPT_IN_WRITES = {
    # readiness.policy enforce: kube-proxy's readiness probe path.
    "readiness-enforce": OptInWrite(
        Request("apps", "daemonsets", "patch", "kube-system", "kube-proxy"), "patch_daemonset"
    ),
    # hold.deletion on: a JSON merge patch of the one annotation
    # delay-deletion.cluster-autoscaler.kubernetes.io/lbhc (PATCH /api/v1/nodes/NAME).
    "hold-deletion": OptInWrite(Request("", "nodes", "patch", "", ""), "patch_node_annotation"),
}


@pytest.mark.parametrize("overlay", sorted(OPT_IN_WRITES))
def test_each_opt_in_write_names_the_kube_api_method_that_makes_it(overlay: str) -> None:
    write = OPT_IN_WRITES[overlay]
    assert callable(getattr(KubeApi, write.method, None)), write.method
    assert allowed(granted_rules(render(overlay)), write.request)


def test_rbac_grants_exactly_what_lbhc_calls(tmp_path: Path) -> None:
    used = lbhc_requests_through_everything(tmp_path)
    writes = OPT_IN_WRITES.values()
    opt_in = {r for r in used if any(w.covers(r) for w in writes)}
    assert {r for r in used if r.verb == "patch"} <= opt_in, "a write no overlay declares"
    common = used - opt_in
    for name in ("default", "autopilot"):
        rules = granted_rules(render(name))
        missing = [r for r in common if not allowed(rules, r)]
        assert not missing, f"the {name} install lacks {missing}"
        assert not any(allowed(rules, r) for r in opt_in)  # the writes are opt-in only
        assert not any(allowed(rules, w.request) for w in writes)
        assert not unused_grants(rules, common), name
    unexercised = []
    for overlay, write in OPT_IN_WRITES.items():
        rules = granted_rules(render(overlay))
        mine = {r for r in opt_in if write.covers(r)}
        assert all(allowed(rules, r) for r in common | mine), overlay
        others = [w.request for w in writes if w is not write]
        assert not any(allowed(rules, r) for r in (opt_in - mine) | set(others)), overlay
        if mine:
            assert not unused_grants(rules, common | mine), overlay
        else:  # its write alone is unused: the run never made it
            assert unused_grants(rules, common) == [write.unused()], overlay
            unexercised.append(overlay)
    assert not unexercised, f"the run made no request of {unexercised}'s opt-in write"
