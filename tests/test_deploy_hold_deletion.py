"""deploy/overlays/hold-deletion: the one write hold.deletion needs (patch on Nodes, granted by
no other overlay) and the ValidatingAdmissionPolicy that narrows it to the one annotation, its
CEL evaluated as rendered. tests/test_deploy.py renders it with the other overlays (strict
schema validation, the GKE start-up checks, checkov in .ci/manifests-check) and checks its
grants against what lbhc calls, both ways.

The policy's expressions are read from `kubectl kustomize` output and evaluated with
cel-python (celpy), not the API server's cel-go. They keep to what both evaluate alike: has(),
all(), `in` and indexing on maps, equality of maps, lists and objects; no optional types
(`?.`, orValue), which celpy cannot parse. The evaluation follows the policy's documented
semantics: a matchCondition false skips the policy, an error with failurePolicy Fail refuses,
and every validation must hold
(https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/)."""

from __future__ import annotations

import copy
import functools
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from lbhc.settings.load import unknown_variables
from tests.builders import kube as kube_builders
from tests.test_deploy import OVERLAYS, ROOT, Request, allowed, granted_rules, one, render
from tests.test_deploy_autopilot import CHECKS, atoms

Obj = dict[str, Any]
OVERLAY = "hold-deletion"
HOLD = "delay-deletion.cluster-autoscaler.kubernetes.io/lbhc"
NODE_PATCH = Request("", "nodes", "patch", "", "node-1")
# What the overlay adds to the default install's RBAC, as tests/test_deploy_autopilot's atoms
# spell a grant ("*": in every namespace; group, resource, verb, resourceNames).
HOLD_GRANT = ("*", "", "nodes", "patch", ())


# ---- The policy, as rendered ---------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    applies: bool  # every matchCondition held
    failed: tuple[str, ...]  # the messages of the validations that did not hold
    errors: tuple[str, ...] = ()  # ... of those that could not be evaluated (counted as failed)

    @property
    def admitted(self) -> bool:
        return not self.applies or not self.failed


@functools.cache
def _program(expression: str) -> celpy.Runner:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def _holds(expression: str, activation: dict[str, Any]) -> bool | None:
    """True or False; None for an error (what failurePolicy decides)."""
    try:
        result = _program(expression).evaluate(activation)
    except CELEvalError:
        return None
    if isinstance(result, celtypes.BoolType):
        return bool(result)
    return None  # an error value, or not a bool: an error to the API server too


@dataclass(frozen=True)
class Policy:
    doc: Obj

    @property
    def spec(self) -> Obj:
        spec: Obj = self.doc["spec"]
        return spec

    def judge(self, request: Obj, old: Obj | None, new: Obj | None) -> Verdict:
        """The policy's verdict on one UPDATE of a Node, its expressions as rendered (that
        the request is one matchConstraints selects is checked on its own, below)."""
        activation: dict[str, Any] = {
            "request": json_to_cel(request),
            "object": json_to_cel(new),
            "oldObject": json_to_cel(old),
        }
        fail = self.spec.get("failurePolicy", "Fail") == "Fail"
        conditions = [_holds(c["expression"], activation) for c in self.spec["matchConditions"]]
        if False in conditions:
            return Verdict(applies=False, failed=())
        if None in conditions:  # refuses under Fail, skips the policy under Ignore
            broken = ("a matchCondition could not be evaluated",)
            return (
                Verdict(applies=True, failed=broken, errors=broken) if fail else Verdict(False, ())
            )
        # In order, each seeing those before it (the API server evaluates them lazily, which
        # differs only for one that errors unreferenced: none here does).
        variables = celtypes.MapType()
        for variable in self.spec.get("variables", []):
            activation["variables"] = variables
            value = _program(variable["expression"]).evaluate(activation)
            variables = celtypes.MapType(
                {**variables, celtypes.StringType(variable["name"]): value}
            )
        activation["variables"] = variables
        failed, errors = [], []
        for validation in self.spec["validations"]:
            held = _holds(validation["expression"], activation)
            if held is None:
                errors.append(validation["message"])
            if held is False or (held is None and fail):
                failed.append(validation["message"])
        return Verdict(applies=True, failed=tuple(failed), errors=tuple(errors))


