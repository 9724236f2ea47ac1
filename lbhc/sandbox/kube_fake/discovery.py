"""/version and legacy discovery (/api, /api/v1, /apis, /apis/G, /apis/G/V): enough for
kubectl to map `nodes`, `svc`, `cm`, `ds`, `ev`, `leases` to paths.

kubectl asks for aggregated discovery first (Accept: ...;as=APIGroupDiscoveryList, then plain
application/json). The fake answers plain JSON, which clients take as "no aggregated
discovery" and fall back to these legacy documents (tests/sandbox/kube_fake/test_kubectl.py
runs kubectl 1.27 to 1.33 through that path).
"""

from __future__ import annotations

import re
from typing import Any

from .resources import GROUP_VERSIONS, RESOURCES


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


def api_resource_list_body(group_version: str = "v1") -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for resource in RESOURCES:
        if resource.api_version != group_version:
            continue
        entry: dict[str, Any] = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": list(resource.verbs),
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        resources.append(entry)
        if resource.status_subresource:
            resources.append(
                {
                    "name": f"{resource.plural}/status",
                    "singularName": "",
                    "namespaced": resource.namespaced,
                    "kind": resource.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    return {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}


def _group(name: str) -> dict[str, Any]:
    versions = [
        {"groupVersion": gv, "version": gv.partition("/")[2]}
        for gv in GROUP_VERSIONS
        if gv.partition("/")[0] == name and "/" in gv
    ]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def api_group_list_body() -> dict[str, Any]:
    groups = dict.fromkeys(gv.partition("/")[0] for gv in GROUP_VERSIONS if "/" in gv)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in groups]}


def api_group_body(name: str) -> dict[str, Any]:
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}
