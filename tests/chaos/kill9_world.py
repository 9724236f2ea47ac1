"""Puts a kill9 Scenario into the two fakes: Nodes and Services in the kube-apiserver fake,
load balancers (pools and forwarding rules as the cloud provider makes them), our shared
pair as an earlier lbhc left it, and in every trial the foreign resources lbhc must not touch.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from lbhc.model.cloud import http_health_check_url
from lbhc.planner.names import cluster_id_from_uid, shared_resource_name, target_pool_name
from lbhc.planner.shared import ownership_description
from lbhc.sandbox.compute_fake import ComputeFake
from lbhc.sandbox.kube_fake import KubeFake
from tests.builders import kube as kube_builders
from tests.chaos.kill9_scenario import Scenario
from tests.controller.harness import KUBE_SYSTEM_UID, NAME, PROJECT, node_obj
from tests.worlds import add_load_balancer, seed_cluster

NODES = ("node-0", "node-1", "node-2")
NODE_TAG = "gke-node"
HEALTH_CHECKER_RANGES = ["209.85.152.0/22", "209.85.204.0/22", "35.191.0.0/16"]  # README
NETWORK_URL = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/default"
# What lbhc wants, per the README's table: the spec the trials check the cloud against.
DESIRED_CHECK = {
    "port": 10256,
    "requestPath": "/healthz",
    "checkIntervalSec": 8,
    "timeoutSec": 1,
    "healthyThreshold": 1,
    "unhealthyThreshold": 3,
}
DESIRED_FIREWALL = {
    "network": NETWORK_URL,
    "direction": "INGRESS",
    "priority": 1000,
    "allowed": [{"IPProtocol": "tcp", "ports": ["10256"]}],
    "sourceRanges": HEALTH_CHECKER_RANGES,
    "targetTags": [NODE_TAG],
}
_CHECK_DRIFTS: dict[str, dict[str, Any]] = {
    "requestPath": {"requestPath": "/"},
    "port": {"port": 10249},
    "checkIntervalSec": {"checkIntervalSec": 2},
}
_FIREWALL_DRIFTS: dict[str, dict[str, Any]] = {
    "destinationRanges": {"destinationRanges": ["203.0.113.10/32"]},  # pinned, as upstream's
    "sourceRanges": {"sourceRanges": [*HEALTH_CHECKER_RANGES, "0.0.0.0/0"]},
    "allowed": {"allowed": [{"IPProtocol": "tcp", "ports": ["10256", "22"]}]},
}
CLUSTER_ID = cluster_id_from_uid(KUBE_SYSTEM_UID)
OTHER_CLUSTER_ID = "0a1b2c3d"  # another lbhc-managed cluster in the same project
OTHER_LBHC = shared_resource_name("k8s-l4-healthcheck", OTHER_CLUSTER_ID)
UPSTREAM_CHECK = "k8s-5e6f7a8b9c0d1e2f-node"  # upstream's shared check of this cluster
OTHER_UPSTREAM_CHECK = "k8s-1a2b3c4d5e6f7a8b-node"  # ... and of another cluster


@dataclass
class Seeded:
    """Pool names by role, and which resources must end exactly as they started."""

    pools: dict[str, list[str]] = field(default_factory=dict)
    foreign_checks: list[str] = field(default_factory=list)
    foreign_firewalls: list[str] = field(default_factory=list)

    def role(self, role: str) -> list[str]:
        return self.pools.get(role, [])

    def add(self, role: str, pool: str) -> None:
        self.pools.setdefault(role, []).append(pool)


def seed_world(scenario: Scenario, kube: KubeFake, compute: ComputeFake, seed: int) -> Seeded:
    rng = random.Random(seed * 7919 + 1)
    seeded = Seeded()
    seed_cluster(
        kube,
        kube_system_uid=KUBE_SYSTEM_UID,
        namespaces=("lbhc-system",),
        nodes=[node_obj(node) for node in NODES],
    )
    compute.add_network(PROJECT, "default")
    _seed_foreign(compute, seeded)
    _seed_ours(scenario, compute)
    ours = (NAME,)
    groups: list[tuple[str, int, str, tuple[str, ...]]] = [
        ("attach", scenario.attach, "Cluster", ()),
        ("attached", scenario.attached, "Cluster", ours),
        ("foreign_checked", scenario.foreign_checked, "Cluster", (UPSTREAM_CHECK,)),
        ("to_local", scenario.to_local, "Local", ours),
        ("local_own", scenario.local_own, "Local", ()),
    ]
    for role, count, policy, checks in groups:
        for i in range(count):
            name = f"{role.replace('_', '-')}-{i}"
            service = kube.upsert(kube_builders.service(name, namespace="default", policy=policy))
            pool = target_pool_name(service["metadata"]["uid"])
            carried = checks
            if role == "local_own":  # its per-service check, named like the LB
                compute.add_http_health_check(PROJECT, pool, port=31000 + i, requestPath="/")
                seeded.foreign_checks.append(pool)
                carried = (pool,)
            add_load_balancer(compute, pool, f"default/{name}", nodes=NODES, health_checks=carried)
            seeded.add(role, pool)
    _seed_strangers(scenario, compute, seeded, rng)
    return seeded


def insert_firewall(compute: ComputeFake, name: str, fields: dict[str, Any]) -> None:
    """Through the API (the fake has no firewall seeder); call before operations take time."""
    body = json.dumps({"name": name, **fields})
    status, _, answer = compute.handle(
        "POST", f"/compute/v1/projects/{PROJECT}/global/firewalls", body=body
    )
    assert status == 200, answer


def _seed_ours(scenario: Scenario, compute: ComputeFake) -> None:
    description = ownership_description(CLUSTER_ID)
    if scenario.check != "absent":
        drift = _CHECK_DRIFTS[scenario.check_drift] if scenario.check == "drifted" else {}
        compute.add_http_health_check(
            PROJECT, NAME, description=description, **{**DESIRED_CHECK, **drift}
        )
    if scenario.firewall != "absent":
        drift = _FIREWALL_DRIFTS[scenario.firewall_drift] if scenario.firewall == "drifted" else {}
        insert_firewall(compute, NAME, {"description": description, **DESIRED_FIREWALL, **drift})


def _seed_foreign(compute: ComputeFake, seeded: Seeded) -> None:
    """Upstream's checks and firewalls, and another lbhc cluster's pair in the same project."""
    other = ownership_description(OTHER_CLUSTER_ID)
    for check, description in (
        (UPSTREAM_CHECK, ""),
        (OTHER_UPSTREAM_CHECK, ""),
        (OTHER_LBHC, other),
    ):
        compute.add_http_health_check(PROJECT, check, description=description, port=10256)
        seeded.foreign_checks.append(check)
    upstream_rule = {**DESIRED_FIREWALL, "targetTags": ["other-node"]}
    for firewall, fields in (
        ("k8s-1a2b3c4d5e6f7a8b-node-http-hc", upstream_rule),
        (OTHER_LBHC, {**upstream_rule, "description": other}),
    ):
        insert_firewall(compute, firewall, fields)
        seeded.foreign_firewalls.append(firewall)


def _seed_strangers(
    scenario: Scenario, compute: ComputeFake, seeded: Seeded, rng: random.Random
) -> None:
    """Pools no Service of this cluster claims: another cluster's (upstream-checked and
    lbhc-checked) and, when our check exists, an orphan carrying ours."""
    strangers = [
        ("other_cluster", "other/web", (OTHER_UPSTREAM_CHECK,)),
        ("other_lbhc", "other/api", (OTHER_LBHC,)),
    ]
    if scenario.orphan:
        # A deleted Service's LB the cloud provider has not removed yet, or another cluster
        # sharing our id: it carries our check, and lbhc must leave it alone.
        strangers.append(("orphan", "default/gone", (NAME,)))
    for role, key, checks in strangers:
        pool = target_pool_name(str(uuid.UUID(int=rng.getrandbits(128))))
        add_load_balancer(compute, pool, key, nodes=NODES, health_checks=checks)
        seeded.add(role, pool)


def our_check_url() -> str:
    return http_health_check_url(PROJECT, NAME)
