"""A minimal, faithful, stateful fake kube-apiserver for core/v1 Nodes, Services, Pods and
Namespaces: GET and list with selectors, limit/continue paging, Status errors, discovery.

    fake = KubeFake()
    fake.upsert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    with KubeFakeServer(fake) as server:
        ...  # point a kubernetes client or kubectl at server.url

Every write bumps one global resourceVersion and keeps the revision, so lists are consistent
across pages and a watch can later replay history.
"""

from .fake import KubeFake, Response
from .faults import Faults
from .journal import JournalEntry
from .listing import decode_continue, encode_continue
from .resources import RESOURCES, Resource
from .server import KubeFakeServer
from .status import ApiError

__all__ = [
    "RESOURCES",
    "ApiError",
    "Faults",
    "JournalEntry",
    "KubeFake",
    "KubeFakeServer",
    "Resource",
    "Response",
    "decode_continue",
    "encode_continue",
]
