"""A node's VM as the cloud provider derives it, and the lazy map the controller's reader
uses: the same URLs as instance_urls, made only when looked up."""

from __future__ import annotations

from lbhc.model.cloud import InstanceUrls, instance_urls
from tests.builders import PROJECT, REGION, node
from tests.builders import kube as kube_builders

WITH_PROVIDER_ID = node(
    "gke-a", kube_builders.with_provider_id("gce://other-project/us-central1-f/gke-a-vm")
)
NODES = (node("node-1"), WITH_PROVIDER_ID)


def test_the_lazy_map_gives_what_instance_urls_gives() -> None:
    lazy = InstanceUrls(NODES, PROJECT, REGION)
    assert dict(lazy) == instance_urls(NODES, PROJECT, REGION)
    assert lazy["gke-a"].endswith("projects/other-project/zones/us-central1-f/instances/gke-a-vm")
    assert lazy["node-1"].endswith(f"projects/{PROJECT}/zones/{REGION}-a/instances/node-1")
    assert "node-9" not in lazy and len(lazy) == 2
