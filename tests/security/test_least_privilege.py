"""Least privilege, proven against what the code calls.

GCE: every GceClient method is called against the Compute fake, and its requests (from the
fake's journal, mapped through the route table to API methods and from there to IAM
permissions) need exactly the permissions permissions.py declares for it; together they are
exactly required_permissions(), the custom role's list.

Kubernetes (tests/test_deploy.py already checks that the default, autopilot, readiness-enforce
and hold-deletion installs grant exactly what the controller and one-shot commands call, and
declares each opt-in write with the method that makes it): the other overlays, every grant
that is cluster-wide is used cluster-wide or across namespaces, and no overlay has wildcards,
Secrets or other credential-bearing resources, escalation verbs, or bindings to roles it does
not define."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from lbhc.cli import main
from lbhc.gce.client import GceClient
from lbhc.gce.config import GceClientConfig
from lbhc.gce.permissions import PERMISSIONS_BY_CALL, required_permissions
from lbhc.model.cloud import http_health_check_url
from lbhc.sandbox.compute_fake import ComputeFake, ComputeFakeServer
from lbhc.sandbox.compute_fake.journal import JournalEntry
from tests.builders import (
    PROJECT,
    REGION,
    our_check,
    our_firewall,
    service,
)
from tests.builders import kube as kube_builders
from tests.chaos.record import record
from tests.conftest import ComputeEnv
from tests.controller import harness
from tests.security.iam import OPERATION_PERMISSIONS, permissions_for
from tests.test_deploy import (
    OPT_IN_WRITES,
    OVERLAYS,
    Request,
    allowed,
    granted_rules,
    parse,
    render,
)
from tests.waiting import wait_for
from tests.worlds import compute_fake

# ---- GCE: each call needs exactly what it declares ------------------------------------------


@dataclass
class Gce:
    env: ComputeEnv
    client: GceClient
    pool: str
    group: str = ""  # a shared instance group behind a backend service

    def journal(self) -> list[JournalEntry]:
        return self.env.fake.journal


def _calls() -> dict[str, Callable[[Gce], object]]:
    check, firewall = our_check(), our_firewall()
    url = http_health_check_url(PROJECT, check.name)
    node = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{REGION}-a/instances/node-1"
    # In an order that works: create, read, change, attach, detach, delete.
    return {
        "insert_firewall": lambda g: g.client.insert_firewall(firewall),
        "get_firewall": lambda g: g.client.get_firewall(firewall.name),
        "update_firewall": lambda g: g.client.update_firewall(replace(firewall, priority=999)),
        "insert_http_health_check": lambda g: g.client.insert_http_health_check(check),
        "get_http_health_check": lambda g: g.client.get_http_health_check(check.name),
        "list_http_health_checks": lambda g: g.client.list_http_health_checks(),
        "update_http_health_check": lambda g: g.client.update_http_health_check(
            replace(check, check_interval_sec=10)
        ),
        "list_target_pools": lambda g: g.client.list_target_pools(),
        "list_forwarding_rules": lambda g: g.client.list_forwarding_rules(),
        "add_health_check": lambda g: g.client.add_health_check(g.pool, url),
        "get_health": lambda g: g.client.get_health(g.pool, node),
        "pool_instances": lambda g: g.client.pool_instances(g.pool),
        "read_snapshot": lambda g: g.client.read_snapshot(check.name, backends=True),
        "read_effective_firewall": lambda g: g.client.read_effective_firewall(),
        "list_backend_services": lambda g: g.client.list_backend_services(),
        "list_health_checks": lambda g: g.client.list_health_checks(),
        "list_group_instances": lambda g: g.client.list_group_instances(g.group),
        "backend_health": lambda g: g.client.backend_health("a1234", g.group),
        "instance_tags": lambda g: g.client.instance_tags(node),
        "read_backends": lambda g: g.client.read_backends(),
        "remove_health_check": lambda g: g.client.remove_health_check(g.pool, url),
        "delete_http_health_check": lambda g: g.client.delete_http_health_check(check.name),
        "delete_firewall": lambda g: g.client.delete_firewall(firewall.name),
    }


CALLS = _calls()
# Composite: needs what the calls it makes need.
COMPOSITE = {
    "read_snapshot": (
        "get_http_health_check",
        "list_http_health_checks",
        "get_firewall",
        "list_target_pools",
        "list_forwarding_rules",
        "get_network",
        "get_effective_firewalls",
        *("list_backend_services", "list_health_checks", "list_region_health_checks"),
        "list_group_instances",
    ),
    "read_effective_firewall": ("get_network", "get_effective_firewalls"),
    "list_health_checks": ("list_health_checks", "list_region_health_checks"),
    "read_backends": (
        "list_backend_services",
        "list_health_checks",
        "list_region_health_checks",
        "list_group_instances",
    ),
}
GLOBAL_OPS = set(PERMISSIONS_BY_CALL["wait_global_operation"])
REGION_OPS = set(PERMISSIONS_BY_CALL["wait_region_operation"])


def _backend_lb(fake: ComputeFake) -> str:
    """An internal load balancer as the cloud provider makes it: its global node check, a
    backend service, the shared instance group; returns the group's URL."""
    zone = f"{REGION}-a"
    vm = fake.add_instance(PROJECT, zone, "node-1")
    group = fake.add_instance_group(PROJECT, zone, "k8s-ig--abc", instances=[vm["selfLink"]])
    check = fake.add_health_check(
        PROJECT,
        "k8s-abc-node",
        type="HTTP",
        httpHealthCheck={"port": 10256, "requestPath": "/healthz"},
    )
    fake.add_backend_service(
        PROJECT,
        REGION,
        "a1234",
        loadBalancingScheme="INTERNAL",
        protocol="TCP",
        healthChecks=[check["selfLink"]],
        backends=[{"group": group["selfLink"]}],
    )
    return str(group["selfLink"])


