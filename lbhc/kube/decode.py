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


def describe_validation_error(exc: ValidationError) -> str:
    """First problem, as `field.path: message` (one clear line, not pydantic's essay)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "object"
    more = len(exc.errors()) - 1
    return f"{where}: {first['msg']}" + (f" (and {more} more)" if more > 0 else "")


def object_label(item: dict[str, Any]) -> str:
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return f"{item.get('kind', '?')} {name!r}" if name else str(item.get("kind", "object"))
