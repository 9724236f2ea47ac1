"""/version and legacy discovery (/api, /api/v1, /apis): enough for kubectl to map
`nodes,services,pods` to paths. The fake answers plain application/json, which clients take as
"no aggregated discovery" and fall back to these legacy documents."""

from __future__ import annotations

import re
from typing import Any

from .resources import RESOURCES

VERBS = ["get", "list"]  # only what is served; "watch" joins when the fake serves it


def version_body(git_version: str) -> dict[str, Any]:
    match = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)(?:[-+].*)?", git_version)
    if match is None:
        raise ValueError(f"version must look like v1.32.4, got {git_version!r}")
    major, minor = match[1], match[2]
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": str(max(int(minor) - 1, 0)),
        "gitVersion": git_version,
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2025-04-22T16:03:20Z",
        "goVersion": "go1.23.8",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions_body(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_resource_list_body() -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for resource in RESOURCES:
        entry: dict[str, Any] = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": VERBS,
            "shortNames": list(resource.short_names),
        }
        if resource.categories:
            entry["categories"] = list(resource.categories)
        resources.append(entry)
    return {"kind": "APIResourceList", "groupVersion": "v1", "resources": resources}


def api_group_list_body() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
