"""Global networks: read-only over the API, seeded by the fake's owner."""

from __future__ import annotations

from typing import Any

from .. import urls
from ..errors import invalid_value, not_found
from ..store import Store
from . import common
from .common import Kind, Request, Response

KIND = Kind(
    collection="networks",
    kind="compute#network",
    label="network",
    fields=frozenset(),  # no API mutations are served
)


def seed(store: Store, project: str, name: str) -> dict[str, Any]:
    """An auto-mode VPC network as `gcloud compute networks create` makes by default."""
    fields = {
        "autoCreateSubnetworks": True,
        "routingConfig": {"routingMode": "REGIONAL"},
        "networkFirewallPolicyEnforcementOrder": "AFTER_CLASSIC_FIREWALL",
    }
    network = common.new_resource(store, KIND, project, "global", name, fields)
    store.bucket(KIND.collection, project, "global")[name] = network
    return network


def resolve(store: Store, project: str, ref: str, field: str) -> str:
    """Canonical URL of an existing network given a URL, a partial path or a bare name."""
    if "/" in ref:
        parsed = urls.parse_ref(ref, project)
    else:
        parsed = urls.Ref(project, "global", KIND.collection, ref)
    if parsed is None or parsed.scope != "global" or parsed.collection != KIND.collection:
        raise invalid_value(field, ref, "Must be a network URL.")
    if store.get(KIND.collection, parsed.project, "global", parsed.name) is None:
        raise not_found(parsed.path)
    return parsed.url


def handle_get(req: Request) -> Response:
    return common.get(req, KIND, req.params["network"])


def handle_list(req: Request) -> Response:
    return common.list_collection(req, KIND)
