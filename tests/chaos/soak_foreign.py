"""Resources in the soak's project that are not lbhc's, each a temptation: a check and a
firewall of another team, another lbhc cluster's check and firewall (a valid ownership mark
with another cluster id) on a pool of theirs, and a cloud-provider-style pool of a Service
this cluster does not have, with no check (a backfill target, if lbhc misread whose it is).
lbhc must never write to any of them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lbhc.model.cloud import http_health_check_url, network_url
from lbhc.planner.shared import ownership_description
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.compute_fake.journal import JournalEntry
from tests.waiting import wait_for

OTHER_CLUSTER = "0badc0de"
TEAM_CHECK, TEAM_FIREWALL, TEAM_POOL = "team-payments-hc", "team-payments-fw", "team-payments-pool"
OTHER_LBHC = f"k8s-l4-healthcheck-{OTHER_CLUSTER}"  # its check and its firewall
OTHER_LBHC_POOL = "a" + "0" * 31  # a pool of the other cluster, carrying its check
GHOST_POOL = "a" + "f" * 31  # a Service elsewhere/ghost's load balancer: no Service here

Resources = dict[str, dict[str, dict[str, Any]]]  # collection -> name -> resource


@dataclass
class Foreign:
    project: str
    region: str
    before: Resources = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        return {name for resources in self.before.values() for name in resources}

    def seed(self, fake: ComputeFake, instances: list[str]) -> None:
        project, region = self.project, self.region
        fake.add_http_health_check(
            project, TEAM_CHECK, description="team payments", port=8080, requestPath="/ready"
        )
        fake.add_http_health_check(
            project,
            OTHER_LBHC,
            description=ownership_description(OTHER_CLUSTER),
            port=10256,
            requestPath="/healthz",
        )
        fake.add_target_pool(
            project,
            region,
            TEAM_POOL,
            instances=instances,
            health_checks=[http_health_check_url(project, TEAM_CHECK)],
        )
        fake.add_target_pool(
            project,
            region,
            OTHER_LBHC_POOL,
            description=_service_description("their/web"),
            instances=instances,
            health_checks=[http_health_check_url(project, OTHER_LBHC)],
        )
        ghost = fake.add_target_pool(
            project,
            region,
            GHOST_POOL,
            description=_service_description("elsewhere/ghost"),
            instances=instances,
        )
        fake.add_forwarding_rule(
            project,
            region,
            GHOST_POOL,
            target=ghost["selfLink"],
            description=_service_description("elsewhere/ghost"),
            ip_address="198.51.100.7",
        )
        self._insert_firewall(fake, TEAM_FIREWALL, "team payments", "8080", "team-payments")
        self._insert_firewall(
            fake, OTHER_LBHC, ownership_description(OTHER_CLUSTER), "10256", "gke-their-node"
        )
        self.before = self.read(fake)

    def _insert_firewall(
        self, fake: ComputeFake, name: str, description: str, port: str, tag: str
    ) -> None:
        body = {
            "name": name,
            "description": description,
            "network": network_url(self.project, "default"),
            "direction": "INGRESS",
            "priority": 1000,
            "allowed": [{"IPProtocol": "tcp", "ports": [port]}],
            "sourceRanges": ["35.191.0.0/16"],
            "targetTags": [tag],
        }
        status, _, answer = fake.handle(
            "POST", f"/compute/v1/projects/{self.project}/global/firewalls", body=json.dumps(body)
        )
        assert status == 200, answer
        wait_for(lambda: name in fake.firewalls(self.project), what=f"firewall {name} seeded")

    def read(self, fake: ComputeFake) -> Resources:
        project, region = self.project, self.region
        return {
            "httpHealthChecks": _pick(fake.http_health_checks(project), TEAM_CHECK, OTHER_LBHC),
            "firewalls": _pick(fake.firewalls(project), TEAM_FIREWALL, OTHER_LBHC),
            "targetPools": _pick(
                fake.target_pools(project, region), TEAM_POOL, OTHER_LBHC_POOL, GHOST_POOL
            ),
            "forwardingRules": _pick(fake.forwarding_rules(project, region), GHOST_POOL),
        }

    def changed(self, fake: ComputeFake) -> list[str]:
        """Foreign resources that differ from what was seeded, or are gone."""
        now = self.read(fake)
        return sorted(
            f"{collection}/{name}"
            for collection, resources in self.before.items()
            for name, resource in resources.items()
            if now[collection].get(name) != resource
        )

    def touched(self, entries: list[JournalEntry]) -> list[JournalEntry]:
        """Mutating requests (any client, answered or not) naming a foreign resource."""
        names = self.names
        return [e for e in entries if e.mutating and _names_in(e) & names]


def _names_in(entry: JournalEntry) -> set[str]:
    """Every path segment, and the last segment of every string in the body (references)."""
    named = set(entry.path.split("/"))
    if entry.body:
        named.update(text.rsplit("/", 1)[-1] for text in _strings(entry.body))
    return named


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _pick(resources: dict[str, dict[str, Any]], *names: str) -> dict[str, dict[str, Any]]:
    return {name: resources[name] for name in names if name in resources}


def _service_description(key: str) -> str:
    return json.dumps({"kubernetes.io/service-name": key}, separators=(",", ":"))