def policy(docs: list[Obj] | None = None) -> Policy:
    return Policy(one(render(OVERLAY) if docs is None else docs, "ValidatingAdmissionPolicy"))


# ---- Builders: a Node, a change to it, who asks ----------------------------------------------


def lbhc_username(docs: list[Obj]) -> str:
    """The username lbhc's Pods authenticate as: the rendered ServiceAccount's."""
    account = one(docs, "ServiceAccount", "lbhc")["metadata"]
    return f"system:serviceaccount:{account['namespace']}:{account['name']}"


def lbhc() -> str:
    return lbhc_username(render(OVERLAY))


AUTOSCALER = "system:serviceaccount:kube-system:cluster-autoscaler"
LBHC_ELSEWHERE = "system:serviceaccount:other:lbhc"  # the same name in another namespace


def request(username: str) -> Obj:
    """An admission request for a PATCH of a Node (UPDATE to admission)."""
    return {
        "operation": "UPDATE",
        "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"},
        "name": "node-1",
        "userInfo": {"username": username, "groups": ["system:serviceaccounts"]},
    }


def a_node(*tweaks: kube_builders.Tweak) -> Obj:
    """A GKE-like node: labels, two annotations the kubelet and its controllers write, a
    providerID, server-written metadata."""
    return kube_builders.node(
        "node-1",
        kube_builders.with_annotations(
            {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            }
        ),
        kube_builders.with_uid("6f0c1d55-8a3b-4a8e-9d4e-2b1f3c4d5e6f"),
        kube_builders.with_resource_version("1000"),
        *tweaks,
    )


def bare_node() -> Obj:
    """A node without any annotations: no metadata.annotations at all."""
    obj = a_node()
    del obj["metadata"]["annotations"]
    return obj


def held(obj: Obj, value: str = "draining") -> Obj:
    return tweak(obj, annotate(HOLD, value))


def tweak(obj: Obj, *changes: Callable[[Obj], None]) -> Obj:
    obj = copy.deepcopy(obj)
    for change in changes:
        change(obj)
    return obj


def annotate(key: str, value: str) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        obj["metadata"].setdefault("annotations", {})[key] = value

    return change


def unannotate(key: str, drop_empty: bool = False) -> Callable[[Obj], None]:
    """Removes one annotation; drop_empty: then metadata.annotations too if it is empty (the
    API server stores no empty map, a client may send one)."""

    def change(obj: Obj) -> None:
        annotations = obj["metadata"]["annotations"]
        del annotations[key]
        if drop_empty and not annotations:
            del obj["metadata"]["annotations"]

    return change


def label(key: str, value: str) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        obj["metadata"].setdefault("labels", {})[key] = value

    return change


def server_writes(obj: Obj) -> None:
    """What the API server changes on every write, lbhc's own included."""
    obj["metadata"]["resourceVersion"] = "1001"
    obj["metadata"]["managedFields"] = [
        {"manager": "lbhc", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}
    ]


def spec(**fields: Any) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        obj["spec"].update(fields)

    return change


def metadata(**fields: Any) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        obj["metadata"].update(fields)

    return change


def drop(field: str) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        del obj["metadata"][field]

    return change


def taint(key: str) -> Callable[[Obj], None]:
    return kube_builders.with_taint(key, "NoSchedule")


# ---- The table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    old: Obj
    new: Obj
    refused_by: str = ""  # words of the one validation that refuses; "" admitted


