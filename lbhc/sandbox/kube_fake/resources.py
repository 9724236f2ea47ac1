"""The resources the fake serves, with what routing, discovery, selectors and writes need."""

from __future__ import annotations

from dataclasses import dataclass

# Every resource but the core/v1 Event view serves these; deletecollection is not served.
WRITE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")
_META = frozenset({"metadata.name", "metadata.namespace"})
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
_REFERENCE = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_CORE_EVENT_FIELDS = frozenset(
    {*_META, "reason", "reportingComponent", "source", "type"}
    | {f"involvedObject.{part}" for part in _REFERENCE}
)
_EVENT_FIELDS = frozenset(
    {*_META, "reason", "reportingController", "type"} | {f"regarding.{p}" for p in _REFERENCE}
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
    group: str = ""
    version: str = "v1"
    # A view serves objects stored by another resource of the same kind, converted (the
    # core/v1 Event view of events.k8s.io/v1 Events, as the apiserver's shared storage does).
    view: bool = False
    # With a status subresource, updates through the main resource keep the stored status.
    status_subresource: bool = False
    clear_status_on_create: bool = False
    create_on_update: bool = False  # PUT of a missing object creates it (Leases, Events)
    name_rule: str = "subdomain"  # "subdomain", "label" (RFC 1123) or "dns1035"
    field_paths: tuple[tuple[str, str], ...] = ()  # selector label -> object path, if not same

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def verbs(self) -> tuple[str, ...]:
        return READ_VERBS if self.view else WRITE_VERBS

    def field_path(self, label: str) -> str:
        return dict(self.field_paths).get(label, label)


RESOURCES: tuple[Resource, ...] = (
    Resource(
        kind="Namespace",
        plural="namespaces",
        singular="namespace",
        namespaced=False,
        short_names=("ns",),
        field_labels=frozenset({"metadata.name", "status.phase"}),
        status_subresource=True,
        name_rule="label",
    ),
    Resource(
        kind="Node",
        plural="nodes",
        singular="node",
        namespaced=False,
        short_names=("no",),
        field_labels=frozenset({"metadata.name", "spec.unschedulable"}),
        status_subresource=True,  # a Node's status may be set on create: the kubelet does
    ),
    Resource(
        kind="Pod",
        plural="pods",
        singular="pod",
        namespaced=True,
        short_names=("po",),
        field_labels=frozenset(_POD_FIELDS),
        categories=("all",),
        status_subresource=True,
        clear_status_on_create=True,
    ),
    Resource(
        kind="Service",
        plural="services",
        singular="service",
        namespaced=True,
        short_names=("svc",),
        field_labels=_META,
        categories=("all",),
        status_subresource=True,
        clear_status_on_create=True,
        name_rule="dns1035",
    ),
    Resource(
        # kube-system/ingress-uid holds the GCE cloud provider's cluster uid (gce_clusterid.go).
        kind="ConfigMap",
        plural="configmaps",
        singular="configmap",
        namespaced=True,
        short_names=("cm",),
        field_labels=_META,
    ),
    Resource(
        kind="Event",
        plural="events",
        singular="event",
        namespaced=True,
        short_names=("ev",),
        field_labels=_CORE_EVENT_FIELDS,
        view=True,
        field_paths=(("source", "source.component"),),
    ),
    Resource(
        kind="DaemonSet",
        plural="daemonsets",
        singular="daemonset",
        namespaced=True,
        short_names=("ds",),
        field_labels=_META,
        categories=("all",),
        group="apps",
        status_subresource=True,
        clear_status_on_create=True,
    ),
    Resource(
        kind="Lease",
        plural="leases",
        singular="lease",
        namespaced=True,
        short_names=(),
        field_labels=_META,
        group="coordination.k8s.io",
        create_on_update=True,
    ),
    Resource(
        kind="Event",
        plural="events",
        singular="event",
        namespaced=True,
        short_names=("ev",),
        field_labels=_EVENT_FIELDS,
        group="events.k8s.io",
        create_on_update=True,
    ),
)
# Where each kind is stored: the resource that is not a view.
BY_KIND = {resource.kind: resource for resource in RESOURCES if not resource.view}
BY_PATH = {(resource.api_version, resource.plural): resource for resource in RESOURCES}
GROUP_VERSIONS: tuple[str, ...] = tuple(dict.fromkeys(r.api_version for r in RESOURCES))


def resource_for_kind(kind: str) -> Resource:
    """The stored resource of `kind` ("Event" is the events.k8s.io/v1 one)."""
    try:
        return BY_KIND[kind]
    except KeyError:
        raise ValueError(
            f"kind {kind!r} is not served; expected one of {sorted(BY_KIND)}"
        ) from None


def resource_for(api_version: str, kind: str) -> Resource:
    """The resource serving `kind` in `api_version` (a view for core/v1 Events)."""
    for resource in RESOURCES:
        if (resource.api_version, resource.kind) == (api_version, kind):
            return resource
    raise ValueError(
        f"{api_version}/{kind} is not served; expected one of "
        f"{sorted(f'{r.api_version}/{r.kind}' for r in RESOURCES)}"
    )
