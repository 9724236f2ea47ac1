"""Raw Kubernetes JSON -> lbhc's projections, for API list pages and kubectl dumps alike."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lbhc.model.cluster import DaemonSet, Namespace, Node, Pod, Service


class ListMeta(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)
    continue_token: str = Field(default="", alias="continue")
    resource_version: str = Field(default="", alias="resourceVersion")


class ObjectList(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: tuple[Any, ...] = ()


class NodeList(ObjectList):
    items: tuple[Node, ...] = ()


class ServiceList(ObjectList):
    items: tuple[Service, ...] = ()


class PodList(ObjectList):
    items: tuple[Pod, ...] = ()


class DaemonSetList(ObjectList):
    items: tuple[DaemonSet, ...] = ()


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