@pytest.fixture(scope="module")
def gce_run() -> Iterator[dict[str, set[str]]]:
    """Every call once, in order; per call, the permissions its requests needed. Operations
    stay PENDING a moment, so every mutation is really waited on."""
    fake = compute_fake(PROJECT, operation_latency=0.05)
    with ComputeFakeServer(fake) as server:
        env = ComputeEnv(fake, server.url)
        config = GceClientConfig(PROJECT, REGION, endpoint=server.url)
        gce = Gce(env, GceClient(config), env.add_service_pool(service("web")), _backend_lb(fake))
        needed: dict[str, set[str]] = {}
        for name, call in CALLS.items():
            env.fake.clear_journal()
            call(gce)
            entries = gce.journal()
            assert entries and all(e.status < 400 for e in entries), (name, entries)
            needed[name] = permissions_for(entries)
        yield needed


def test_every_public_gce_method_is_exercised() -> None:
    public = {n for n, _ in inspect.getmembers(GceClient, inspect.isfunction) if n[0] != "_"}
    assert set(CALLS) == public


@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_gce_call_needs_exactly_the_permissions_it_declares(
    gce_run: dict[str, set[str]], call: str
) -> None:
    parts = COMPOSITE.get(call, (call,))
    declared = {p for part in parts for p in PERMISSIONS_BY_CALL[part]}
    needed = gce_run[call]
    assert needed - OPERATION_PERMISSIONS == declared
    waited = needed & OPERATION_PERMISSIONS
    if call.startswith(("insert_", "update_", "delete_")):
        assert waited == GLOBAL_OPS  # checks and firewalls are global resources
    elif call in ("add_health_check", "remove_health_check"):
        assert waited == REGION_OPS  # pools are regional
    else:
        assert not waited


def test_the_role_is_exactly_what_the_calls_need(gce_run: dict[str, set[str]]) -> None:
    used = set().union(*gce_run.values())
    required = set(required_permissions())
    assert used - required == set(), "needed but not in the role"
    assert required - used == set(), "in the role but never needed"
    record("security", "iam", calls=len(CALLS), permissions=len(required), unused=0, missing=0)


# ---- Kubernetes: what a full run calls --------------------------------------------------


