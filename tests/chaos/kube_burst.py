"""A burst of Service events (10,000 in the full run): Services created with their
load balancers, then relabelled and flipped between Cluster and Local at random, as fast as
the API takes them. What the end state must be is read back from the API afterwards."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from lbhc.model.cluster import Service
from lbhc.planner.names import target_pool_name
from lbhc.sandbox.cloud_provider import provision_load_balancers
from tests.builders import kube as kube_builders
from tests.controller.harness import PROJECT, REGION, URL, World
from tests.worlds import nodes_in

NAMESPACE = "burst"


@dataclass
class Burst:
    events: int = 0
    pools: dict[str, str] = field(default_factory=dict)  # Service name -> its pool
    ever_local: set[str] = field(default_factory=set)  # pools whose Service was ever Local
    started: float = 0.0
    ended: float = 0.0


def run_burst(w: World, services: int, events: int, rng: random.Random) -> Burst:
    """`services` new LoadBalancer Services (each pool made just before its Service, as if
    the cloud provider were quick), then updates until `events` writes in all: two in
    three a relabel (nothing lbhc reads), one in three a policy flip."""
    if events < services:
        raise ValueError("a burst needs at least one event per Service")
    nodes = nodes_in(w.kube)
    burst = Burst(started=time.monotonic())
    policies: dict[str, str] = {}
    for i in range(services):
        name = f"burst-{i}"
        policy = "Local" if rng.random() < 0.2 else "Cluster"
        uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        obj = kube_builders.service(name, namespace=NAMESPACE, policy=policy, uid=uid)
        provision_load_balancers(w.compute, PROJECT, REGION, [Service.model_validate(obj)], nodes)
        w.kube.upsert(obj)
        burst.pools[name] = target_pool_name(obj["metadata"]["uid"])
        policies[name] = policy
        if policy == "Local":
            burst.ever_local.add(burst.pools[name])
    names = sorted(policies)
    for revision in range(events - services):
        name = rng.choice(names)
        patch: dict[str, Any]
        if rng.random() < 1 / 3:
            policies[name] = "Local" if policies[name] == "Cluster" else "Cluster"
            patch = {"spec": {"externalTrafficPolicy": policies[name]}}
            if policies[name] == "Local":
                burst.ever_local.add(burst.pools[name])
        else:
            patch = {"metadata": {"labels": {"revision": str(revision)}}}
        w.kube.patch("Service", NAMESPACE, name, patch)
    burst.events = events
    burst.ended = time.monotonic()
    return burst


def unmet(w: World, burst: Burst) -> list[str]:
    """Burst Services whose pool does not (yet) match the policy the API holds now."""
    pools = w.compute.target_pools(PROJECT, REGION)
    wrong: list[str] = []
    for obj in w.kube.objects("Service"):
        name = obj["metadata"]["name"]
        if obj["metadata"].get("namespace") != NAMESPACE:
            continue
        attached = pools[burst.pools[name]].get("healthChecks", []) == [URL]
        if attached != (obj["spec"]["externalTrafficPolicy"] == "Cluster"):
            wrong.append(name)
    return wrong
