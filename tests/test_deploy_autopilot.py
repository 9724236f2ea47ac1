"""deploy/overlays/autopilot installs on GKE Autopilot: it writes nothing into a namespace GKE
manages (Autopilot refuses every create there), and its RBAC is the default install's with
exactly one change, the documented one: the kube-system read grant made cluster-wide.
tests/test_deploy.py renders it with the other overlays (strict schema validation, the GKE
start-up checks, checkov in .ci/manifests-check) and checks its grants against what lbhc
calls, both ways."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.test_deploy import granted_rules, render

Docs = list[dict[str, Any]]
ROOT = Path(__file__).resolve().parents[1]
LBHC_NAMESPACE = "lbhc-system"

# Namespaces GKE keeps for itself. GKE does not publish one list of them that we could find
# (https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-security describes the
# restriction): these are Kubernetes' own namespaces and GKE's naming prefixes. The checks
# below do not depend on the list being complete: every namespaced object must be in
# lbhc-system, which GKE does not manage.
MANAGED_NAMES = frozenset({"kube-system", "kube-public", "kube-node-lease"})
MANAGED_PREFIXES = ("gke-", "gmp-")


def is_managed(namespace: str) -> bool:
    return namespace in MANAGED_NAMES or namespace.startswith(MANAGED_PREFIXES)


def namespace_problems(docs: Docs) -> list[str]:
    """Objects Autopilot would refuse, or that land outside lbhc's namespace."""
    problems = []
    for doc in docs:
        namespace = doc["metadata"].get("namespace")
        where = f"{doc['kind']} {namespace}/{doc['metadata']['name']}"
        if namespace is None:
            continue
        if is_managed(namespace):
            problems.append(f"{where}: a namespace GKE manages")
        elif namespace != LBHC_NAMESPACE:
            problems.append(f"{where}: outside {LBHC_NAMESPACE}")
    return problems


def role_problems(docs: Docs) -> list[str]:
    """Roles and RoleBindings only in lbhc's namespace (its Lease), nowhere else."""
    return [
        f"{d['kind']} {d['metadata'].get('namespace')}/{d['metadata']['name']}"
        for d in docs
        if d["kind"] in ("Role", "RoleBinding") and d["metadata"].get("namespace") != LBHC_NAMESPACE
    ]


# (namespace, "*" for all; group, resource, verb, resourceNames)
Grant = tuple[str, str, str, str, tuple[str, ...]]


def atoms(docs: Docs) -> set[Grant]:
    return {
        (namespace or "*", group, resource, verb, tuple(rule.get("resourceNames", ())))
        for namespace, rule in granted_rules(docs)
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


# What the autopilot overlay grants in every namespace that the default grants in kube-system
# only: word for word what components/autopilot/rbac.yaml and docs/deploying.md say it widens.
DOCUMENTED_WIDENING: set[Grant] = {
    ("*", "", "pods", "list", ()),
    ("*", "", "pods", "watch", ()),
    ("*", "apps", "daemonsets", "list", ()),
    ("*", "apps", "daemonsets", "watch", ()),
    ("*", "", "configmaps", "get", ("ingress-uid",)),
}


def widening(default: Docs, autopilot: Docs) -> tuple[set[Grant], set[Grant]]:
    """(granted by autopilot and not by default, granted by default and not by autopilot)."""
    return atoms(autopilot) - atoms(default), atoms(default) - atoms(autopilot)


CHECKS: dict[str, Callable[[Docs], list[str]]] = {
    "no object in a managed namespace": namespace_problems,
    "no Role or RoleBinding outside lbhc-system": role_problems,
}


@pytest.mark.parametrize("check", CHECKS)
def test_the_autopilot_overlay_writes_nothing_where_gke_refuses(check: str) -> None:
    assert CHECKS[check](render("autopilot")) == []


def _into(namespace: str) -> Callable[[Docs], None]:
    def mutate(docs: Docs) -> None:
        docs.append(
            {"kind": "ConfigMap", "metadata": {"name": "x", "namespace": namespace}, "data": {}}
        )

    return mutate


# (overlay, check, what breaks it or None, words of a problem it must report). The default
# overlay's kube-system Role is what Autopilot refuses: both checks must say so.
BREAKAGES: list[tuple[str, str, Callable[[Docs], None] | None, str]] = [
    ("default", "no object in a managed namespace", None, "Role kube-system/lbhc-kube-proxy-read"),
    ("default", "no Role or RoleBinding outside lbhc-system", None, "kube-system/lbhc-kube-proxy"),
    ("readiness-enforce", "no Role or RoleBinding outside lbhc-system", None, "readiness"),
    ("autopilot", "no object in a managed namespace", _into("gke-managed-cim"), "GKE manages"),
    ("autopilot", "no object in a managed namespace", _into("kube-node-lease"), "GKE manages"),
    ("autopilot", "no object in a managed namespace", _into("default"), "outside lbhc-system"),
]


@pytest.mark.parametrize(("overlay", "check", "breakage", "reported"), BREAKAGES)
def test_each_check_catches_what_autopilot_refuses(
    overlay: str, check: str, breakage: Callable[[Docs], None] | None, reported: str
) -> None:
    docs = copy.deepcopy(render(overlay))
    if breakage is not None:
        breakage(docs)
    problems = CHECKS[check](docs)
    assert any(reported in problem for problem in problems), problems


def test_the_rbac_widens_exactly_what_is_documented() -> None:
    default, autopilot = render("default"), render("autopilot")
    added, dropped = widening(default, autopilot)
    assert added == DOCUMENTED_WIDENING
    # ... and only by dropping the kube-system scope of those same grants.
    assert dropped == {("kube-system", *grant[1:]) for grant in DOCUMENTED_WIDENING}


def test_the_widening_is_written_where_operators_read_it() -> None:
    rbac = (ROOT / "deploy" / "components" / "autopilot" / "rbac.yaml").read_text()
    deploying = (ROOT / "docs" / "deploying.md").read_text()
    section = deploying[deploying.index("## GKE Autopilot") :]
    for text in (rbac, section):
        for words in ("list/watch Pods in every namespace", "list/watch DaemonSets in every",
                      "ConfigMap named ingress-uid in every namespace"):  # fmt: skip
            assert words in " ".join(text.replace("#", " ").split()), words