@dataclass(frozen=True)
class KubeRun:
    normal: set[Request]  # controller (leader election, enforce), then plan/apply/status
    dry_run: set[Request]  # `lbhc run --dry-run` alone
    compute: list[JournalEntry]  # every GCE request of both


def _seed(w: harness.World) -> list[str]:
    """kube-proxy as a DaemonSet, and Services in two namespaces."""
    uid = "0f6b7a52-4f1e-4d1c-9a59-1b2c3d4e5f60"
    w.kube.upsert(kube_builders.kube_proxy_daemonset(uid=uid))
    for i in range(3):
        pod = kube_builders.kube_proxy_pod(
            f"node-{i}", version="v1.31.4", ready=True, owner_uid=uid
        )
        w.kube.upsert(pod)
    w.kube.upsert(kube_builders.namespace("shop"))
    return [w.add_service("web"), w.add_service("cart", namespace="shop")]


def _used(w: harness.World) -> set[Request]:
    return {parse(e.method, e.path, e.query) for e in w.kube.journal if e.status < 400}


def _attached_events(w: harness.World) -> set[str]:
    return {
        e["metadata"]["namespace"]
        for e in w.kube.objects("Event")
        if e.get("reason") == "HealthCheckAttached"
    }


@pytest.fixture(scope="module")
def kube_run(tmp_path_factory: pytest.TempPathFactory) -> KubeRun:
    enforce = {"readiness_policy": "enforce"}
    with harness.world() as w:
        pools = _seed(w)
        dry = w.start(identity="dry", dry_run=True, settings=enforce)
        wait_for(lambda: dry.controller and dry.controller.passes >= 1, what="a dry pass")
        w.stop(dry)
        dry_run = _used(w)
        w.kube.clear_journal()

        app = w.start(settings=enforce, leader_elect=True, readiness_settle_sec=0.1)
        wait_for(lambda: all(map(w.attached, pools)), what="converged")
        w.kube.taint("node-1", "ToBeDeletedByClusterAutoscaler", "1", "NoSchedule")
        wait_for(
            lambda: (
                _attached_events(w) == {"default", "shop"}
                and any(e.get("reason") == "ReadinessProbePatched" for e in w.kube.objects("Event"))
                and any(e.get("reason") == "Draining" for e in w.kube.objects("Event"))
            ),
            what="Events in both namespaces, the readiness patch and a Node Event",
        )
        w.stop(app)
        kubeconfig = w.kube_server.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")
        flags = ["--kubeconfig", str(kubeconfig), "--project", PROJECT, "--region", REGION]
        flags += ["--node-tags", "gke-node", "--gce-endpoint", w.compute_url]
        for command in ("plan", "apply", "status"):
            assert main([command, *flags]) == 0
        return KubeRun(_used(w), dry_run, w.compute.journal)


def test_the_controller_and_commands_need_no_gce_permission_outside_the_role(
    kube_run: KubeRun,
) -> None:
    assert permissions_for(kube_run.compute) <= set(required_permissions())


def _rbac(overlay: str) -> list[dict[str, Any]]:
    kinds = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    return [d for d in render(overlay) if d["kind"] in kinds]


def _expanded(rule: dict[str, Any]) -> list[dict[str, Any]]:
    """One (group, resource, verb) per rule, resourceNames kept."""
    return [
        {**rule, "apiGroups": [g], "resources": [r], "verbs": [v]}
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    ]


def _unused(rules: list[tuple[str | None, dict[str, Any]]], used: set[Request]) -> list[Any]:
    return [
        (namespace, one)
        for namespace, rule in rules
        for one in _expanded(rule)
        if not any(allowed([(namespace, one)], r) for r in used)
    ]


def test_the_dry_run_install_grants_what_a_dry_run_uses_plus_only_the_unused_lease(
    kube_run: KubeRun,
) -> None:
    """The dry-run overlay is the default install plus one flag (so switching to it and back
    changes no RBAC). A dry run elects no leader: its Lease rules go unused, and nothing
    else may."""
    rules = granted_rules(render("dry-run"))
    assert all(allowed(rules, r) for r in kube_run.dry_run)
    assert not any(r.verb == "patch" for r in kube_run.dry_run)
    unused = _unused(rules, kube_run.dry_run)
    assert {(ns, rule["resources"][0]) for ns, rule in unused} == {("lbhc-system", "leases")}


