"""Paged lists served from the fake's cached item encodings, through the real kubernetes
client: an object updated between pages is served in its old version within the continued
list (read at the first page's resourceVersion) and in its new version on a fresh list."""

from __future__ import annotations

from typing import Any

from lbhc.sandbox.kube_fake import KubeFake
from tests.builders.kube import node
from tests.kube_fixtures import raw, seed


def paged(core: Any, limit: int, **kwargs: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Every item of a paged node list, and the resourceVersion of each page."""
    items: list[dict[str, Any]] = []
    versions: list[str] = []
    token = None
    while True:
        extra = {"_continue": token} if token else {}
        page = raw(core.list_node(limit=limit, _preload_content=False, **extra, **kwargs))
        items += page["items"]
        versions.append(page["metadata"]["resourceVersion"])
        token = page["metadata"].get("continue")
        if not token:
            return items, versions


def expected(fake: KubeFake) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        for obj in fake.objects("Node")
    ]


def test_paged_list_serves_each_version_at_its_resource_version(
    kube_fake: KubeFake, core: Any
) -> None:
    seed(kube_fake, *(node(f"node-{i}") for i in range(7)))
    before = expected(kube_fake)
    assert paged(core, 2)[0] == before  # every encoding is now cached

    first = raw(core.list_node(limit=3, _preload_content=False))
    assert first["items"] == before[:3]
    kube_fake.taint("node-4", "example.com/drain", "yes")  # not yet served: on a later page
    kube_fake.taint("node-1", "example.com/drain", "yes")  # already served
    after = expected(kube_fake)
    assert after != before

    rest: list[dict[str, Any]] = []
    token = first["metadata"]["continue"]
    while token:
        page = raw(core.list_node(limit=3, _continue=token, _preload_content=False))
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        rest += page["items"]
        token = page["metadata"].get("continue")
    assert first["items"] + rest == before  # node-4 in its old version

    items, versions = paged(core, 3)
    assert items == after
    assert set(versions) == {kube_fake.resource_version}
    assert paged(core, 500)[0] == after == raw(core.list_node(_preload_content=False))["items"]
    # Selectors filter the same cached items.
    selected = paged(core, 2, field_selector="metadata.name=node-4")[0]
    assert selected == [obj for obj in after if obj["metadata"]["name"] == "node-4"]
    assert selected[0]["spec"]["taints"][0]["key"] == "example.com/drain"
