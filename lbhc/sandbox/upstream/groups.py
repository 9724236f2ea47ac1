"""The shared unmanaged instance groups `k8s-ig--<cluster id>` (one per zone), which two
upstream controllers keep in the same way: a missing group is created with only its name, its
instances are listed, nodes no longer wanted are removed and then wanted ones added
(compared by instance name). kubernetes/cloud-provider-gcp providers/gce/
gce_loadbalancer_internal.go ensureInternalInstanceGroup, and kubernetes/ingress-gce
pkg/instancegroups/manager.go ensureInstanceGroupAndPorts and Sync.

Upstream caps a group at 1000 instances (alphabetically first); the sandbox's clusters are
far smaller, so the cap is kept but never reached. Neither upstream batches its calls."""

from __future__ import annotations

import time
from collections.abc import Iterable

from lbhc.sandbox.compute_fake import ComputeFake

from .compute import ComputeRequestError, ComputeWriter
from .pool_hosts import Cut

MAX_INSTANCES_PER_GROUP = 1000  # maxInstancesPerInstanceGroup, ingress-gce's maxIGSize
COMPUTE = "https://www.googleapis.com/compute/v1/"


def instance_url(project: str, zone: str, name: str) -> str:
    """ToInstanceReferences' instance URL."""
    return f"{COMPUTE}projects/{project}/zones/{zone}/instances/{name}"


def group_url(project: str, zone: str, name: str) -> str:
    """The group's selfLink, as the linkers write it into a backend service."""
    return f"{COMPUTE}projects/{project}/zones/{zone}/instanceGroups/{name}"


class InstanceGroups:
    def __init__(self, compute: ComputeFake, writer: ComputeWriter, project: str) -> None:
        self._compute, self._w, self._project = compute, writer, project
        self.cuts: list[Cut] = []  # nodes removed from a group (group name), in order

    def exists(self, name: str, zone: str) -> bool:
        return name in self._compute.instance_groups(self._project, zone)

    def ensure(self, name: str, zone: str) -> str:
        """The group, created with only its name if missing (409 taken as success, as
        ingress-gce takes it); returns its URL."""
        if not self.exists(name, zone):
            try:
                self._w.insert("instanceGroups", {"name": name}, zone=zone)
            except ComputeRequestError as exc:
                if not exc.already_exists:
                    raise
        return group_url(self._project, zone, name)

    def members(self, name: str, zone: str) -> set[str]:
        """ListInstancesInInstanceGroup(ALL): the instances' names; 404 if no group."""
        try:
            urls = self._compute.instance_group_members(self._project, zone, name)
        except KeyError:
            path = f"projects/{self._project}/zones/{zone}/instanceGroups/{name}"
            message = f"The resource '{path}' was not found"
            raise ComputeRequestError(404, "notFound", message) from None
        return {url.rsplit("/", 1)[-1] for url in urls}

    def sync(self, name: str, zone: str, wanted: Iterable[str], keep: Iterable[str] = ()) -> None:
        """Bring the group's instances to `wanted` (node names in `zone`), never removing
        those in `keep` (nodes whose zone is not known yet). Removals first, then adds;
        a removal of an instance gone meanwhile (404) is ignored, as upstream ignores it."""
        kube = set(sorted(set(wanted))[:MAX_INSTANCES_PER_GROUP])
        gce = self.members(name, zone)
        remove = sorted(gce - kube - set(keep))
        add = sorted(kube - gce)
        if remove:
            try:
                self._call(name, zone, "removeInstances", remove)
            except ComputeRequestError as exc:
                if not exc.not_found:
                    raise
            else:
                now = time.time()
                self.cuts.extend(Cut(node, name, now) for node in remove)
        if add:
            self._call(name, zone, "addInstances", add)

    def delete(self, name: str, zone: str) -> None:
        """Delete the group unless a backend service still uses it (or it is gone)."""
        try:
            self._w.delete("instanceGroups", name, zone=zone)
        except ComputeRequestError as exc:
            if not exc.in_use:
                raise

    def _call(self, name: str, zone: str, verb: str, nodes: list[str]) -> None:
        refs = [{"instance": instance_url(self._project, zone, node)} for node in nodes]
        self._w.call("instanceGroups", name, verb, {"instances": refs}, zone=zone)
