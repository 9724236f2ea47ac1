"""Instance group membership: instanceGroups.addInstances and removeInstances, zonal
operations whose effect lands at DONE, checked again then (a change made meanwhile fails the
operation with the error the request would have had).

What the real API answers, and the fake with it:
- addInstances of an instance already in the group: 400 memberAlreadyExists, "Resource
  '<instance path>' is already a member of '<group path>'." (the whole body is in
  ansible/ansible#72897; kubernetes/ingress-gce#2587 ignores that reason); the request is
  refused whole, nothing added.
- removeInstances of an instance that does not exist: 404 notFound naming the instance
  (hashicorp/terraform-provider-google#56).
- "All of the instances in the instance group must be in the same network" (the discovery
  document's addInstances): an instance on another network than the group's is 400 invalid.

Choices where the real API is not documented precisely:
- removeInstances of an existing instance that is not a member: 400 invalid on
  `resource.instances[i].instance`, "Instance is not a member of the instance group.", the
  request refused whole, as the fake's targetPools.removeInstance of a non-member is (whose
  real answer is known); nothing public that we found shows the instance group's.
- addInstances of an instance that was never seeded: 404 notFound naming it (a real instance
  exists or not). A member seeded without an instance (ComputeFake.add_instance_group takes
  bare URLs) can still be removed.
- An instance in another zone than the group is 400 invalid; a request without instances is
  400 required on `resource.instances`, as targetPools.addInstance's.
"""

from __future__ import annotations

from typing import Any

from .. import urls
from ..errors import ComputeError, invalid_value, not_found
from ..store import Store
from ..validation import reference_list
from . import common
from .common import Request, Response
from .instance_groups import KIND, instance_of, instance_ref, members, set_size

_NOT_A_MEMBER = "Instance is not a member of the instance group."


def _refs(req: Request) -> list[tuple[str, str]]:
    """(field, canonical instance URL) of each entry of `instances`, duplicates dropped."""
    refs: dict[str, str] = {}
    for field, ref in reference_list(req.json, "instances", "instance"):
        refs.setdefault(instance_ref(req.project, req.zone or "", ref, field), field)
    return [(field, url) for url, field in refs.items()]


def _path(url: str) -> str:
    return url.removeprefix(urls.CANONICAL_BASE)


def _check_add(store: Store, group: dict[str, Any], refs: list[tuple[str, str]]) -> str:
    """Each instance can join the group; returns the group's network, which a group made
    without one takes from the first instance added."""
    current = {m["instance"] for m in members(store, group)}
    network: str | None = group.get("network")
    for field, url in refs:
        if url in current:
            message = (
                f"Resource '{_path(url)}' is already a member of '{_path(group['selfLink'])}'."
            )
            raise ComputeError(400, "memberAlreadyExists", message)
        vm = instance_of(store, url)
        if vm is None:
            raise not_found(_path(url))
        vm_network = str(vm["networkInterfaces"][0]["network"])
        if network is not None and vm_network != network:
            why = f"Instance is in network '{vm_network}', the group in '{network}'."
            raise invalid_value(field, url, why)
        network = network or vm_network
    assert network is not None  # refs is never empty
    return network


def _check_remove(store: Store, group: dict[str, Any], refs: list[tuple[str, str]]) -> None:
    current = {m["instance"] for m in members(store, group)}
    for field, url in refs:
        if url in current:
            continue
        if instance_of(store, url) is None:
            raise not_found(_path(url))
        raise invalid_value(field, url, _NOT_A_MEMBER)


def _group(req: Request) -> dict[str, Any]:
    return common.require(req.store, KIND, req.project, req.scope, req.params["instanceGroup"])


def handle_add_instances(req: Request) -> Response:
    store, group = req.store, _group(req)
    refs = _refs(req)
    _check_add(store, group, refs)

    def apply() -> None:
        live = _group(req)
        live["network"] = _check_add(store, live, refs)
        members(store, live).extend({"instance": url} for _, url in refs)
        set_size(store, live)

    return common.submit(req, "addInstances", group["selfLink"], group["id"], apply)


def handle_remove_instances(req: Request) -> Response:
    store, group = req.store, _group(req)
    refs = _refs(req)
    _check_remove(store, group, refs)
    removed = {url for _, url in refs}

    def apply() -> None:
        live = _group(req)
        _check_remove(store, live, refs)
        kept = [m for m in members(store, live) if m["instance"] not in removed]
        store.members[str(live["id"])] = kept
        set_size(store, live)

    return common.submit(req, "removeInstances", group["selfLink"], group["id"], apply)
