"""A skeleton OpenAPI v3 (/openapi/v3 and one document per group-version): the paths and
operations without schemas.

It exists for one reason: `kubectl apply`/`create` validate by default, and kubectl decides
between server-side field validation and downloading the full schema (which the fake does not
have) by looking for a PATCH operation with a `fieldValidation` parameter for the kind here.
Without schemas, `kubectl apply` computes its strategic merge patch from its compiled-in Go
types, as it does for any built-in kind. The fake accepts `fieldValidation` and does not check
unknown fields.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .resources import GROUP_VERSIONS, RESOURCES, Resource

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "pretty")


def _prefix(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def openapi_v3_root() -> dict[str, Any]:
    return {
        "paths": {
            _prefix(gv): {"serverRelativeURL": f"/openapi/v3/{_prefix(gv)}?hash={_hash(gv)}"}
            for gv in GROUP_VERSIONS
        }
    }


def _hash(group_version: str) -> str:
    return hashlib.sha512(group_version.encode()).hexdigest()[:128].upper()


def openapi_v3_document(prefix: str, version: str) -> dict[str, Any] | None:
    """The document for `prefix` ("api/v1", "apis/apps/v1"), or None if not served."""
    group_version = next((gv for gv in GROUP_VERSIONS if _prefix(gv) == prefix), None)
    if group_version is None:
        return None
    paths: dict[str, Any] = {}
    for resource in RESOURCES:
        if resource.api_version == group_version and not resource.view:
            paths[_item_path(resource)] = {
                "patch": {
                    "operationId": f"patch{resource.kind}",
                    # kubectl reads the operation's own parameters, not the path's.
                    "parameters": [
                        {"name": name, "in": "query", "schema": {"type": "string"}}
                        for name in _QUERY
                    ],
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {
                        "group": resource.group,
                        "version": resource.version,
                        "kind": resource.kind,
                    },
                    "responses": {"200": {"description": "OK"}},
                },
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _item_path(resource: Resource) -> str:
    scope = "namespaces/{namespace}/" if resource.namespaced else ""
    return f"/{_prefix(resource.api_version)}/{scope}{resource.plural}/{{name}}"