def test_the_monitoring_install_grants_exactly_what_the_default_grants() -> None:
    assert _rbac("monitoring") == _rbac("default")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_cluster_wide_grant_is_used_across_namespaces(
    kube_run: KubeRun, overlay: str
) -> None:
    """A ClusterRole grant is justified only by a cluster-scoped or all-namespaces request,
    or by use in more than one namespace (Events go to each Service's own); anything used in
    one namespace belongs in a Role there. An opt-in write counts where it is declared
    (tests/test_deploy.py, OPT_IN_WRITES): hold-deletion's patch of Nodes, which are
    cluster-scoped, before the run makes it."""
    used = kube_run.normal | kube_run.dry_run | {w.request for w in OPT_IN_WRITES.values()}
    for namespace, rule in granted_rules(render(overlay)):
        if namespace is not None:
            continue
        for one in _expanded(rule):
            where = {r.namespace for r in used if allowed([(None, one)], r)}
            if overlay == "autopilot" and where == {"kube-system"} and _kube_system_read(one):
                continue  # the documented widening: Autopilot refuses a Role in kube-system
            assert "" in where or len(where) > 1, f"{one} is used only in {where}: use a Role"


def _kube_system_read(rule: dict[str, Any]) -> bool:
    """One of the default install's kube-system Role rules (the grant the Autopilot overlay
    makes cluster-wide, as tests/test_deploy_autopilot.py holds it to)."""
    return any(
        one == rule
        for namespace, granted in granted_rules(render("default"))
        if namespace == "kube-system"
        for one in _expanded(granted)
    )


FORBIDDEN_RESOURCES = {
    "secrets", "configmaps", "serviceaccounts", "serviceaccounts/token", "pods/exec",
    "pods/attach", "pods/portforward", "pods/proxy", "nodes/proxy", "services/proxy",
    "roles", "rolebindings", "clusterroles", "clusterrolebindings", "tokenreviews",
    "subjectaccessreviews", "certificatesigningrequests", "persistentvolumes",
}  # fmt: skip
FORBIDDEN_VERBS = {"*", "escalate", "bind", "impersonate", "approve", "sign", "deletecollection"}
# The one ConfigMap lbhc reads: the cloud provider's cluster uid (its node check's name).
INGRESS_UID_RULE = {
    "apiGroups": [""],
    "resources": ["configmaps"],
    "resourceNames": ["ingress-uid"],
    "verbs": ["get"],
}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_overlay_grants_wildcards_secrets_or_escalation(overlay: str) -> None:
    docs = _rbac(overlay)
    defined = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs}
    for doc in docs:
        if doc["kind"] in ("Role", "ClusterRole"):
            assert "aggregationRule" not in doc
            labels = doc["metadata"].get("labels", {})
            assert not any(k.startswith("rbac.authorization.k8s.io/aggregate-to") for k in labels)
            for rule in doc["rules"]:
                assert "nonResourceURLs" not in rule
                for key in ("apiGroups", "resources", "verbs", "resourceNames"):
                    assert "*" not in rule.get(key, []), (doc["metadata"]["name"], rule)
                namespace = doc["metadata"].get("namespace")
                # One named, non-secret ConfigMap, read only: in kube-system, or cluster-wide
                # where Autopilot refuses a Role there.
                if rule == INGRESS_UID_RULE and (
                    namespace == "kube-system" or overlay == "autopilot"
                ):
                    continue
                assert not FORBIDDEN_RESOURCES & set(rule["resources"]), rule
                assert not FORBIDDEN_VERBS & set(rule["verbs"]), rule
        else:
            ref = doc["roleRef"]
            scope = doc["metadata"].get("namespace") if ref["kind"] == "Role" else None
            assert (ref["kind"], scope, ref["name"]) in defined, f"binds to {ref}: not ours"
