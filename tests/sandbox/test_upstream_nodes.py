"""The emulated service controller's node predicates and node-sync trigger, one table each, as
k8s.io/cloud-provider controllers/service/controller.go has them (nodeIncludedPredicate and
friends, shouldSyncUpdatedNode, the node informer's handlers, nodesSufficientlyEqual)."""

from __future__ import annotations

import pytest

from lbhc.sandbox.upstream.nodes import (
    EXCLUDE_BALANCERS_LABEL,
    NodeView,
    host_url,
    is_included,
    is_not_deleted,
    is_untainted,
    node_sync_triggered,
    nodes_sufficiently_equal,
    should_sync_updated_node,
    stable_node_set,
)
from tests.builders import kube


def view(*tweaks: kube.Tweak, name: str = "n1") -> NodeView:
    return NodeView.of(kube.node(name, *tweaks))


def excluded(value: str) -> kube.Tweak:
    return kube.with_labels({EXCLUDE_BALANCERS_LABEL: value})


NO_EXECUTE = kube.with_taint(kube.TO_BE_DELETED_TAINT, "NoExecute")
CANDIDATE = kube.with_taint("DeletionCandidateOfClusterAutoscaler")
MOVED = kube.with_provider_id("gce://p/us-central1-b/n1")


@pytest.mark.parametrize(
    ("desc", "node", "included", "untainted", "not_deleted"),
    [
        ("plain", view(), True, True, True),
        ("label false", view(excluded("false")), True, True, True),
        ("label 0 (Go ParseBool)", view(excluded("0")), True, True, True),
        ("label F", view(excluded("F")), True, True, True),
        ("label true", view(excluded("true")), False, True, True),
        ("label 1", view(excluded("1")), False, True, True),
        ("label empty: unparsable", view(excluded("")), False, True, True),
        ("label yes: unparsable", view(excluded("yes")), False, True, True),
        ("autoscaler taint", view(kube.to_be_deleted("1700000000")), True, False, True),
        ("its key under another effect", view(NO_EXECUTE), True, False, True),
        ("another taint", view(CANDIDATE), True, True, True),
        ("deletionTimestamp", view(kube.deleting()), True, True, False),
        ("not Ready: not a predicate (KEP-3458)", view(kube.ready(False)), True, True, True),
    ],
)
def test_predicates(
    desc: str, node: NodeView, included: bool, untainted: bool, not_deleted: bool
) -> None:
    assert (is_included(node), is_untainted(node), is_not_deleted(node)) == (
        included,
        untainted,
        not_deleted,
    ), desc
    assert bool(stable_node_set([node])) == (included and untainted and not_deleted), desc


@pytest.mark.parametrize(
    ("desc", "old", "new", "syncs"),
    [
        ("autoscaler taint added", view(), view(kube.to_be_deleted()), False),
        ("deletionTimestamp set", view(), view(kube.deleting()), False),
        ("readiness lost", view(), view(kube.ready(False)), False),
        ("excluded", view(), view(excluded("true")), True),
        ("included again", view(excluded("true")), view(excluded("false")), True),
        ("true to unparsable: still excluded", view(excluded("true")), view(excluded("")), False),
        ("providerID changed", view(), view(MOVED), True),
        ("another label", view(), view(kube.with_labels({"team": "a"})), False),
    ],
)
def test_should_sync_updated_node(desc: str, old: NodeView, new: NodeView, syncs: bool) -> None:
    assert should_sync_updated_node(old, new) is syncs, desc


def by_name(*nodes: NodeView) -> dict[str, NodeView]:
    return {n.name: n for n in nodes}


A, B = view(name="a"), view(name="b")
A_AGAIN = view(kube.with_uid("u2"), name="a")


@pytest.mark.parametrize(
    ("desc", "previous", "current", "triggered"),
    [
        ("the first look: the informer's initial Adds", None, by_name(A), True),
        ("nothing changed", by_name(A, B), by_name(A, B), False),
        ("a node added", by_name(A), by_name(A, B), True),
        ("a node deleted", by_name(A, B), by_name(A), True),
        ("deleted and made again (a new uid)", by_name(A), by_name(A_AGAIN), True),
        ("tainted", by_name(A, B), by_name(A, view(kube.to_be_deleted(), name="b")), False),
        ("being deleted", by_name(A, B), by_name(A, view(kube.deleting(), name="b")), False),
        ("labelled out", by_name(A, B), by_name(A, view(excluded("true"), name="b")), True),
    ],
)
def test_node_sync_triggered(
    desc: str,
    previous: dict[str, NodeView] | None,
    current: dict[str, NodeView],
    triggered: bool,
) -> None:
    assert node_sync_triggered(previous, current) is triggered, desc


@pytest.mark.parametrize(
    ("desc", "old", "new", "equal"),
    [
        ("same", [A, B], [B, A], True),
        ("one fewer", [A, B], [A], False),
        ("another name", [A], [B], False),
        ("another providerID", [A], [view(kube.with_provider_id("gce://p/z/a"), name="a")], False),
        ("a taint is not compared", [A], [view(kube.to_be_deleted(), name="a")], True),
    ],
)
def test_nodes_sufficiently_equal(
    desc: str, old: list[NodeView], new: list[NodeView], equal: bool
) -> None:
    assert nodes_sufficiently_equal(old, new) is equal, desc


@pytest.mark.parametrize(
    ("provider_id", "zone"),
    [("gce://other-project/us-central1-b/vm-name", "us-central1-b"), (None, "us-central1-f")],
)
def test_host_url_is_the_nodes_name_in_its_zone(provider_id: str | None, zone: str) -> None:
    """By name, as getInstancesByNames finds it, in the cloud provider's project."""
    node = view(kube.with_provider_id(provider_id), name="n1")
    assert host_url(node, "proj", "us-central1-f") == (
        f"https://www.googleapis.com/compute/v1/projects/proj/zones/{zone}/instances/n1"
    )
