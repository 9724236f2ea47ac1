"""ingress-gce's node filters, sync triggers and NEG subsets, one table each, as
kubernetes/ingress-gce has them: pkg/utils/zonegetter/zone_getter.go (nodePredicateInternal),
pkg/instancegroups/controller.go (nodeStatusChanged), pkg/neg/controller.go
(nodeUpdateRequiresResync) and pkg/neg/syncers/subsets.go, endpoints_calculator.go."""

from __future__ import annotations

import pytest

from lbhc.sandbox.upstream.ingress_gce import subsets
from lbhc.sandbox.upstream.ingress_gce.nodes import (
    EXCLUDE_BALANCER_LABEL,
    MASTER_ROLE_LABEL,
    OPERATION_LABEL,
    NodeFilter,
    instance_groups_triggered,
    negs_triggered,
)
from lbhc.sandbox.upstream.nodes import NodeView
from tests.builders import kube


def view(*tweaks: kube.Tweak, name: str = "n1") -> NodeView:
    return NodeView.of(kube.node(name, *tweaks))


DRAIN = kube.with_labels({OPERATION_LABEL: "drain"})
EXCLUDED_FALSE = kube.with_labels({EXCLUDE_BALANCER_LABEL: "false"})
UNSCHEDULABLE = kube.with_spec(unschedulable=True)


def with_pod_cidr(cidr: str) -> kube.Tweak:
    return kube.with_spec(podCIDR=cidr)


@pytest.mark.parametrize(
    ("desc", "node", "candidate", "candidate_and_unready"),
    [
        ("plain", view(), True, True),
        ("autoscaler taint", view(kube.to_be_deleted()), False, False),
        ("another taint", view(kube.with_taint("DeletionCandidateOfClusterAutoscaler")),
         True, True),
        ("drain label: only the NEG filter", view(DRAIN), True, False),
        ("deletionTimestamp: no filter looks", view(kube.deleting()), True, True),
        ("exclusion label, even false: present", view(EXCLUDED_FALSE), False, False),
        ("master role label", view(kube.with_labels({MASTER_ROLE_LABEL: ""})), False, False),
        ("not Ready", view(kube.ready(False)), False, True),
        ("no conditions: no info", view(kube.ready(None)), False, False),
        ("cordoned", view(UNSCHEDULABLE), True, True),
    ],
)  # fmt: skip
def test_filters(desc: str, node: NodeView, candidate: bool, candidate_and_unready: bool) -> None:
    assert NodeFilter.ALL.selects(node), desc
    assert NodeFilter.CANDIDATE.selects(node) is candidate, desc
    assert NodeFilter.CANDIDATE_AND_UNREADY.selects(node) is candidate_and_unready, desc


def by_name(*nodes: NodeView) -> dict[str, NodeView]:
    return {n.name: n for n in nodes}


A, B = view(name="a"), view(name="b")


def b(*tweaks: kube.Tweak) -> dict[str, NodeView]:
    return by_name(A, view(*tweaks, name="b"))


@pytest.mark.parametrize(
    ("desc", "previous", "current", "groups", "negs"),
    [
        ("the first look", None, by_name(A), True, True),
        ("nothing changed", by_name(A, B), by_name(A, B), False, False),
        ("a node added", by_name(A), by_name(A, B), True, True),
        ("a node deleted", by_name(A, B), by_name(A), True, True),
        ("tainted: only NEGs resync", by_name(A, B), b(kube.to_be_deleted()), False, True),
        ("drain-labelled: only NEGs", by_name(A, B), b(DRAIN), False, True),
        ("being deleted: neither", by_name(A, B), b(kube.deleting()), False, False),
        ("not Ready: both", by_name(A, B), b(kube.ready(False)), True, True),
        ("cordoned: the groups", by_name(A, B), b(UNSCHEDULABLE), True, False),
        ("podCIDR set: the groups", by_name(A, B), b(with_pod_cidr("10.4.0.0/24")), True, False),
        ("providerID changed: NEGs", by_name(A, B), b(kube.with_provider_id("gce://p/z-b/b")),
         False, True),
    ],
)  # fmt: skip
def test_sync_triggers(
    desc: str,
    previous: dict[str, NodeView] | None,
    current: dict[str, NodeView],
    groups: bool,
    negs: bool,
) -> None:
    assert instance_groups_triggered(previous, current) is groups, desc
    assert negs_triggered(previous, current) is negs, desc


def nodes(count: int, zone: str = "us-central1-a", first: int = 0) -> list[NodeView]:
    return [
        view(kube.with_provider_id(f"gce://p/{zone}/n{i}"), name=f"n{i}")
        for i in range(first, first + count)
    ]


@pytest.mark.parametrize(
    ("desc", "zoned", "internal", "local", "sizes"),
    [
        ("internal Cluster, one zone: 24", {"a": 30}, True, False, {"a": 24}),
        ("internal Cluster, two zones: 24 in all", {"a": 30, "b": 30}, True, False,
         {"a": 12, "b": 12}),
        ("internal Cluster, five zones: 25", {z: 10 for z in "abcde"}, True, False,
         {z: 5 for z in "abcde"}),
        ("a small zone gives its share to the others", {"a": 2, "b": 40}, True, False,
         {"a": 2, "b": 22}),
        ("external Cluster, no endpoints: three a zone", {"a": 30, "b": 30}, False, False,
         {"a": 3, "b": 3}),
        ("internal Local: every node, up to 250", {"a": 30}, True, True, {"a": 30}),
        ("fewer nodes than the subset", {"a": 3}, True, False, {"a": 3}),
    ],
)  # fmt: skip
def test_subset_sizes(
    desc: str, zoned: dict[str, int], internal: bool, local: bool, sizes: dict[str, int]
) -> None:
    listed = [n for i, (z, c) in enumerate(zoned.items()) for n in nodes(c, f"r1-{z}", 100 * i)]
    picked = subsets.neg_members(listed, "svc/demo", internal, local, {})
    assert {zone.removeprefix("r1-"): len(members) for zone, members in picked.items()} == sizes


def test_a_subset_keeps_its_members_and_drops_only_those_no_longer_candidates() -> None:
    """pickSubsetsMinRemovals: a new node does not displace a current member; a member gone
    from the candidates is replaced."""
    salt = subsets.salt("demo", "ilb")
    first = subsets.neg_members(nodes(30), salt, True, False, {})["us-central1-a"]
    more = subsets.neg_members(nodes(40), salt, True, False, {"us-central1-a": first})
    assert more["us-central1-a"] == sorted(first)
    gone = sorted(first)[0]
    left = [n for n in nodes(40) if n.name != gone]
    again = subsets.neg_members(left, salt, True, False, {"us-central1-a": first})
    assert gone not in again["us-central1-a"] and len(again["us-central1-a"]) == 24
    assert set(first) - {gone} <= set(again["us-central1-a"])


def test_the_salt_spreads_services_over_different_subsets() -> None:
    picks = {
        tuple(
            subsets.neg_members(nodes(40), subsets.salt("demo", s), True, False, {})[
                "us-central1-a"
            ]
        )
        for s in ("a", "b", "c")
    }
    assert len(picks) == 3