OWNER = {"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "1"}
ANNOTATION_CHANGED = "may add or change no annotation"
ANNOTATION_REMOVED = "may remove no annotation"
_NODE, _HELD = a_node(), held(a_node())
_KEPT = tweak(_NODE, metadata(finalizers=["example.com/keep"]))
_OWNED = tweak(_NODE, metadata(ownerReferences=[OWNER]))
_UNLABELLED = tweak(_NODE, drop("labels"))
ONLY_HELD = tweak(
    _HELD,
    unannotate("node.alpha.kubernetes.io/ttl"),
    unannotate("volumes.kubernetes.io/controller-managed-attach-detach"),
)

ALLOWED = [
    Case("adds the annotation", _NODE, held(_NODE)),
    Case("changes its value", _HELD, held(_HELD, "drained")),
    Case("removes it", _HELD, tweak(_HELD, unannotate(HOLD))),
    Case("removes it, annotations then empty", ONLY_HELD, tweak(ONLY_HELD, unannotate(HOLD))),
    Case(
        "removes it, annotations then absent",
        ONLY_HELD,
        tweak(ONLY_HELD, unannotate(HOLD, drop_empty=True)),
    ),
    Case("a node without annotations gets it", bare_node(), held(bare_node())),
    Case("writes the same value again", _HELD, held(_HELD)),
    Case(
        "adds it while the server rewrites resourceVersion and managedFields",
        _NODE,
        tweak(held(_NODE), server_writes),
    ),
    Case(
        "adds it to a node the autoscaler is deleting",
        a_node(kube_builders.to_be_deleted("1700000000")),
        held(a_node(kube_builders.to_be_deleted("1700000000"))),
    ),
]
REFUSED = [
    Case(
        "changes a label", _NODE, tweak(held(_NODE), label("kubernetes.io/os", "windows")), "label"
    ),
    Case("adds a label", _NODE, tweak(_NODE, label("lbhc", "x")), "label"),
    Case(
        "labels a node that had none",
        _UNLABELLED,
        tweak(_UNLABELLED, label("example.com/x", "y")),
        "label",
    ),
    Case("removes every label", _NODE, tweak(held(_NODE), drop("labels")), "label"),
    Case("adds a taint", _NODE, tweak(held(_NODE), taint("example.com/lbhc")), "spec"),
    Case(
        "removes the autoscaler's taint",
        a_node(kube_builders.to_be_deleted("1700000000")),
        held(a_node()),
        "spec",
    ),
    Case("cordons the node", _NODE, tweak(_NODE, spec(unschedulable=True)), "spec"),
    Case(
        "changes another annotation",
        _NODE,
        tweak(held(_NODE), annotate("node.alpha.kubernetes.io/ttl", "30")),
        ANNOTATION_CHANGED,
    ),
    Case(
        "adds another delay-deletion annotation",
        _NODE,
        tweak(_NODE, annotate("delay-deletion.cluster-autoscaler.kubernetes.io/other", "x")),
        ANNOTATION_CHANGED,
    ),
    Case(
        "gives a bare node another annotation",
        bare_node(),
        tweak(held(bare_node()), annotate("example.com/x", "y")),
        ANNOTATION_CHANGED,
    ),
    Case(
        "removes another annotation",
        _HELD,
        tweak(_HELD, unannotate("node.alpha.kubernetes.io/ttl")),
        ANNOTATION_REMOVED,
    ),
    Case(
        "removes every annotation",
        _HELD,
        tweak(_HELD, drop("annotations")),
        ANNOTATION_REMOVED,
    ),
    Case(
        "adds a finalizer",
        _NODE,
        tweak(held(_NODE), metadata(finalizers=["example.com/keep"])),
        "finalizer",
    ),
    Case(
        "removes a finalizer",
        _KEPT,
        tweak(_KEPT, metadata(finalizers=[])),
        "finalizer",
    ),
    Case(
        "drops the finalizers",
        _KEPT,
        tweak(held(_KEPT), drop("finalizers")),
        "finalizer",
    ),
    Case(
        "adds an owner reference",
        _NODE,
        tweak(
            _NODE,
            metadata(ownerReferences=[OWNER]),
        ),
        "owner reference",
    ),
    Case(
        "drops the owner references",
        _OWNED,
        tweak(held(_OWNED), drop("ownerReferences")),
        "owner reference",
    ),
]


@pytest.mark.parametrize("case", ALLOWED, ids=lambda c: c.id)
def test_lbhc_may_add_change_and_remove_its_annotation(case: Case) -> None:
    verdict = policy().judge(request(lbhc()), case.old, case.new)
    assert verdict.applies
    assert verdict.failed == ()
    assert verdict.errors == ()


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.id)
def test_lbhc_may_change_nothing_else_on_a_node(case: Case) -> None:
    verdict = policy().judge(request(lbhc()), case.old, case.new)
    assert verdict.applies and not verdict.admitted
    assert len(verdict.failed) == 1, verdict.failed
    assert case.refused_by in verdict.failed[0]
    # Refused because the validation is false, not because reading an absent field failed:
    # every read is guarded, so the verdict does not rest on failurePolicy.
    assert verdict.errors == ()


