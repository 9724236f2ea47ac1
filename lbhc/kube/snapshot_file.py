"""`--cluster-snapshot FILE`: plan offline from a `kubectl get ... -A -o json` dump."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from lbhc.errors import SetupError
from lbhc.kube.client import INGRESS_UID_NAME, INGRESS_UID_NAMESPACE, cloud_provider_cluster_id
from lbhc.kube.decode import PROJECTIONS, describe_validation_error, object_label
from lbhc.model.cluster import (
    ClusterSnapshot,
    ConfigMap,
    DaemonSet,
    Namespace,
    Node,
    Pod,
    Service,
)
from lbhc.planner.replacement import REPLACEMENT_NAMESPACE, first_replacement
from lbhc.textfile import read_utf8

EXPECTED = (
    "a v1 List as printed by `kubectl get nodes,services,pods,daemonsets,namespaces -A -o json`"
)


class SnapshotFileError(SetupError):
    """The file named by --cluster-snapshot cannot be a view of the cluster: fixed by
    another file (exit 2, as any setting)."""


def load_cluster_snapshot(path: Path) -> ClusterSnapshot:
    text = read_utf8(path, f"cluster snapshot {path}", EXPECTED, SnapshotFileError)
    return parse_cluster_snapshot(text, str(path))


def parse_cluster_snapshot(text: str, source: str = "<input>") -> ClusterSnapshot:
    document = _load(text, source)
    items = _items(document, source)
    _check_relevant(items, source)
    nodes: list[Node] = []
    services: list[Service] = []
    pods: list[Pod] = []
    daemonsets: list[DaemonSet] = []
    kube_system_uid: str | None = None
    cloud_provider_uid: str | None = None
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise SnapshotFileError(f"cluster snapshot {source}: item {index} is not an object")
        kind = str(item.get("kind", ""))
        if kind == "ConfigMap":
            cloud_provider_uid = _ingress_uid(item) or cloud_provider_uid
            continue
        projection = PROJECTIONS.get(kind)
        if projection is None:
            continue  # other kinds (Events, other ConfigMaps...) are irrelevant, not an error
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
    _check_needed_kinds(items, nodes, services, source)
    # A dump cannot prove it is complete (a kind left out, an old file): never remove on it.
    gap = f"cluster read from the snapshot file {source}, which may be partial or stale"
    return ClusterSnapshot(
        tuple(nodes),
        tuple(services),
        tuple(pods),
        kube_system_uid,
        (gap,),
        kube_proxy_daemonsets=tuple(daemonsets),
        cloud_provider_uid=cloud_provider_uid,
        kube_proxy_replacement=_replacement(daemonsets),
    )


def _replacement(daemonsets: list[DaemonSet]) -> str | None:
    """As the live read: the first known replacement DaemonSet in kube-system."""
    present = {
        ds.metadata.name for ds in daemonsets if ds.metadata.namespace == REPLACEMENT_NAMESPACE
    }
    return first_replacement(present.__contains__)


def _ingress_uid(item: dict[str, Any]) -> str | None:
    """ConfigMap kube-system/ingress-uid, if that is what this is and it is well formed."""
    try:
        config_map = ConfigMap.model_validate(item)
    except ValidationError:
        return None
    meta = config_map.metadata
    if (meta.namespace, meta.name) != (INGRESS_UID_NAMESPACE, INGRESS_UID_NAME):
        return None
    return cloud_provider_cluster_id(config_map.data)


def _load(text: str, source: str) -> Any:
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors add
    if not text.strip():
        raise SnapshotFileError(f"cluster snapshot {source}: file is empty; expected {EXPECTED}")
    try:
        if text.lstrip().startswith("{"):
            return json.loads(text)
        return yaml.safe_load(text)  # `-o yaml` dumps work too
    except json.JSONDecodeError as exc:
        raise SnapshotFileError(
            f"cluster snapshot {source}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); expected {EXPECTED}"
        ) from exc
    except yaml.YAMLError as exc:
        raise SnapshotFileError(
            f"cluster snapshot {source}: neither JSON nor YAML ({_yaml_problem(exc)}); "
            f"expected {EXPECTED}"
        ) from exc
    except RecursionError as exc:  # thousands of nested brackets: no dump looks like that
        raise SnapshotFileError(
            f"cluster snapshot {source}: nested too deeply to be a dump; expected {EXPECTED}"
        ) from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's multi-line report as one line: where, then what."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{' '.join(str(problem).split())}"


def _check_relevant(items: list[Any], source: str) -> None:
    """A dump of other kinds (`kubectl get configmaps -o json`) is a wrong file, not an empty
    cluster: planning on it would only mislead."""
    if not items or not all(isinstance(i, dict) for i in items):
        return  # nothing to say, or the item loop names the odd one
    kinds = {str(i.get("kind", "")) for i in items}
    if not kinds & PROJECTIONS.keys():
        found = ", ".join(sorted(k or "no kind" for k in kinds)[:3])
        raise SnapshotFileError(
            f"cluster snapshot {source}: holds {len(items)} item(s) but no Node, Service, Pod, "
            f"DaemonSet or Namespace (found {found}); expected {EXPECTED}"
        )


def _check_needed_kinds(
    items: list[Any], nodes: list[Node], services: list[Service], source: str
) -> None:
    """Every cluster has Nodes and at least the `kubernetes` Service; a dump without either
    left a kind out, and planning on it misleads: without Nodes nothing is known of their
    kube-proxy, without Services every pool looks like another cluster's."""
    missing = [kind for kind, found in (("Node", nodes), ("Service", services)) if not found]
    if not missing:
        return
    counts: dict[str, int] = {}
    for item in items:
        kind = str(item.get("kind", "")) or "no kind"
        counts[kind] = counts.get(kind, 0) + 1
    found = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "nothing"
    raise SnapshotFileError(
        f"cluster snapshot {source}: no {' and no '.join(missing)} in it (found {found}); "
        f"lbhc needs the cluster's Nodes and Services: expected {EXPECTED}"
    )


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
