"""PATCH bodies: JSON merge patch (RFC 7386), strategic merge patch, JSON patch (RFC 6902).

Strategic merge patch follows the patch strategies in the Go types for the lists that have
one (below); every other list is atomic and replaced, as the apiserver does. That includes a
Node's spec.taints, which is `+listType=atomic` (no patchMergeKey): a taint patch carries the
whole list, which is what `kubectl taint` sends. Supported directives: `$patch`
(merge/replace/delete), `$retainKeys`, `$setElementOrder/<list>` and
`$deleteFromPrimitiveList/<list>`; any other `$` key is a 400.
"""

from __future__ import annotations

import copy
from typing import Any

from .status import ApiError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = {"merge": MERGE, "strategic": STRATEGIC, "json": JSON_PATCH}

_META = {"metadata.finalizers": "", "metadata.ownerReferences": "uid"}
_POD_SPEC = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "containers.ports": "containerPort",
    "containers.env": "name",
    "containers.volumeMounts": "mountPath",
    "initContainers.env": "name",
    "initContainers.volumeMounts": "mountPath",
}
# Merge keys by kind and path (list items add no path component); "" merges primitives.
MERGE_KEYS: dict[str, dict[str, str]] = {
    "Node": {**_META, "status.conditions": "type", "status.addresses": "type"},
    "Pod": {**_META, **{f"spec.{k}": v for k, v in _POD_SPEC.items()}, "status.conditions": "type"},
    "Service": {**_META, "spec.ports": "port"},
    "DaemonSet": {
        **_META,
        **{f"spec.template.spec.{k}": v for k, v in _POD_SPEC.items()},
        "status.conditions": "type",
    },
    "Namespace": {**_META, "status.conditions": "type"},
    "Lease": dict(_META),
    "Event": dict(_META),
}
_DELETE = object()  # a map that `$patch: delete` removes


def apply_patch(kind: str, original: dict[str, Any], content_type: str, body: Any) -> Any:
    if content_type == MERGE:
        if not isinstance(body, dict):
            raise bad_request("a merge patch must be a JSON object")
        return merge_patch(original, body)
    if content_type == STRATEGIC:
        if not isinstance(body, dict):
            raise bad_request("a strategic merge patch must be a JSON object")
        merged = _strategic(original, body, MERGE_KEYS.get(kind, _META), "")
        if merged is _DELETE:
            raise bad_request("a strategic merge patch cannot delete the whole object")
        return merged
    if content_type == JSON_PATCH:
        return json_patch(original, body)
    raise ApiError(
        415,
        "the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE}, {STRATEGIC}",
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- strategic merge patch ----------------------------------------------------------------------


def _strategic(original: Any, patch: dict[str, Any], keys: dict[str, str], path: str) -> Any:
    directive = patch.get("$patch", "merge")
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != "$patch"})
    if directive == "delete":
        return _DELETE
    if directive != "merge":
        raise bad_request(f"Unknown patch type: {directive}")
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.partition("/")[2]
            result[name] = [x for x in result.get(name) or [] if x not in (value or [])]
            continue
        if key.startswith("$"):
            raise bad_request(f"unsupported strategic merge patch directive {key!r}")
        child = f"{path}.{key}" if path else key
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _strategic(result.get(key), value, keys, child)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and child in keys:
            result[key] = _merge_list(result.get(key), value, keys[child], keys, child)
        else:
            result[key] = _strip(value)
    for key, order in patch.items():
        if key.startswith("$setElementOrder/"):
            name = key.partition("/")[2]
            if isinstance(result.get(name), list):
                result[name] = _ordered(result[name], order, keys.get(f"{path}.{name}".lstrip(".")))
    if "$retainKeys" in patch:
        retain = patch["$retainKeys"]
        if not isinstance(retain, list):
            raise bad_request("$retainKeys must be a list of field names")
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(
    original: Any, patch: list[Any], merge_key: str, keys: dict[str, str], path: str
) -> list[Any]:
    current = list(original) if isinstance(original, list) else []
    if not merge_key:  # a set of primitives, e.g. metadata.finalizers
        return current + [x for x in patch if x not in current]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise bad_request(f"map in {path} does not contain declared merge key: {merge_key}")
        index = next(
            (i for i, old in enumerate(current) if old.get(merge_key) == item[merge_key]), None
        )
        if item.get("$patch") == "delete":
            current = [old for old in current if old.get(merge_key) != item[merge_key]]
        elif index is None:
            current.append(_strip(item))
        else:
            current[index] = _strategic(current[index], item, keys, path)
    return current


def _ordered(items: list[Any], order: Any, merge_key: str | None) -> list[Any]:
    """Items named in `order` first, in that order; the others keep their place after them."""
    if not isinstance(order, list):
        raise bad_request("$setElementOrder must be a list")

    def ident(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    wanted = [ident(o) for o in order]
    named = sorted((i for i in items if ident(i) in wanted), key=lambda i: wanted.index(ident(i)))
    return named + [i for i in items if ident(i) not in wanted]


def _strip(value: Any) -> Any:
    """A value without directives, as the apiserver stores it."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


# -- JSON patch ---------------------------------------------------------------------------------


def json_patch(document: Any, operations: Any) -> Any:
    if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
        raise bad_request("a JSON patch is a list of operations")
    doc = copy.deepcopy(document)
    for operation in operations:
        op = operation.get("op")
        path = _pointer(operation.get("path"))
        if op == "add":
            doc = _add(doc, path, copy.deepcopy(_value(operation)))
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(_value(operation)))
        elif op in ("move", "copy"):
            source = _pointer(operation.get("from"))
            if op == "move":
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value)
        elif op == "test":
            if _get(doc, path) != _value(operation):
                raise _failed(f"testing value {operation.get('path')} failed: test failed")
        else:
            raise bad_request(f"Unexpected kind: {op}")
    return doc


def _value(operation: dict[str, Any]) -> Any:
    if "value" not in operation:
        raise bad_request(f"missing value for {operation.get('op')} operation")
    return operation["value"]


def _pointer(text: Any) -> list[str]:
    if not isinstance(text, str) or (text and not text.startswith("/")):
        raise bad_request(f"JSON pointer must be empty or start with a slash: {text!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in text.split("/")[1:]]


def _failed(message: str) -> ApiError:
    return ApiError(422, message)


def _parent(doc: Any, path: list[str]) -> Any:
    for part in path[:-1]:
        doc = _child(doc, part)
    return doc


def _child(container: Any, part: str) -> Any:
    if isinstance(container, dict) and part in container:
        return container[part]
    if isinstance(container, list) and part.isdigit() and int(part) < len(container):
        return container[int(part)]
    raise _failed(f"doc is missing path: /{part}")


def _get(doc: Any, path: list[str]) -> Any:
    for part in path:
        doc = _child(doc, part)
    return doc


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, last = _parent(doc, path), path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list) and (
        last == "-" or (last.isdigit() and int(last) <= len(parent))
    ):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        raise _failed(f"add operation does not apply: doc is missing path: /{'/'.join(path)}")
    return doc


def _remove(doc: Any, path: list[str]) -> tuple[Any, Any]:
    if not path:
        raise _failed("cannot remove the whole document")
    parent, last = _parent(doc, path), path[-1]
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return doc, parent.pop(int(last))
    raise _failed(f"remove operation does not apply: doc is missing path: /{'/'.join(path)}")
