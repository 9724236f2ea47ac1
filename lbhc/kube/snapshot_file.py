"""`--cluster-snapshot FILE`: plan offline from a `kubectl get ... -A -o json` dump."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from lbhc.kube.decode import PROJECTIONS, describe_validation_error, object_label
from lbhc.model.cluster import ClusterSnapshot, DaemonSet, Namespace, Node, Pod, Service

EXPECTED = (
    "a v1 List as printed by `kubectl get nodes,services,pods,daemonsets,namespaces -A -o json`"
)


class SnapshotFileError(ValueError):
    pass


def load_cluster_snapshot(path: Path) -> ClusterSnapshot:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SnapshotFileError(f"cluster snapshot {path}: cannot read: {exc.strerror}") from exc
    return parse_cluster_snapshot(text, str(path))


def parse_cluster_snapshot(text: str, source: str = "<input>") -> ClusterSnapshot:
    document = _load(text, source)
    items = _items(document, source)
    nodes: list[Node] = []
    services: list[Service] = []
    pods: list[Pod] = []
    daemonsets: list[DaemonSet] = []
    kube_system_uid: str | None = None
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise SnapshotFileError(f"cluster snapshot {source}: item {index} is not an object")
        projection = PROJECTIONS.get(str(item.get("kind", "")))
        if projection is None:
            continue  # other kinds (ConfigMaps, Events...) are irrelevant, not an error
        try:
            obj = projection.model_validate(item)
        except ValidationError as exc:
            raise SnapshotFileError(
                f"cluster snapshot {source}: item {index} ({object_label(item)}): "
                f"{describe_validation_error(exc)}"
            ) from exc
        if isinstance(obj, Node):
            nodes.append(obj)
        elif isinstance(obj, Service):
            services.append(obj)
        elif isinstance(obj, Pod):
            pods.append(obj)
        elif isinstance(obj, DaemonSet):
            daemonsets.append(obj)
        elif isinstance(obj, Namespace) and obj.metadata.name == "kube-system":
            kube_system_uid = obj.metadata.uid or None
    # A dump cannot prove it is complete (a kind left out, an old file): never remove on it.
    gap = f"cluster read from the snapshot file {source}, which may be partial or stale"
    return ClusterSnapshot(
        tuple(nodes),
        tuple(services),
        tuple(pods),
        kube_system_uid,
        (gap,),
        kube_proxy_daemonsets=tuple(daemonsets),
    )


def _load(text: str, source: str) -> Any:
    stripped = text.lstrip()
    if not stripped:
        raise SnapshotFileError(f"cluster snapshot {source}: file is empty; expected {EXPECTED}")
    try:
        if stripped.startswith("{"):
            return json.loads(text)
        return yaml.safe_load(text)  # `-o yaml` dumps work too
    except json.JSONDecodeError as exc:
        raise SnapshotFileError(
            f"cluster snapshot {source}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); expected {EXPECTED}"
        ) from exc
    except yaml.YAMLError as exc:
        raise SnapshotFileError(
            f"cluster snapshot {source}: neither JSON nor YAML ({exc}); expected {EXPECTED}"
        ) from exc


def _items(document: Any, source: str) -> list[Any]:
    if not isinstance(document, dict):
        raise SnapshotFileError(
            f"cluster snapshot {source}: top level is not an object; expected {EXPECTED}"
        )
    kind = str(document.get("kind", ""))
    if kind == "List" or (kind.endswith("List") and kind[:-4] in PROJECTIONS):
        items = document.get("items") or []
        if not isinstance(items, list):
            raise SnapshotFileError(f"cluster snapshot {source}: `items` is not a list")
        item_kind = kind[:-4] if kind != "List" else ""
        # A typed list (NodeList from the API) omits each item's kind.
        return [{"kind": item_kind, **i} if item_kind and isinstance(i, dict) else i for i in items]
    if kind in PROJECTIONS:
        return [document]
    raise SnapshotFileError(
        f"cluster snapshot {source}: got kind {kind or 'none'!r}; expected {EXPECTED}"
    )