SAMPLES = {"changes a label", "adds a taint", "adds another delay-deletion annotation"}


@pytest.mark.parametrize("username", [AUTOSCALER, LBHC_ELSEWHERE, "kubernetes-admin"])
@pytest.mark.parametrize("case", [c for c in REFUSED if c.id in SAMPLES], ids=lambda c: c.id)
def test_the_policy_applies_to_lbhc_alone(case: Case, username: str) -> None:
    verdict = policy().judge(request(username), case.old, case.new)
    assert not verdict.applies and verdict.admitted


def test_the_policy_names_the_account_the_install_runs_lbhc_as() -> None:
    """The username in the matchCondition is the rendered ServiceAccount's, the one the
    ClusterRoleBinding grants patch to and the Deployment runs as."""
    docs = render(OVERLAY)
    username = lbhc_username(docs)
    assert policy(docs).judge(request(username), _NODE, _NODE).applies
    (binding,) = [
        d
        for d in docs
        if d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"] == "lbhc-hold-deletion"
    ]
    (subject,) = binding["subjects"]
    assert f"system:serviceaccount:{subject['namespace']}:{subject['name']}" == username
    pod = one(docs, "Deployment", "lbhc")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == subject["name"]


def test_an_overlay_that_renames_the_account_leaves_the_policy_behind(tmp_path: Path) -> None:
    """What admission-policy.yaml and docs/deploying.md warn of: kustomize's namespace and
    namePrefix rename the ServiceAccount and the bindings, not the username in the CEL, so
    the renamed account keeps the grant and escapes the policy."""
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    mine = tmp_path / "deploy" / "overlays" / "mine"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(
        "namespace: other\nnamePrefix: x-\nresources:\n  - ../hold-deletion\n"
    )
    docs = render("mine", root=tmp_path)
    account = one(docs, "ServiceAccount")["metadata"]
    renamed = f"system:serviceaccount:{account['namespace']}:{account['name']}"
    assert renamed == "system:serviceaccount:other:x-lbhc"
    binding = one(docs, "ClusterRoleBinding", "x-lbhc-hold-deletion")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "x-lbhc", "namespace": "other"}
    ]
    policy_binding = one(docs, "ValidatingAdmissionPolicyBinding")["spec"]
    assert policy_binding["policyName"] == "x-lbhc-hold-deletion"  # renamed with the policy
    case = next(c for c in REFUSED if c.id == "adds a taint")
    assert not policy(docs).judge(request(renamed), case.old, case.new).applies


