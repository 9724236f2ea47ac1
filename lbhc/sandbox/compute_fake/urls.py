"""Canonical resource URLs and parsing of the reference forms the real API accepts."""

from __future__ import annotations

import re
from dataclasses import dataclass

# The real API always emits selfLinks on this host, whatever endpoint served the request.
CANONICAL_BASE = "https://www.googleapis.com/compute/v1/"
_ACCEPTED_BASES = (CANONICAL_BASE, "https://compute.googleapis.com/compute/v1/")

_RELATIVE = re.compile(
    r"^(?:projects/(?P<project>[^/]+)/)?"
    r"(?P<scope>global|regions/[^/]+|zones/[^/]+)/(?P<collection>[^/]+)/(?P<name>[^/]+)$"
)


@dataclass(frozen=True)
class Ref:
    """A parsed resource reference: `projects/{project}/{scope}/{collection}/{name}`."""

    project: str
    scope: str  # "global", "regions/<r>" or "zones/<z>"
    collection: str
    name: str

    @property
    def path(self) -> str:
        return f"projects/{self.project}/{self.scope}/{self.collection}/{self.name}"

    @property
    def url(self) -> str:
        return CANONICAL_BASE + self.path


def scope_of(region: str | None) -> str:
    return "global" if region is None else f"regions/{region}"


def zone_scope(zone: str) -> str:
    return f"zones/{zone}"


def resource_path(project: str, scope: str, collection: str, name: str) -> str:
    return f"projects/{project}/{scope}/{collection}/{name}"


def resource_url(project: str, scope: str, collection: str, name: str) -> str:
    return CANONICAL_BASE + resource_path(project, scope, collection, name)


def collection_url(project: str, scope: str, collection: str) -> str:
    return f"{CANONICAL_BASE}projects/{project}/{scope}/{collection}"


def region_url(project: str, region: str) -> str:
    return f"{CANONICAL_BASE}projects/{project}/regions/{region}"


def zone_url(project: str, zone: str) -> str:
    return f"{CANONICAL_BASE}projects/{project}/zones/{zone}"


def parse_ref(ref: str, default_project: str) -> Ref | None:
    """Parse a full URL (either API host) or a partial `[projects/p/]scope/coll/name` path."""
    relative = ref
    for base in _ACCEPTED_BASES:
        if ref.startswith(base):
            relative = ref[len(base) :]
            break
    else:
        if "://" in ref:
            return None
    match = _RELATIVE.match(relative)
    if match is None:
        return None
    return Ref(
        project=match["project"] or default_project,
        scope=match["scope"],
        collection=match["collection"],
        name=match["name"],
    )
