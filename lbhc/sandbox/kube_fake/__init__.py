"""A minimal, faithful, stateful fake kube-apiserver: core/v1 Nodes, Services, Pods,
Namespaces, ConfigMaps and Events (a read-only view), apps/v1 DaemonSets,
coordination.k8s.io/v1 Leases and events.k8s.io/v1 Events. Lists with selectors and
consistent paging, watches with bookmarks and 410 Gone, writes with optimistic concurrency,
merge/strategic/JSON patches, finalizers, Status errors, discovery for kubectl, fault
injection and a request journal.

    fake = KubeFake()
    fake.upsert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    with KubeFakeServer(fake) as server:
        server.write_kubeconfig(tmp / "kubeconfig")  # for kubectl or a kubernetes client

Every write bumps one global resourceVersion and keeps the revision, so lists are consistent
across pages and watches replay history.
"""

from .fake import KubeFake, Response
from .faults import Faults
from .journal import JournalEntry
from .listing import decode_continue, encode_continue
from .resources import RESOURCES, Resource
from .server import KubeFakeServer
from .status import ApiError
from .watch import WatchDropped

__all__ = [
    "RESOURCES",
    "ApiError",
    "Faults",
    "JournalEntry",
    "KubeFake",
    "KubeFakeServer",
    "Resource",
    "Response",
    "WatchDropped",
    "decode_continue",
    "encode_continue",
]
