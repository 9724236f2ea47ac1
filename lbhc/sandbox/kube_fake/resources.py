"""The core/v1 resources the fake serves, with what discovery and field selectors need."""

from __future__ import annotations

from dataclasses import dataclass

# Field labels the real apiserver accepts per resource (pkg/apis/core/v1/conversion.go); any
# other label is a 400, never silently ignored.
_POD_FIELDS = (
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
# Booleans that select as "false" when absent, as Go's zero value does.
BOOL_FIELDS = frozenset({"spec.hostNetwork", "spec.unschedulable"})


@dataclass(frozen=True)
class Resource:
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...]
    field_labels: frozenset[str]
    categories: tuple[str, ...] = ()

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


RESOURCES: tuple[Resource, ...] = (
    Resource(
        kind="Namespace",
        plural="namespaces",
        singular="namespace",
        namespaced=False,
        short_names=("ns",),
        field_labels=frozenset({"metadata.name", "status.phase"}),
    ),
    Resource(
        kind="Node",
        plural="nodes",
        singular="node",
        namespaced=False,
        short_names=("no",),
        field_labels=frozenset({"metadata.name", "spec.unschedulable"}),
    ),
    Resource(
        kind="Pod",
        plural="pods",
        singular="pod",
        namespaced=True,
        short_names=("po",),
        field_labels=frozenset(_POD_FIELDS),
        categories=("all",),
    ),
    Resource(
        kind="Service",
        plural="services",
        singular="service",
        namespaced=True,
        short_names=("svc",),
        field_labels=frozenset({"metadata.name", "metadata.namespace"}),
        categories=("all",),
    ),
)
BY_KIND = {resource.kind: resource for resource in RESOURCES}
BY_PLURAL = {resource.plural: resource for resource in RESOURCES}


def resource_for_kind(kind: str) -> Resource:
    try:
        return BY_KIND[kind]
    except KeyError:
        raise ValueError(
            f"kind {kind!r} is not served; expected one of {sorted(BY_KIND)}"
        ) from None
