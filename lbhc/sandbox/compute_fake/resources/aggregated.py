"""aggregatedList of any collection: one page of a project's resources across its scopes, keyed
by scope as the real API answers (`items: {"global": {"healthChecks": [...]}, "regions/R":
{...}, "zones/Z": {...}}`).

Every scope the fake reports (global where the collection has it, the regions and zones in
use plus the default ones) appears on every page: with its resources on that page, or with the
`warning` the real API gives a scope with none there, NO_RESULTS_ON_PAGE (the discovery
document's *ScopedList.warning; the message is the real API's). Resources are paged in
(scope, name) order, so a page token is a (scope, name) key.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import listing, urls
from .common import Request, Response


def scope_of(resource: dict[str, Any]) -> str:
    """The scope of a resource ("zones/Z", "regions/R" or "global"), from its zone or region
    URL."""
    if resource.get("zone"):
        return "zones/" + str(resource["zone"]).rsplit("/", 1)[1]
    if resource.get("region"):
        return "regions/" + str(resource["region"]).rsplit("/", 1)[1]
    return "global"


def scopes(
    req: Request, *, global_: bool = False, regions: bool = False, zones: bool = False
) -> set[str]:
    """The scopes an aggregated list reports: "global", every region and/or every zone."""
    found = {"global"} if global_ else set()
    if regions:
        found |= {f"regions/{region}" for region in req.store.regions}
    if zones:
        found |= {f"zones/{zone}" for zone in req.store.zones}
    return found


def handle(req: Request, collection: str, kind: str, reported: set[str]) -> Response:
    """The aggregated list of `collection`; `kind` is the discovery schema's default kind."""
    store, project = req.store, req.project
    params = listing.parse(req.query)
    resources = [resource for _, resource in store.scoped(collection, project)]

    def key(resource: dict[str, Any]) -> tuple[str, ...]:
        return (scope_of(resource), str(resource["name"]))

    page, token = listing.paginate(resources, params, key=key)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for resource in page:
        grouped.setdefault(scope_of(resource), []).append(copy.deepcopy(resource))
    items: dict[str, Any] = {}
    for scope in sorted(reported | set(grouped)):
        if scope in grouped:
            items[scope] = {collection: grouped[scope]}
        else:
            items[scope] = {
                "warning": {
                    "code": "NO_RESULTS_ON_PAGE",
                    "message": f"There are no results for scope '{scope}' on this page.",
                    "data": [{"key": "scope", "value": scope}],
                }
            }
    body: dict[str, Any] = {
        "kind": kind,
        "id": f"projects/{project}/aggregated/{collection}",
        "items": items,
        "selfLink": f"{urls.CANONICAL_BASE}projects/{project}/aggregated/{collection}",
    }
    if token:
        body["nextPageToken"] = token
    return 200, body
