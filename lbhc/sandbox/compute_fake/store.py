"""Thread-safe state of the fake: resources, reservations, operations, request ids, journal.

One re-entrant lock guards everything; `cond` (built on it) lets `wait` block without holding it.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .faults import Faults
from .ids import IdSource, Timestamps
from .journal import JournalEntry
from .operations import OpRecord

# Regions the aggregated list always reports (with a NO_RESULTS_ON_PAGE warning when empty),
# as the real API reports every region of the project.
DEFAULT_REGIONS = ("asia-east1", "europe-west1", "us-central1", "us-east1", "us-west1")

# Every Compute Engine region, as https://cloud.google.com/compute/docs/regions-zones lists
# them (and `gcloud compute regions list` prints): a request naming another is refused, as the
# real API refuses it.
GCE_REGIONS = frozenset(
    {
        "africa-south1",
        "asia-east1",
        "asia-east2",
        "asia-northeast1",
        "asia-northeast2",
        "asia-northeast3",
        "asia-south1",
        "asia-south2",
        "asia-southeast1",
        "asia-southeast2",
        "australia-southeast1",
        "australia-southeast2",
        "europe-central2",
        "europe-north1",
        "europe-north2",
        "europe-southwest1",
        "europe-west1",
        "europe-west2",
        "europe-west3",
        "europe-west4",
        "europe-west6",
        "europe-west8",
        "europe-west9",
        "europe-west10",
        "europe-west12",
        "me-central1",
        "me-central2",
        "me-west1",
        "northamerica-northeast1",
        "northamerica-northeast2",
        "northamerica-south1",
        "southamerica-east1",
        "southamerica-west1",
        "us-central1",
        "us-east1",
        "us-east4",
        "us-east5",
        "us-south1",
        "us-west1",
        "us-west2",
        "us-west3",
        "us-west4",
    }
)

# The zones of DEFAULT_REGIONS, as `gcloud compute zones list` prints them: the zonal aggregated
# lists always report these (with a NO_RESULTS_ON_PAGE warning when empty), as they do regions.
DEFAULT_ZONES = (
    "asia-east1-a",
    "asia-east1-b",
    "asia-east1-c",
    "europe-west1-b",
    "europe-west1-c",
    "europe-west1-d",
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-central1-f",
    "us-east1-b",
    "us-east1-c",
    "us-east1-d",
    "us-west1-a",
    "us-west1-b",
    "us-west1-c",
)
_ZONE = re.compile(r"(?P<region>[a-z0-9-]+)-[a-z]")


def zone_region(zone: str) -> str | None:
    """The region of a zone GCE could have (a GCE region, a dash, one letter), else None. The
    letters are not checked against GCE's list: each region has its own few, and they change."""
    found = _ZONE.fullmatch(zone)
    region = found["region"] if found else None
    return region if region in GCE_REGIONS else None


# health_source(load balancer resource, instance URL, forwarding rule IP or None) -> state, or
# None: fall back. The resource is the target pool (kind compute#targetPool) or, for
# regionBackendServices.getHealth, the backend service (kind compute#backendService); either
# way its `healthChecks[0]` names the check and its `selfLink` the load balancer.
HealthSource = Callable[[dict[str, Any], str, str | None], str | None]

BucketKey = tuple[str, str, str]  # (collection, project, scope)


class Store:
    def __init__(
        self,
        *,
        clock: Callable[[], float],
        wall_now: float,
        operation_latency: float,
        wait_timeout: float,
        faults: Faults,
    ) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.clock = clock
        self.operation_latency = operation_latency
        self.wait_timeout = wait_timeout
        self.faults = faults
        self.ids = IdSource()
        self.times = Timestamps(clock, wall_now)
        self.in_use_delete_mode = "http"
        self.health_source: HealthSource | None = None
        self.instance_health: dict[str, str] = {}
        # Firewall policies in effect per (project, network name), in evaluation order, as
        # networks.getEffectiveFirewalls lists them (ComputeFake.add_firewall_policy).
        self.firewall_policies: dict[tuple[str, str], list[dict[str, Any]]] = {}
        # What the prober assumes of a pool instance that was never seeded (add_instance).
        self.default_instance_tags: tuple[str, ...] = ()
        self.default_instance_service_accounts: tuple[str, ...] = ()
        self.regions: set[str] = set(DEFAULT_REGIONS)
        self.zones: set[str] = set(DEFAULT_ZONES)
        # The projects that exist: every one seeded or named (ComputeFake.add_project). While
        # none is, the fake answers for any project, as tests of one resource expect.
        self.projects: set[str] = set()
        self.reserved: set[tuple[str, str, str, str]] = set()
        # The members of each instance group ({"instance": URL}) and network endpoint group
        # (NetworkEndpoint dicts), by the group's id: no field of the group resource holds
        # them, and an id is never reused, so a group made again under a name starts empty.
        self.members: dict[str, list[dict[str, Any]]] = {}
        self.operations: dict[tuple[str, str, str], OpRecord] = {}
        self.pending: list[OpRecord] = []
        self.request_ids: dict[tuple[str, str], OpRecord] = {}
        self.journal: list[JournalEntry] = []
        self.waiters = 0  # `wait` requests currently blocked
        self._buckets: dict[BucketKey, dict[str, dict[str, Any]]] = {}

    def bucket(self, collection: str, project: str, scope: str) -> dict[str, dict[str, Any]]:
        """The live name -> resource map of one collection in one scope (created on demand)."""
        return self._buckets.setdefault((collection, project, scope), {})

    def get(self, collection: str, project: str, scope: str, name: str) -> dict[str, Any] | None:
        return self._buckets.get((collection, project, scope), {}).get(name)

    def items(self, collection: str, project: str, scope: str) -> list[dict[str, Any]]:
        return list(self._buckets.get((collection, project, scope), {}).values())

    def taken(self, collection: str, project: str, scope: str, name: str) -> bool:
        """True if the name exists or is reserved by a pending insert."""
        if self.get(collection, project, scope, name) is not None:
            return True
        return (collection, project, scope, name) in self.reserved

    def scoped(self, collection: str, project: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(scope, resource) for every resource of a collection in a project, any scope."""
        for (coll, proj, scope), items in sorted(self._buckets.items()):
            if coll == collection and proj == project:
                for resource in items.values():
                    yield scope, resource

    def snapshot(self, collection: str, project: str, scope: str) -> dict[str, dict[str, Any]]:
        return copy.deepcopy(self._buckets.get((collection, project, scope), {}))
