"""Whether gce.node_tags are the nodes' own: which VMs are read, and when their tags say the
setting is wrong."""

from __future__ import annotations

import pytest

from lbhc.planner.node_tags import NodeTagMismatch, node_tag_mismatch, nodes_to_sample
from tests.builders import PROJECT, REGION, node

GKE_TAG = frozenset({"gke-prod-1a2b3c4d-node"})


@pytest.mark.parametrize(
    ("carried", "node_tags", "mismatch"),
    [
        ({"n-1": GKE_TAG, "n-2": GKE_TAG}, ("gke-prod-1a2b3c4d-node",), False),
        ({"n-1": GKE_TAG, "n-2": GKE_TAG}, ("gke-prod-node",), True),
        ({"n-1": frozenset(), "n-2": frozenset()}, ("gke-prod-node",), True),
        # One VM with the tag: right for its pool; another node pool is judged per pool.
        ({"n-1": frozenset(), "n-2": GKE_TAG}, ("gke-prod-1a2b3c4d-node",), False),
        # Any of several tags is enough, as for the firewall's targetTags.
        ({"n-1": GKE_TAG}, ("other", "gke-prod-1a2b3c4d-node"), False),
        ({}, ("gke-prod-node",), False),  # nothing read: nothing to say
        ({"n-1": GKE_TAG}, (), False),  # no tags configured (teardown): nothing to compare
    ],
    ids=["right", "wrong", "vms-untagged", "one-of-two", "any-tag", "none-read", "no-tags"],
)
def test_a_mismatch_only_when_no_vm_read_carries_a_configured_tag(
    carried: dict[str, frozenset[str]], node_tags: tuple[str, ...], mismatch: bool
) -> None:
    assert (node_tag_mismatch(carried, node_tags) is not None) == mismatch


def test_the_mismatch_names_the_tags_configured_and_carried_and_the_fix() -> None:
    found = node_tag_mismatch({"n-2": GKE_TAG, "n-1": frozenset()}, ("gke-prod-node",))
    assert isinstance(found, NodeTagMismatch)
    text = found.message()
    assert text.startswith("none of the 2 node(s) read (n-1, n-2) carries a network tag of ")
    assert "gce.node_tags (gke-prod-node); they carry gke-prod-1a2b3c4d-node:" in text
    assert "set --node-tags to the nodes' tag" in text


def test_the_sample_is_the_first_nodes_by_name_a_load_balancer_may_send_to() -> None:
    nodes = [
        node("n-4"),
        node("n-1", labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""}),
        node("n-3"),
        node("n-2"),
        node("n-5"),
    ]
    sample = nodes_to_sample(nodes, PROJECT, REGION)
    assert list(sample) == ["n-2", "n-3", "n-4"]
    assert sample["n-2"].endswith(f"projects/{PROJECT}/zones/{REGION}-a/instances/n-2")
