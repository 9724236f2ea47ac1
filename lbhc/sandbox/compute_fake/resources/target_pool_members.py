"""Target pool membership: targetPools.addInstance and targetPools.removeInstance, the calls
the cloud provider's node sync makes (kubernetes/cloud-provider-gcp providers/gce/
gce_targetpool.go AddInstancesToTargetPool, RemoveInstancesFromTargetPool).

Choices where the real API is not documented precisely:
- removeInstance of an instance that is not in the pool answers 400 `invalid`, "Invalid value
  for field 'resource.instance': '<url>'. Instance is not currently attached to this target
  pool.", as real GCE did (cloudfoundry/bosh-google-cpi-release#318); a request naming several
  instances of which one is not a member is refused whole, nothing removed.
- addInstance of an instance already in the pool is accepted and ends DONE, the pool unchanged
  (as addHealthCheck of the attached check is here). Nothing public that we found shows the
  real answer; the cloud provider never sends one (updateTargetPool adds only instances the
  pool it has just read lacks), so the choice cannot hide a fault in what the sandbox models.
- A request without instances is 400 `required` on `resource.instances`, as one without
  health checks is for addHealthCheck.
- Instance references are validated as the pool's own `instances` are (resolve_instance: a
  zonal instance URL, full or partial) and, like them, not checked for existence; members are
  compared by canonical URL, so any accepted form of a member's URL removes it.
"""

from __future__ import annotations

from typing import Any

from ..errors import invalid_value
from ..validation import reference_list
from . import common
from .common import Request, Response
from .target_pools import KIND, resolve_instance

_NOT_ATTACHED = "Instance is not currently attached to this target pool."


def _instance_refs(req: Request) -> list[tuple[str, str]]:
    """(the reference as given, its canonical URL) for each entry of `instances`."""
    refs = reference_list(req.json, "instances", "instance")
    return [(ref, resolve_instance(req.project, ref, field)) for field, ref in refs]


def _require_members(pool: dict[str, Any], refs: list[tuple[str, str]]) -> None:
    members = set(pool.get("instances", []))
    for ref, url in refs:
        if url not in members:
            raise invalid_value("resource.instance", ref, _NOT_ATTACHED)


def _pool(req: Request) -> dict[str, Any]:
    return common.require(req.store, KIND, req.project, req.scope, req.params["targetPool"])


def handle_add_instance(req: Request) -> Response:
    pool = _pool(req)
    added = list(dict.fromkeys(url for _, url in _instance_refs(req)))

    def apply() -> None:
        live = _pool(req)
        current = list(live.get("instances", []))
        live["instances"] = current + [url for url in added if url not in current]

    return common.submit(req, "addInstance", pool["selfLink"], pool["id"], apply)


def handle_remove_instance(req: Request) -> Response:
    pool = _pool(req)
    refs = _instance_refs(req)
    _require_members(pool, refs)  # a synchronous 400, as GCE answered it
    removed = {url for _, url in refs}

    def apply() -> None:
        live = _pool(req)
        _require_members(live, refs)  # removed meanwhile: the operation fails
        kept = [url for url in live.get("instances", []) if url not in removed]
        if kept:
            live["instances"] = kept
        else:
            live.pop("instances", None)  # the real API omits empty repeated fields

    return common.submit(req, "removeInstance", pool["selfLink"], pool["id"], apply)
