"""Raw Kubernetes JSON -> lbhc's projections, for API list pages and kubectl dumps alike."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lbhc.model.cluster import DaemonSet, Namespace, Node, Pod, Service


class ListMeta(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)
    continue_token: str = Field(default="", alias="continue")
    resource_version: str = Field(default="", alias="resourceVersion")


class ObjectList(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    item_type: ClassVar[Any] = None
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: tuple[Any, ...] = ()


class NodeList(ObjectList):
    item_type = Node
    items: tuple[Node, ...] = ()


class ServiceList(ObjectList):
    item_type = Service
    items: tuple[Service, ...] = ()


class PodList(ObjectList):
    item_type = Pod
    items: tuple[Pod, ...] = ()


class DaemonSetList(ObjectList):
    item_type = DaemonSet
    items: tuple[DaemonSet, ...] = ()


@dataclass(frozen=True)
class Undecodable:
    """An object the projections cannot read (no conforming API server sends one, but a
    webhook-less CRD-style write or a future field change could): named, never fatal."""

    key: str  # namespace/name, or name
    problem: str


def decode_page(model: type[ObjectList], raw: bytes | str) -> tuple[ObjectList, list[Undecodable]]:
    """A list page, fast (the whole page at once) when every item decodes; otherwise item by
    item, so one bad object costs only itself. A page that is not a list at all raises."""
    try:
        return model.model_validate_json(raw), []
    except ValidationError as whole:
        try:
            data = json.loads(raw)
        except ValueError:
            raise whole from None
        items = data.get("items") if isinstance(data, dict) else None
        if not isinstance(items, list) or model.item_type is None:
            raise
        good: list[Any] = []
        bad: list[Undecodable] = []
        for item in items:
            try:
                good.append(model.item_type.model_validate(item))
            except ValidationError as exc:
                bad.append(Undecodable(raw_object_key(item), describe_validation_error(exc)))
        meta = ListMeta.model_validate(data.get("metadata") or {})
        return model(metadata=meta, items=tuple(good)), bad


def raw_object_key(item: object) -> str:
    """`namespace/name` (or name) of a raw object, escaped and short, "?" when it has none."""
    metadata = item.get("metadata") if isinstance(item, dict) else None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        return "?"
    namespace = metadata.get("namespace")
    name = _shown(metadata["name"])
    return f"{_shown(namespace)}/{name}" if isinstance(namespace, str) and namespace else name


def _shown(text: str) -> str:
    """A name as is when it could be one (printable, at most 253 characters), else escaped
    and cut: it goes into log lines and gap reasons."""
    if text.isprintable() and len(text) <= 253:
        return text
    shown = repr(text)
    return shown if len(shown) <= _MAX_PART else shown[: _MAX_PART - 4] + "...'"


Projection = type[Node] | type[Service] | type[Pod] | type[Namespace] | type[DaemonSet]
PROJECTIONS: dict[str, Projection] = {
    "Node": Node,
    "Service": Service,
    "Pod": Pod,
    "Namespace": Namespace,
    "DaemonSet": DaemonSet,
}


_MAX_PART = 60  # a hostile label key can be kilobytes long


def describe_validation_error(exc: ValidationError) -> str:
    """First problem, as `field.path: message` (one clear line, not pydantic's essay). Path
    parts come from the input (label keys): shown escaped and short, never as raw text that
    could break the line."""
    errors = exc.errors()
    if not errors:
        return "invalid"
    first = errors[0]
    where = ".".join(_part(part) for part in first["loc"]) or "object"
    more = len(errors) - 1
    message = " ".join(str(first["msg"]).split())
    return f"{where}: {message}" + (f" (and {more} more)" if more > 0 else "")


def _part(part: object) -> str:
    text = str(part)
    if text.isprintable() and len(text) <= _MAX_PART and "." not in text:
        return text
    shown = repr(text)
    return shown if len(shown) <= _MAX_PART else shown[: _MAX_PART - 4] + "...'"


def object_label(item: dict[str, Any]) -> str:
    """`Kind 'name'` for messages, escaped and short whatever the object holds."""
    kind = _part(item.get("kind", "") or "object")
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not name:
        return kind
    shown = repr(str(name))
    return (
        f"{kind} {shown if len(shown) <= _MAX_PART else shown[: _MAX_PART - 4] + '...' + shown[0]}"
    )