def test_the_policy_matches_node_updates_only_and_fails_closed() -> None:
    """UPDATE of the Node itself (any PATCH): not CREATE or DELETE, which RBAC refuses, nor
    nodes/status, which it does not grant. An error refuses (failurePolicy Fail), and the
    binding denies."""
    docs = render(OVERLAY)
    spec = one(docs, "ValidatingAdmissionPolicy")["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"] == {
        "resourceRules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["UPDATE"],
                "resources": ["nodes"],
            }
        ]
    }
    binding = one(docs, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": "lbhc-hold-deletion", "validationActions": ["Deny"]}
    assert all(v["reason"] == "Forbidden" for v in spec["validations"])


def test_the_validations_see_the_annotation_by_its_name() -> None:
    """The annotation the policy lets through is the one cluster-autoscaler waits on, under
    lbhc's own name (cluster-autoscaler core/scaledown/actuation/delay.go)."""
    (variable,) = policy().spec["variables"]
    assert variable["name"] == "hold"
    assert _program(variable["expression"]).evaluate({}) == HOLD


def test_every_validation_can_refuse() -> None:
    """No validation is dead: each is the one that refuses some case of the table."""
    messages = [v["message"] for v in policy().spec["validations"]]
    refusing = {
        message
        for case in REFUSED
        for message in policy().judge(request(lbhc()), case.old, case.new).failed
    }
    assert refusing == set(messages)


# ---- Kubernetes versions --------------------------------------------------------------------


def test_the_policy_needs_kubernetes_1_30() -> None:
    """admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is in the 1.30 API and not in
    1.29's (docs/deploying.md says so, and how to go without it)."""
    import kubernetes_validate  # type: ignore[import-untyped]
    from kubernetes_validate.utils import SchemaNotFoundError  # type: ignore[import-untyped]

    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        doc = one(render(OVERLAY), kind)
        kubernetes_validate.validate(doc, "1.30", strict=True)
        with pytest.raises(SchemaNotFoundError):
            kubernetes_validate.validate(doc, "1.29", strict=True)


# ---- RBAC: patch on nodes here, and nowhere else --------------------------------------------


def test_the_overlay_grants_the_default_install_plus_patch_on_nodes() -> None:
    default, hold = atoms(render("default")), atoms(render(OVERLAY))
    assert hold - default == {HOLD_GRANT}
    assert default - hold == set()


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_hold_deletion_overlay_may_patch_nodes(overlay: str) -> None:
    rules = granted_rules(render(overlay))
    assert allowed(rules, NODE_PATCH) == (overlay == OVERLAY)
    for verb in ("update", "create", "delete", "deletecollection"):
        assert not allowed(rules, Request("", "nodes", verb, "", "node-1")), verb
    for verb in ("patch", "update"):
        assert not allowed(rules, Request("", "nodes/status", verb, "", "node-1")), verb


def test_it_combines_with_the_autopilot_component(tmp_path: Path) -> None:
    """Everything it adds is cluster-scoped: with components/autopilot it writes nothing into
    a namespace GKE manages, and grants autopilot's RBAC plus patch on nodes."""
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    mine = tmp_path / "deploy" / "overlays" / "mine"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["../../base"],
                "components": ["../../components/autopilot", "../../components/hold-deletion"],
            }
        )
    )
    docs = render("mine", root=tmp_path)
    for check in CHECKS.values():
        assert check(docs) == []
    assert atoms(docs) - atoms(render("autopilot")) == {HOLD_GRANT}
    assert atoms(render("autopilot")) - atoms(docs) == set()
    assert {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= {
        d["kind"] for d in docs
    }


def test_the_documented_install_without_the_policy_keeps_the_grant(tmp_path: Path) -> None:
    """docs/deploying.md's overlay for clusters older than 1.30, as written there: the two
    policy objects gone, the RBAC grant (alone, as the page says) still there."""
    deploying = (ROOT / "docs" / "deploying.md").read_text()
    section = deploying.split("\n## Holding nodes until their load balancers drain them", 1)[1]
    section = section.split("\n## ", 1)[0]
    (overlay,) = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    mine = tmp_path / "deploy" / "overlays" / "mine"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(overlay)
    docs = render("mine", root=tmp_path)
    kinds = {d["kind"] for d in docs}
    assert not kinds & {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    assert atoms(docs) == atoms(render(OVERLAY))
    assert [d for d in docs if not d["kind"].startswith("ValidatingAdmission")] == [
        d for d in render(OVERLAY) if not d["kind"].startswith("ValidatingAdmission")
    ]


# ---- The setting ----------------------------------------------------------------------------


def test_the_overlay_turns_hold_deletion_on() -> None:
    """LBHC_HOLD_DELETION, as the string "on" (unquoted, YAML would make it a boolean), in the
    Deployment of this overlay and of no other."""
    for overlay in OVERLAYS:
        container = one(render(overlay), "Deployment", "lbhc")["spec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for e in container["containers"][0]["env"]}
        if overlay == OVERLAY:
            assert env["LBHC_HOLD_DELETION"] == "on"
        else:
            assert "LBHC_HOLD_DELETION" not in env, overlay
    assert not unknown_variables({"LBHC_HOLD_DELETION": "on"})
